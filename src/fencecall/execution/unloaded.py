"""Calls of tools fencecall knows but this run did not load.

A ```` ```shell ```` block in a run whose ``--tools`` left shell out, or a call of an MCP tool
a glob filtered out, was meant to run: it is neither run nor taken for plain code, and the
model and the user hear which tool is missing and which tools are loaded. A block whose
langtag no known tool answers to (```` ```json ````, ```` ```diff ````) stays plain code, and
so does a block of an informational tool, which would not have run had it been loaded.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..parsing import FormatLike, ToolCall, parse
from ..tools import Toolchain, ToolSpec

_THIS_CALL = "this call"
"""How the answer to a named call (XML, JSON, native) names it: it is that call's result."""


def not_loaded(call: ToolCall, toolchain: Toolchain) -> ToolSpec | None:
    """The known tool, not loaded in this run, that ``call`` means; None where a loaded tool
    answers to it, or no tool fencecall knows does."""
    return toolchain.not_loaded(call.name, langtag=call.is_codeblock)


def unloaded_blocks(text: str, fmt: FormatLike,
                    toolchain: Toolchain) -> list[tuple[ToolCall, ToolSpec]]:
    """The code blocks of ``text`` (read in ``fmt``) that call tools not loaded here, each
    with its tool, in order. A reply in which no such block's first word occurs at all (in
    any case) has none, and is not parsed a second time."""
    lowered = text.lower()
    if not any(tag.lower() in lowered for tag in toolchain.unloaded_langtags()):
        return []
    return [(call, spec) for call in parse(text, fmt).calls
            if call.is_codeblock and (spec := not_loaded(call, toolchain)) is not None]


def line_of(call: ToolCall, text: str) -> int:
    """The 1-based line of ``text`` where ``call`` starts."""
    return _as_parsed(text).count("\n", 0, call.start) + 1


def notice(missed: Iterable[tuple[ToolCall, ToolSpec]], text: str,
           toolchain: Toolchain) -> str:
    """One message for calls of tools not loaded here, written in ``text`` (say, "The shell
    tool is not loaded in this run, so the ```shell blocks on lines 3 and 9 did not run.
    Loaded tools: read, save.")."""
    text = _as_parsed(text)
    places: dict[str, dict[str, list[int]]] = {}  # tool → the fence and tag → lines
    for call, spec in missed:
        written = f"{_fence_at(text, call.start)}{call.name}" if call.is_codeblock else ""
        places.setdefault(spec.name, {}).setdefault(written, []).append(line_of(call, text))
    sentences = [f"The {tool} tool is not loaded in this run, so "
                 f"{_joined([_where(tag, lines) for tag, lines in tags.items()])} did not run."
                 for tool, tags in places.items()]
    return " ".join([*sentences, f"Loaded tools: {', '.join(toolchain.names()) or 'none'}."])


def _where(written: str, lines: list[int]) -> str:
    if not written:
        return _THIS_CALL
    if len(lines) == 1:
        return f"the {written} block on line {lines[0]}"
    return f"the {written} blocks on lines {_joined([str(line) for line in lines])}"


def _joined(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _as_parsed(text: str) -> str:
    """``text`` with its line ends as the parser read them (its calls' offsets are there)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _fence_at(text: str, start: int) -> str:
    """The run of backticks or tildes that opens the block at ``start`` (``` where the
    offset holds none)."""
    mark = text[start : start + 1]
    if mark not in ("`", "~"):
        return "```"
    end = start
    while end < len(text) and text[end] == mark:
        end += 1
    return text[start:end]
