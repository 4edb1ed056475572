"""Deterministic model-reply shapes shared by the benchmarks."""

from __future__ import annotations

import random
from collections.abc import Callable

_WORDS = ("the", "model", "reads", "a", "file", "then", "writes", "patch", "and", "runs",
          "tests", "again", "before", "it", "answers", "with", "short", "summary", "of",
          "what", "changed", "why")


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 30))).capitalize() + "."


Part = Callable[[int, random.Random], str]
"""Makes the n-th piece of an input from a seeded random source."""


def _join_until(size: int, separator: str, part: Part, seed: int) -> str:
    """Pieces joined by ``separator`` until the text is at least ``size`` characters."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        piece = part(len(parts), rng)
        parts.append(piece)
        total += len(piece) + len(separator)
    return separator.join(parts)


def _paragraph_maybe_block(n: int, rng: random.Random) -> str:
    text = " ".join(_sentence(rng) for _ in range(rng.randint(1, 4)))
    if rng.random() < 0.1:
        text += "\n\n```shell\nls -la src/\ngrep -rn TODO .\n```"
    return text


def prose_with_blocks(size: int, seed: int = 0) -> str:
    """Mostly prose paragraphs; about one paragraph in ten is followed by a shell block."""
    return _join_until(size, "\n\n", _paragraph_maybe_block, seed)


def many_small_blocks(size: int, seed: int = 0) -> str:
    """Back-to-back tiny blocks with one line of prose between them."""
    return _join_until(size, "\n", lambda n, rng: (
        f"Step {n}:\n```shell\necho {rng.randint(0, 9999)}\n```"), seed)


def one_huge_block(size: int, seed: int = 0) -> str:
    """A single save block holding a large file."""
    body = _join_until(size, "\n", lambda n, rng: (
        f"    value_{rng.randint(0, 10**6)} = compute({rng.random():.6f})  # step"), seed)
    return f"I'll write the module.\n```save src/big.py\n{body}\n```\n"


def nested_fences(size: int, seed: int = 0) -> str:
    """Markdown documents saved with nested code examples inside."""
    return _join_until(size, "\n\n", lambda n, rng: (
        f"```save docs/page{n}.md\n# Page\n\n{_sentence(rng)}\n\n"
        f"```python\nprint({rng.randint(0, 99)})\n```\n\n{_sentence(rng)}\n```"), seed)


def _code_line(rng: random.Random) -> str:
    name = rng.choice(_WORDS)
    return rng.choice((f"    {name} = compute({rng.randint(0, 99)}, key=\"{name}\")",
                       f"    if {name} < limit:", f"        return {name}.strip()",
                       f"    # {_sentence(rng)[:50]}",
                       f"    items.append({name}[{rng.randint(0, 9)}])"))


def _realistic_part(n: int, rng: random.Random) -> str:
    kind = rng.choices(("prose", "list", "shell", "ipython", "save", "patch", "document"),
                       (40, 15, 15, 10, 8, 7, 5))[0]
    if kind == "prose":
        text = " ".join(_sentence(rng) for _ in range(rng.randint(1, 4)))
        return text.replace(" file ", " `src/app.py` ", 1)
    if kind == "list":
        bullet = rng.choice(("- ", "1. ", "* "))
        return "\n".join(bullet + _sentence(rng) for _ in range(rng.randint(3, 6)))
    if kind == "shell":
        commands = ("ls -la src/", "grep -rn TODO .", "pytest -q tests/", "git diff --stat",
                    "cat pyproject.toml | head -20")
        return "```shell\n" + "\n".join(rng.sample(commands, rng.randint(1, 3))) + "\n```"
    lines = "\n".join(_code_line(rng) for _ in range(rng.randint(5, 25)))
    if kind == "ipython":
        return f"```ipython\ndef step_{n}(items, limit):\n{lines}\n```"
    if kind == "save":
        return f"```save src/module_{n}.py\ndef step_{n}(items, limit):\n{lines}\n```"
    if kind == "patch":
        return (f"```patch src/module_{n}.py\n<<<<<<< ORIGINAL\n{lines}\n=======\n"
                f"{lines.replace('compute', 'compute_fast')}\n>>>>>>> UPDATED\n```")
    return (f"````save docs/page_{n}.md\n# Page {n}\n\n{_sentence(rng)}\n\n```shell\n"
            f"pip install fencecall\n```\n\n{_sentence(rng)}\n\n```python\n"
            f"print({rng.randint(0, 99)})\n```\n````")


def realistic_reply(size: int, seed: int = 0) -> str:
    """What an agent writes: prose, lists, inline code, shell, ipython, save and patch
    blocks, and markdown documents holding fenced examples (behind a longer fence)."""
    return _join_until(size, "\n\n", _realistic_part, seed)


def reply_ending_in_a_call(size: int, seed: int = 0) -> str:
    """A realistic reply whose blocks are all plain ``text``, then one shell call at the
    end: what an agent loop streams until its first call."""
    body = realistic_reply(size, seed)
    for lang in ("shell", "ipython", "save", "patch"):
        body = body.replace("```" + lang, "```text")
    return body + "\n\nNow run it:\n\n```shell\necho done\n```\n"


def many_cdata_sections(size: int, seed: int = 0) -> str:
    """One ``<tool-use>`` call whose body is many CDATA sections (each holds a closing tag)."""
    body = _join_until(size, "\n", lambda n, rng: (
        f"<![CDATA[line {n}: </save> {rng.randint(0, 9999)}]]>"), seed)
    return f"Saving it.\n<tool-use>\n<save args=\"notes.txt\">\n{body}\n</save>\n</tool-use>\n"


def _prose_with(call: Callable[[int], str], every: float, size: int, seed: int) -> str:
    def part(n: int, rng: random.Random) -> str:
        text = _sentence(rng)
        return text + "\n" + call(n) if rng.random() < every else text

    return _join_until(size, "\n\n", part, seed)


def _xml_call(n: int) -> str:
    return f"<tool-use>\n<shell>\nls -la | grep '<x{n}>'\n</shell>\n</tool-use>"


def _plain_xml_call(n: int) -> str:
    return f"<tool-use>\n<shell>\nls -la src/{n}\n</shell>\n</tool-use>"


def _tool_call(n: int) -> str:
    return f'@shell(call_{n}): {{"command": "echo {{}} {n} done"}}'


def _hermes_call(n: int) -> str:
    return ('<tool_call>\n{"name": "shell", "arguments": {"command": "grep -rn \\"{x}\\" '
            f'src/{n}"}}}}\n</tool_call>')


def _qwen3_coder_call(n: int) -> str:
    return (f"<tool_call>\n<function=save>\n<parameter=path>\nsrc/m{n}.py\n</parameter>\n"
            f"<parameter=content>\ndef f{n}(a, b):\n    return a < b and {{b: a}}\n"
            "</parameter>\n</function>\n</tool_call>")


def _pythonic_call(n: int) -> str:
    return (f"[read(path='src/{n}.py'), shell(command=\"grep -n '[(]' src/{n}.py\", "
            f"timeout={n % 60}, env={{'A': [1, None, True]}})]")


def prose(size: int, seed: int = 0) -> str:
    """Prose paragraphs without a single call: every candidate of ``auto`` reads to the end."""
    return _join_until(size, "\n\n", lambda n, rng: " ".join(
        _sentence(rng) for _ in range(rng.randint(1, 4))), seed)


def hermes_calls(size: int, seed: int = 0) -> str:
    """Prose with ``<tool_call>{json}</tool_call>`` calls."""
    return _prose_with(_hermes_call, 0.2, size, seed)


def many_hermes_calls(size: int, seed: int = 0) -> str:
    """Back-to-back ``<tool_call>{json}</tool_call>`` calls."""
    return _prose_with(_hermes_call, 1.0, size, seed)


def qwen3_coder_calls(size: int, seed: int = 0) -> str:
    """Prose with ``<tool_call><function=…><parameter=…>`` calls holding code."""
    return _prose_with(_qwen3_coder_call, 0.2, size, seed)


def many_qwen3_coder_calls(size: int, seed: int = 0) -> str:
    """Back-to-back ``<function=…>`` calls."""
    return _prose_with(_qwen3_coder_call, 1.0, size, seed)


def pythonic_calls(size: int, seed: int = 0) -> str:
    """Prose with ``[read(…), shell(…)]`` lists whose strings hold brackets."""
    return _prose_with(_pythonic_call, 0.2, size, seed)


def many_pythonic_calls(size: int, seed: int = 0) -> str:
    """Back-to-back pythonic call lists."""
    return _prose_with(_pythonic_call, 1.0, size, seed)


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
    "realistic reply": realistic_reply,
    "prose+blocks": prose_with_blocks,
    "many small blocks": many_small_blocks,
    "one huge block": one_huge_block,
    "nested fences": nested_fences,
}

SHAPES: dict[str, dict[str, Callable[[int], str]]] = {
    "markdown": MARKDOWN_SHAPES,
    "xml": {"prose+calls": xml_calls, "prose+plain calls": plain_xml_calls,
            "many calls": many_xml_calls, "one call, many CDATA": many_cdata_sections},
    "tool": {"prose+calls": toolcall_calls, "many calls": many_toolcall_calls,
             "prose+blocks": prose_with_blocks},
}

OPEN_MODEL_SHAPES: dict[str, dict[str, Callable[[int], str]]] = {
    "hermes": {"prose+calls": hermes_calls, "many calls": many_hermes_calls},
    "qwen3-coder": {"prose+calls": qwen3_coder_calls, "many calls": many_qwen3_coder_calls},
    "pythonic": {"prose+calls": pythonic_calls, "many calls": many_pythonic_calls},
    "auto": {"prose+blocks": prose_with_blocks, "prose+hermes calls": hermes_calls,
             "prose, no calls": prose},
}
"""The formats open models write, and auto; gptme reads none of them, so they are kept apart
from :data:`SHAPES`, which ``benchmarks.run`` compares with gptme."""

SIZES = {"10 KB": 10_000, "100 KB": 100_000, "1 MB": 1_000_000}
