"""The system-prompt text that teaches a model its tools, in the format it will write."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..execution.tooluse import render_call
from ..parsing import ToolFormat, UnrepresentableCall
from .arguments import ArgumentError
from .spec import Example, ToolSpec

if TYPE_CHECKING:
    from .registry import Toolchain

PREAMBLE = {
    ToolFormat.MARKDOWN: (
        "You can use tools by writing a fenced code block whose language tag names the tool, "
        "followed by its arguments, e.g. ```save path/to/file.py. The block runs once it is "
        "closed, and its result comes back to you as a system message. Blocks without a tool "
        "name are just code. Use a longer fence (````) when the content itself holds fences."
    ),
    ToolFormat.XML: (
        "You can use tools by writing <tool-use><TOOL args=\"ARGS\">CONTENT</TOOL></tool-use>, "
        "or <function_calls><invoke name=\"TOOL\"><parameter name=\"NAME\">VALUE</parameter>"
        "</invoke></function_calls>. Content is taken as written; wrap it in <![CDATA[...]]> if "
        "it contains the closing tag. Results come back to you as system messages."
    ),
    ToolFormat.TOOL: (
        "You can use tools through function calling, or by writing a line "
        "@TOOL(CALL_ID): {JSON ARGUMENTS}. Results come back to you tagged with the call id."
    ),
}


def render_example(spec: ToolSpec, example: Example, fmt: ToolFormat,
                   toolchain: Toolchain | None = None) -> str:
    """One example turn as the model would see it in ``fmt``."""
    if example.kind == "user":
        return f"User: {example.text}"
    if example.kind == "result":
        return f"System: {example.text}"
    if example.kind == "assistant":
        return f"Assistant: {example.text}"
    target = spec
    if example.tool is not None and toolchain is not None:
        target = toolchain.get(example.tool) or spec
    kwargs = target.bind("", "", example.kwargs) if target.parameters else {}
    call_id = "call_1" if fmt is ToolFormat.TOOL else None
    return "Assistant:\n" + render_call(target, kwargs, fmt, call_id)


def tool_instructions(spec: ToolSpec, fmt: ToolFormat, toolchain: Toolchain | None = None) -> str:
    parts = [f"## {spec.name}", spec.desc]
    body = spec.instructions_format.get(fmt) or spec.instructions
    if body:
        parts.append(body)
    if fmt is not ToolFormat.TOOL and spec.parameters:
        signature = ", ".join(f"{p.name}: {p.type}" + ("" if p.required else "?")
                              for p in spec.parameters)
        parts.append(f"Arguments: {signature}.")
    rendered = []
    for example in spec.examples:
        try:
            rendered.append(render_example(spec, example, fmt, toolchain))
        except (UnrepresentableCall, ArgumentError):
            # Examples this format cannot show (or that do not fit the tool) are left out.
            return "\n\n".join(p for p in parts if p)
    if rendered:
        parts.append("### Examples\n\n" + "\n\n".join(rendered))
    return "\n\n".join(p for p in parts if p)


def toolchain_instructions(toolchain: Toolchain, fmt: ToolFormat) -> str:
    sections = [PREAMBLE[fmt]]
    sections += [tool_instructions(spec, fmt, toolchain) for spec in toolchain.tools]
    return "\n\n".join(sections)
