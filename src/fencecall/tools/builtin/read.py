"""The read tool: show a file with line numbers."""

from __future__ import annotations

from ...errors import ToolError
from ...message import Message, system
from ..arguments import Parameter
from ..runtime.files import is_binary
from ..spec import Example, ToolInvocation, ToolSpec
from ..workspace import OutsideWorkspace, display, resolve_in_roots

MAX_BYTES = 10_000_000
MAX_LINES = 2_000


def execute_read(invocation: ToolInvocation) -> Message:
    roots = invocation.context.roots
    try:
        path = resolve_in_roots(invocation.kwargs["path"], roots)
    except (OutsideWorkspace, ValueError) as err:
        raise ToolError(f"read: {err}") from err
    name = display(path, roots)
    if not path.exists():
        raise ToolError(f"read: {name} does not exist.")
    if path.is_dir():
        raise ToolError(f"read: {name} is a directory; use shell `ls` to list it.")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ToolError(f"read: {name} is {size} bytes, over the {MAX_BYTES}-byte limit; use "
                        "shell tools (head, grep) to look at parts of it.")
    data = path.read_bytes()
    if is_binary(data):
        return system(f"read: {name} is a binary file ({size} bytes); not shown.")
    lines = data.decode("utf-8", errors="replace").splitlines()
    first = max(1, invocation.kwargs.get("start") or 1)
    last = min(len(lines), invocation.kwargs.get("end") or len(lines))
    if lines and first > len(lines):
        raise ToolError(f"read: {name} has {len(lines)} lines; line {first} does not exist.")
    shown_last = min(last, first + MAX_LINES - 1)
    width = len(str(shown_last))
    body = "\n".join(f"{n:>{width}}  {lines[n - 1]}" for n in range(first, shown_last + 1))
    header = f"{name} (lines {first}-{shown_last} of {len(lines)})" if lines else \
        f"{name} (empty)"
    note = (f"\n[{last - shown_last} more lines; read again with start={shown_last + 1}]"
            if shown_last < last else "")
    return system(f"{header}:\n{body}{note}")


tool = ToolSpec(
    name="read",
    desc="Show a text file with line numbers, optionally only lines START to END.",
    execute=execute_read,
    parameters=(
        Parameter("path", description="File to read."),
        Parameter("start", "integer", "First line to show (1-based).", required=False),
        Parameter("end", "integer", "Last line to show.", required=False),
    ),
    hints=frozenset({"files", "read-only"}),
    examples=(Example.call(path="hello.py"),
              Example.result('hello.py (lines 1-1 of 1):\n1  print("Hello world")')),
)
