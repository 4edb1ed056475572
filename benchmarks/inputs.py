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


def xml_calls(size: int, seed: int = 0) -> str:
    """Prose with ``<tool-use>`` calls."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        part = _sentence(rng)
        if rng.random() < 0.2:
            part += "\n<tool-use>\n<shell>\nls -la | grep '<x>'\n</shell>\n</tool-use>"
        parts.append(part)
        total += len(part) + 2
    return "\n\n".join(parts)


def toolcall_calls(size: int, seed: int = 0) -> str:
    """Prose with ``@shell(id): {json}`` calls."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        part = _sentence(rng)
        if rng.random() < 0.2:
            part += f'\n@shell(call_{len(parts)}): {{"command": "echo {{}} done"}}'
        parts.append(part)
        total += len(part) + 2
    return "\n\n".join(parts)


MARKDOWN_SHAPES: dict[str, Callable[[int], str]] = {
    "prose+blocks": prose_with_blocks,
    "many small blocks": many_small_blocks,
    "one huge block": one_huge_block,
    "nested fences": nested_fences,
}

SIZES = {"10 KB": 10_000, "100 KB": 100_000, "1 MB": 1_000_000}
