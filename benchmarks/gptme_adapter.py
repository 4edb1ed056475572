"""Optional: the same inputs through gptme's parsers and tools, when gptme is importable.

gptme is never a dependency; without it every function here returns None. Install it in a
separate comparison environment (see the README's Benchmarks section), with ``lxml``, which
gptme's XML parser uses when it is there.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

CallKey = tuple[str, str]
"""What a call carries, comparable between the parsers: its text (stripped, as gptme strips
it) and its named arguments as JSON. Names are left out: gptme renames block types to tools
(``python`` → ``ipython``)."""


def call_key(content: str | None, kwargs: Any) -> CallKey:
    return (content or "").strip(), json.dumps(kwargs or {}, sort_keys=True, default=str)


TOOLS = ("shell", "ipython", "save", "append", "patch", "read")
"""gptme's tools for the block types the inputs use (``python`` blocks are ``ipython``)."""


@functools.cache
def _gptme() -> Any | None:
    try:
        from gptme.tools import init_tools
        from gptme.tools.base import ToolUse
    except ImportError:
        return None
    logging.getLogger("gptme").setLevel(logging.CRITICAL)  # it logs each XML parse failure
    logging.getLogger().setLevel(logging.CRITICAL)  # and, offline, each tokenizer download
    init_tools(list(TOOLS))
    return ToolUse


def available() -> bool:
    return _gptme() is not None


def version() -> str | None:
    if not available():
        return None
    from importlib.metadata import version as dist_version

    return dist_version("gptme")


def lxml_version() -> str | None:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("lxml")
    except PackageNotFoundError:
        return None


def whole_parser(fmt: str) -> Callable[[str], list[Any]] | None:
    """``ToolUse.iter_from_content(text, fmt)``, as a list."""
    tool_use = _gptme()
    if tool_use is None:
        return None
    return lambda text: list(tool_use.iter_from_content(text, fmt))


def keys(calls: Iterable[Any]) -> list[CallKey]:
    return [call_key(c.content, c.kwargs) for c in calls]


def per_chunk_stream(chunk: int, fmt: str = "markdown") -> Callable[[str], int] | None:
    """gptme has no incremental parser. Re-parsing the accumulated reply with
    ``streaming=True`` after every chunk is the naive way to stream with it."""
    tool_use = _gptme()
    if tool_use is None:
        return None

    def run(text: str) -> int:
        found = 0
        for end in range(chunk, len(text) + chunk, chunk):
            found = len(list(tool_use.iter_from_content(text[:end], fmt, streaming=True)))
        return found

    return run


def chat_loop_stream(fmt: str = "markdown") -> Callable[[str], int] | None:
    """What gptme's chat loop does (``gptme/llm/__init__.py``): at each character that can
    end a call (a newline for markdown), it re-parses the whole reply so far with
    ``streaming=True`` and stops at the first runnable call. Chunk sizes do not matter: it
    looks at every character. Returns where it stopped."""
    tool_use = _gptme()
    if tool_use is None:
        return None
    breaks = {"markdown": "\n", "tool": "}\n", "xml": ">\n"}[fmt]

    def run(text: str) -> int:
        for end, char in enumerate(text, 1):
            if char in breaks and any(
                    t.is_runnable
                    for t in tool_use.iter_from_content(text[:end], fmt, streaming=True)):
                return end
        return len(text)

    return run


def tool_call(tool: str, code: str) -> Callable[[], object] | None:
    """One call of gptme's own ``tool`` (``shell``, ``ipython``) through
    ``ToolUse.execute``, its whole pipeline."""
    tool_use = _gptme()
    if tool_use is None:
        return None
    call = tool_use(tool, [], code)

    def run() -> object:
        with contextlib.redirect_stdout(io.StringIO()):  # it prints what it runs
            return list(call.execute())

    return run
