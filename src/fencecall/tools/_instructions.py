"""The system-prompt text that teaches a model its tools, in the format it will write."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from ..parsing import FormatLike, UnrepresentableCall, get_format
from ._parameters import ArgumentError
from .spec import Example, ToolSpec, render_call

Lookup = Callable[[str], ToolSpec | None]


def render_example(spec: ToolSpec, example: Example, fmt: FormatLike,
                   lookup: Lookup | None = None) -> str:
    """One example turn as the model would see it in ``fmt``.

    A call example may name another tool (``Example.call("save", …)``); ``lookup`` finds it.
    """
    if example.kind == "user":
        return f"User: {example.text}"
    if example.kind == "result":
        return f"System: {example.text}"
    if example.kind == "assistant":
        return f"Assistant: {example.text}"
    target = spec
    if example.tool is not None and lookup is not None:
        target = lookup(example.tool) or spec
    bound = target.bind("", "", example.kwargs) if target.parameters else {}
    # only what the example gives: a default written out (```shell 60) reads as part of the
    # form, and small models copy it
    kwargs = {name: value for name, value in bound.items() if name in example.kwargs}
    call_id = "call_1" if get_format(fmt).named_arguments else None
    return "Assistant:\n" + render_call(target, kwargs, fmt, call_id)


def _exchanges(examples: Iterable[Example]) -> Iterator[list[Example]]:
    """Examples split into exchanges, each starting at a user turn."""
    exchange: list[Example] = []
    for example in examples:
        if example.kind == "user" and exchange:
            yield exchange
            exchange = []
        exchange.append(example)
    if exchange:
        yield exchange


def _examples(spec: ToolSpec, fmt: FormatLike, lookup: Lookup | None) -> Iterator[str]:
    """The example exchanges ``fmt`` can show. An exchange holding a call it cannot show (or
    that does not fit its tool) is left out; the tool's other exchanges stay."""
    for exchange in _exchanges(spec.examples):
        try:
            turns = [render_example(spec, example, fmt, lookup) for example in exchange]
        except (UnrepresentableCall, ArgumentError):
            continue
        yield "\n\n".join(turns)


def tool_instructions(spec: ToolSpec, fmt: FormatLike, lookup: Lookup | None = None, *,
                      compact: bool = False, example: bool = True) -> str:
    """One tool's section of the system prompt. ``compact`` leaves out the longer
    instructions and keeps one example exchange (none without ``example``)."""
    target = get_format(fmt)
    parts = [f"## {spec.name}", spec.desc]
    body = spec.instructions_format.get(target.name) or spec.instructions
    if body and not compact:
        parts.append(body)
    if not target.native and spec.parameters and spec.schema is None:
        # native formats send the schema itself; a tool with its own schema describes it
        signature = ", ".join(f"{p.name}: {p.type}" + ("" if p.required else "?")
                              for p in spec.parameters)
        parts.append(f"Arguments: {signature}.")
    rendered = list(_examples(spec, target, lookup)) if example else []
    if compact:
        rendered = [_last_exchange(rendered[0])] if rendered else []
    if rendered:
        parts.append(("Example:\n" if compact else "### Examples\n\n") + "\n\n".join(rendered))
    return "\n\n".join(p for p in parts if p)


def _last_exchange(rendered: str) -> str:
    """An example without its user turn: the call and its result."""
    return rendered.split("\n\n", 1)[1] if rendered.startswith("User:") else rendered


COMPACT_EXAMPLES = 3
"""In a compact prompt only the first tools (the ones most tasks need) show an example."""


def tools_instructions(tools: Iterable[ToolSpec], fmt: FormatLike,
                       lookup: Lookup | None = None, *, compact: bool = False) -> str:
    """The format's preamble, then a section per tool, the tools in the order given (the
    ones most tasks need first). ``compact`` is for small models and context windows: short
    sections, and an example only for the first few tools."""
    target = get_format(fmt)
    sections = [target.preamble]
    sections += [tool_instructions(spec, target, lookup, compact=compact,
                                   example=not compact or index < COMPACT_EXAMPLES)
                 for index, spec in enumerate(tools)]
    return "\n\n".join(sections)
