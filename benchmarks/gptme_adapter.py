"""Optional: the same inputs through gptme's parsers, when gptme is importable.

gptme is never a dependency; without it every function here returns None.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any


@functools.cache
def _gptme() -> tuple[Any, Any] | None:
    try:
        from gptme.codeblock import Codeblock
        from gptme.tools import init_tools
        from gptme.tools.base import ToolUse
    except ImportError:
        return None
    logging.getLogger("gptme").setLevel(logging.CRITICAL)  # it logs each XML parse failure
    init_tools(None)
    return Codeblock, ToolUse


def available() -> bool:
    return _gptme() is not None


def version() -> str | None:
    if not available():
        return None
    from importlib.metadata import version as dist_version

    return dist_version("gptme")


def whole_parser(fmt: str) -> Callable[[str], int] | None:
    """Counts calls in a whole text, as ``ToolUse.iter_from_content`` does in ``fmt``."""
    loaded = _gptme()
    if loaded is None:
        return None
    _, tool_use = loaded
    return lambda text: sum(1 for _ in tool_use.iter_from_content(text, fmt))


def codeblock_parser() -> Callable[[str], int] | None:
    loaded = _gptme()
    if loaded is None:
        return None
    codeblock, _ = loaded
    return lambda text: len(codeblock.iter_from_markdown(text))


def streaming_parser(chunk: int) -> Callable[[str], int] | None:
    """gptme has no incremental parser: its loop re-parses the accumulated reply with
    ``streaming=True`` after each chunk, which is what this does."""
    loaded = _gptme()
    if loaded is None:
        return None
    _, tool_use = loaded

    def run(text: str) -> int:
        found = 0
        for end in range(chunk, len(text) + chunk, chunk):
            found = sum(1 for _ in tool_use.iter_from_content(text[:end], streaming=True))
        return found

    return run
