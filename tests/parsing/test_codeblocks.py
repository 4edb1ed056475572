"""Each fence rule, with the concrete text a model writes."""

from __future__ import annotations

import pytest

from fencecall import Codeblock, parse_codeblocks

from ..support import F


def blocks(text: str, *, streaming: bool = False) -> list[tuple[str, str]]:
    return [(b.lang, b.content) for b in parse_codeblocks(text, streaming=streaming)]


def test_simple_block_records_lang_content_and_start() -> None:
    text = f"Let me look:\n{F}shell\nls -la\n{F}\nDone."
    [block] = parse_codeblocks(text)
    assert block == Codeblock("shell", "ls -la", text.index(F))


def test_langtag_with_path() -> None:
    [block] = parse_codeblocks(f"{F}save src/app.py\nprint(1)\n{F}\n")
    assert block.lang == "save src/app.py"
    assert block.path == "src/app.py"
    assert parse_codeblocks(f"{F}shell\nls\n{F}")[0].path is None
    assert parse_codeblocks(f"{F}notes.txt\nhi\n{F}")[0].path == "notes.txt"


def test_several_blocks_in_order() -> None:
    text = f"{F}shell\na\n{F}\ntext\n{F}python\nb\n{F}\n"
    assert blocks(text) == [("shell", "a"), ("python", "b")]


def test_empty_and_bare_blocks() -> None:
    assert blocks(f"{F}shell\n{F}\n") == [("shell", "")]
    assert blocks(f"{F}\nplain\n{F}\n") == [("", "plain")]


def test_content_keeps_inner_blank_lines_and_trailing_newline() -> None:
    assert blocks(f"{F}x\na\n\nb\n\n{F}") == [("x", "a\n\nb\n")]


def test_unclosed_block_is_not_returned() -> None:
    assert blocks(f"{F}shell\nrm -rf build\n") == []


def test_indented_fences_count() -> None:
    assert blocks(f"1. step\n   {F}shell\n   ls\n   {F}\n") == [("shell", "   ls")]


def test_inline_triple_backticks_are_prose() -> None:
    assert blocks(f"use {F}code{F} inline\n{F}x{F}\n") == []


def test_longer_fence_holds_shorter_fences() -> None:
    inner = f"{F}python\nprint(1)\n{F}\n{F}\nbare\n{F}"
    text = f"````markdown\n{inner}\n````\n"
    assert blocks(text) == [("markdown", inner)]


def test_equal_fence_nesting_with_langtag() -> None:
    text = f"{F}markdown\n# Title\n{F}python\nx = 1\n{F}\nend\n{F}\n"
    assert blocks(text) == [("markdown", f"# Title\n{F}python\nx = 1\n{F}\nend")]


def test_only_exact_length_bare_fence_closes_outer() -> None:
    text = "````shell\necho a\n`````\necho b\n`````\n````\n"
    assert blocks(text) == [("shell", "echo a\n`````\necho b\n`````")]


def test_fence_with_langtag_does_not_close() -> None:
    text = f"{F}text\nexample:\n{F}python\n{F}\nstill inside\n{F}\n"
    assert blocks(text) == [("text", f"example:\n{F}python\n{F}\nstill inside")]


def test_bare_fence_in_document_opens_when_followed_by_text() -> None:
    doc = f"# Usage\n{F}\npip install fencecall\n{F}\n"
    text = f"{F}save README.md\n{doc}{F}\n\nSaved."
    assert blocks(text) == [("save README.md", doc.rstrip("\n"))]


def test_bare_fence_in_document_closes_before_blank_line_or_fence() -> None:
    assert blocks(f"{F}markdown\n# T\n{F}\n\n{F}shell\nls\n{F}\n") == [
        ("markdown", "# T"),
        ("shell", "ls"),
    ]
    assert blocks(f"{F}markdown\n# T\n{F}\n{F}shell\nls\n{F}\n") == [
        ("markdown", "# T"),
        ("shell", "ls"),
    ]


def test_bare_fence_in_code_block_closes_even_before_text() -> None:
    assert blocks(f"{F}shell\nls\n{F}\nThis lists files.\n") == [("shell", "ls")]


def test_glued_fences_are_split() -> None:
    text = f"{F}shell\nls\n``````python\nprint(1)\n{F}\n"
    assert blocks(text) == [("shell", "ls"), ("python", "print(1)")]
    [_, second] = parse_codeblocks(text)
    assert text[second.start :].startswith(f"{F}python")


def test_glued_fence_outside_a_block_opens() -> None:
    assert blocks("``````shell\nls\n```\n") == [("shell", "ls")]


def test_thinking_is_skipped() -> None:
    text = f"<thinking>\n{F}shell\nrm -rf /\n{F}\n</thinking>\n{F}shell\nls\n{F}\n"
    [block] = parse_codeblocks(text)
    assert (block.lang, block.content) == ("shell", "ls")
    assert block.start == text.rindex(f"{F}shell")


def test_think_tag_variant_and_unclosed_fence_inside_thinking() -> None:
    text = f"<think>maybe\n{F}shell\nnot closed</think>\n{F}shell\nls\n{F}\n"
    assert blocks(text) == [("shell", "ls")]


def test_unclosed_thinking_hides_the_rest() -> None:
    assert blocks(f"{F}a\n1\n{F}\n<thinking>\n{F}shell\nls\n{F}\n") == [("a", "1")]


def test_closing_thinking_tag_alone_is_dropped() -> None:
    assert blocks(f"planning...\n</thinking>\n{F}shell\nls\n{F}\n") == [("shell", "ls")]


def test_thinking_tags_inside_code_are_content() -> None:
    assert blocks(f"{F}python\ns = '<thinking>'\n{F}\n") == [("python", "s = '<thinking>'")]


def test_streaming_waits_for_the_line_after_the_closing_fence() -> None:
    text = f"{F}shell\nls\n{F}"
    assert blocks(text, streaming=True) == []
    assert blocks(text + "\n", streaming=True) == [("shell", "ls")]
    assert blocks(text) == [("shell", "ls")]


def test_streaming_never_yields_a_half_written_fence_line() -> None:
    # "```" could still become "```python" (an opening fence) in a document block.
    assert blocks(f"{F}markdown\n# T\n``", streaming=True) == []
    assert blocks(f"{F}markdown\n# T\n{F}\n", streaming=True) == []
    assert blocks(f"{F}markdown\n# T\n{F}\n\n", streaming=True) == [("markdown", "# T")]


@pytest.mark.parametrize("depth", [50, 200])
def test_deep_nesting_is_linear_and_does_not_crash(depth: int) -> None:
    opens = "\n".join(f"{F}lang{i}" for i in range(depth))
    closes = "\n".join([F] * depth)
    text = f"{opens}\nbody\n{closes}\n"
    [block] = parse_codeblocks(text)
    assert block.lang == "lang0"
    assert block.content.count("\n") == 2 * depth - 2
