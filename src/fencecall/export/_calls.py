"""The text calls of a reply, found again: the log keeps a reply's text and its results,
not the calls the parser found in it.

The reply is parsed again in the format the conversation ran with, and each call is bound
to its tool's parameters as the session bound it (``shell``'s ``command``, ``save``'s
``path`` and ``content``), where a built-in tool takes it; a call of another tool (a
plugin, an MCP server) keeps its arguments as written (``argline``, ``content``, named
arguments). A reply holds at most one call that ran (it is cut at its first), so the
pairing is exact unless the reply was edited in the log.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ..parsing import ToolCall, parse
from ..tools import ArgumentError, Toolchain


@functools.cache
def _built_ins() -> Toolchain:
    return Toolchain.build(None)


class TextCalls:
    """The calls written in one reply (step ``step`` of its export), taken in order."""

    def __init__(self, text: str, fmt: str, step: int):
        try:
            self._calls = parse(text, fmt).calls
        except (KeyError, ValueError):  # a format this release does not know
            self._calls = []
        self._step, self._made = step, 0

    def next(self, tool: str, call_id: str | None) -> tuple[str, Mapping[str, Any]] | None:
        """The id and arguments of the next call of ``tool`` (or with ``call_id``)."""
        for index, call in enumerate(self._calls):
            if (call_id is not None and call.call_id == call_id) or _tool_of(call) == tool:
                del self._calls[: index + 1]
                return call.call_id or call_id or self.new_id(), _arguments(call)
        return None

    def new_id(self) -> str:
        """An id for a call written without one, unique in the export."""
        self._made += 1
        return f"call-{self._step}-{self._made}"


def _tool_of(call: ToolCall) -> str:
    spec = (_built_ins().for_langtag(call.name) if call.is_codeblock
            else _built_ins().get(call.name))
    return spec.name if spec is not None else call.name


def _arguments(call: ToolCall) -> dict[str, Any]:
    spec = (_built_ins().for_langtag(call.name) if call.is_codeblock
            else _built_ins().get(call.name))
    if spec is not None:
        try:
            return spec.bind(call.argline, call.content, call.kwargs)
        except ArgumentError:  # a call its tool refused: kept as written
            pass
    written: dict[str, Any] = dict(call.kwargs)
    if call.argline:
        written["argline"] = call.argline
    if call.content:
        written["content"] = call.content
    return written
