"""Adding a format needs one object and nothing outside ``parsing/`` changed.

The format here is defined in the test alone (a new syntax, its own scanner), handed to the
public entry points as an object, and runs calls end to end: parse, stream, render, the
system prompt, a session's execution.
"""

from __future__ import annotations

import json
from pathlib import Path

from fencecall.execution import Session
from fencecall.parsing import (
    Diagnostic,
    StreamParser,
    ToolCall,
    get_format,
    parse_calls,
    render,
)
from fencecall.parsing.formats import CallScanner
from fencecall.tools import Toolchain, render_call

from ..sample_tools import CATALOGUE


class _LineScanner:
    """``>>> name {json}`` on a line of its own is a call."""

    def __init__(self) -> None:
        self._partial = ""
        self._offset = 0
        self.diagnostics: list[Diagnostic] = []

    def feed(self, chunk: str) -> list[ToolCall]:
        text = self._partial + chunk
        complete, _, self._partial = text.rpartition("\n")
        return self._lines(complete + "\n" if complete or text.endswith("\n") else "")

    def finish(self) -> list[ToolCall]:
        tail, self._partial = self._partial, ""
        return self._lines(tail)

    def _lines(self, text: str) -> list[ToolCall]:
        calls = []
        for line in text.splitlines(keepends=True):
            if line.startswith(">>> "):
                name, _, raw = line[4:].strip().partition(" ")
                calls.append(ToolCall(name, kwargs=json.loads(raw or "{}"),
                                      start=self._offset, format="arrows"))
            self._offset += len(line)
        return calls


class ArrowsFormat:
    name = "arrows"
    native = False
    named_arguments = True
    by_langtag = False
    preamble = "Call a tool with a line: >>> TOOL {JSON ARGUMENTS}."

    def scanner(self) -> CallScanner:
        return _LineScanner()

    def render(self, call: ToolCall) -> str:
        return f">>> {call.name} {json.dumps(dict(call.kwargs))}"


ARROWS = ArrowsFormat()
REPLY = 'Adding.\n>>> add {"a": 2, "b": 3}\nand echoing\n>>> echo {"text": "hi"}\n'


def test_a_new_format_parses_streams_and_renders() -> None:
    assert get_format(ARROWS) is ARROWS
    calls = parse_calls(REPLY, ARROWS)
    assert [(c.name, dict(c.kwargs)) for c in calls] == [("add", {"a": 2, "b": 3}),
                                                        ("echo", {"text": "hi"})]
    parser = StreamParser(ARROWS)
    streamed = [c for i in range(0, len(REPLY), 5) for c in parser.feed(REPLY[i : i + 5])]
    assert streamed + parser.finish() == calls
    assert parse_calls(render(calls[0], ARROWS), ARROWS) == [
        ToolCall("add", kwargs={"a": 2, "b": 3}, format="arrows")]


def test_a_new_format_runs_in_a_session_and_teaches_itself(tmp_path: Path) -> None:
    toolchain = Toolchain.build(catalogue=CATALOGUE)
    with Session(toolchain, workspace=tmp_path) as session:
        assert [m.content for m in session.execute(REPLY, ARROWS)] == ["5", "echo: hi", "args: ()"]
    prompt = toolchain.instructions(ARROWS)
    assert prompt.startswith(ARROWS.preamble)
    assert '>>> echo {"text": "hi"}' in prompt
    add = toolchain.get("add")
    assert add is not None
    assert render_call(add, {"a": 1}, ARROWS) == '>>> add {"a": 1}'
