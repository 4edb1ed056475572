"""Deterministic model-reply shapes shared by the benchmarks."""

from __future__ import annotations

import random
from collections.abc import Callable

_WORDS = ("the", "model", "reads", "a", "file", "then", "writes", "patch", "and", "runs",
          "tests", "again", "before", "it", "answers", "with", "short", "summary", "of",
          "what", "changed", "why")


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 30))).capitalize() + "."


def prose_with_blocks(size: int, seed: int = 0) -> str:
    """Mostly prose paragraphs; about one paragraph in ten is followed by a shell block."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        part = " ".join(_sentence(rng) for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.1:
            part += "\n\n```shell\nls -la src/\ngrep -rn TODO .\n```"
        parts.append(part)
        total += len(part) + 2
    return "\n\n".join(parts)[:size]


def many_small_blocks(size: int, seed: int = 0) -> str:
    """Back-to-back tiny blocks with one line of prose between them."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        part = f"Step {len(parts)}:\n```shell\necho {rng.randint(0, 9999)}\n```"
        parts.append(part)
        total += len(part) + 1
    return "\n".join(parts)[:size]


def one_huge_block(size: int, seed: int = 0) -> str:
    """A single save block holding a large file."""
    rng = random.Random(seed)
    lines: list[str] = []
    total = 0
    while total < size:
        line = f"    value_{rng.randint(0, 10**6)} = compute({rng.random():.6f})  # step"
        lines.append(line)
        total += len(line) + 1
    return "I'll write the module.\n```save src/big.py\n" + "\n".join(lines) + "\n```\n"


def nested_fences(size: int, seed: int = 0) -> str:
    """Markdown documents saved with nested code examples inside."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        doc = (f"```save docs/page{len(parts)}.md\n# Page\n\n{_sentence(rng)}\n\n"
               f"```python\nprint({rng.randint(0, 99)})\n```\n\n{_sentence(rng)}\n```")
        parts.append(doc)
        total += len(doc) + 2
    return "\n\n".join(parts)


def _prose_with(call: Callable[[int], str], every: float, size: int, seed: int) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        part = _sentence(rng)
        if rng.random() < every:
            part += "\n" + call(len(parts))
        parts.append(part)
        total += len(part) + 2
    return "\n\n".join(parts)


def _xml_call(n: int) -> str:
    return f"<tool-use>\n<shell>\nls -la | grep '<x{n}>'\n</shell>\n</tool-use>"


def _plain_xml_call(n: int) -> str:
    return f"<tool-use>\n<shell>\nls -la src/{n}\n</shell>\n</tool-use>"


def _tool_call(n: int) -> str:
    return f'@shell(call_{n}): {{"command": "echo {{}} {n} done"}}'


def xml_calls(size: int, seed: int = 0) -> str:
    """Prose with ``<tool-use>`` calls."""
    return _prose_with(_xml_call, 0.2, size, seed)


def plain_xml_calls(size: int, seed: int = 0) -> str:
    """Prose with ``<tool-use>`` calls whose code holds no angle brackets (strict-XML safe)."""
    return _prose_with(_plain_xml_call, 0.2, size, seed)


def many_xml_calls(size: int, seed: int = 0) -> str:
    """Back-to-back ``<tool-use>`` calls."""
    return _prose_with(_xml_call, 1.0, size, seed)


def toolcall_calls(size: int, seed: int = 0) -> str:
    """Prose with ``@shell(id): {json}`` calls."""
    return _prose_with(_tool_call, 0.2, size, seed)


def many_toolcall_calls(size: int, seed: int = 0) -> str:
    """Back-to-back ``@shell(id): {json}`` calls."""
    return _prose_with(_tool_call, 1.0, size, seed)


MARKDOWN_SHAPES: dict[str, Callable[[int], str]] = {
    "prose+blocks": prose_with_blocks,
    "many small blocks": many_small_blocks,
    "one huge block": one_huge_block,
    "nested fences": nested_fences,
}

SHAPES: dict[str, dict[str, Callable[[int], str]]] = {
    "markdown": MARKDOWN_SHAPES,
    "xml": {"prose+calls": xml_calls, "prose+plain calls": plain_xml_calls,
            "many calls": many_xml_calls},
    "tool": {"prose+calls": toolcall_calls, "many calls": many_toolcall_calls,
             "prose+blocks": prose_with_blocks},
}

SIZES = {"10 KB": 10_000, "100 KB": 100_000, "1 MB": 1_000_000}
