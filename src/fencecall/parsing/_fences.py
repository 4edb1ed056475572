"""The fence grammar: what a fence line does, and what a closed fence becomes.

Every path of the scanner (a line at a time, the fast loop over fence lines, the general step)
asks the two functions here, :func:`line_action` and :func:`closed_block`; the fast paths only
find fence lines faster. The rules (see the README's parsing notes for examples):

* A line whose first non-blank characters are 3+ backticks or 3+ tildes is a fence
  (CommonMark's two kinds); a backtick fence's info string (the langtag) may not contain a
  backtick, so ```` ```x``` ```` inline is prose.
* Inside a block, fences of the other kind are content: a tilde block closes only at a tilde
  fence, a backtick block only at a backtick fence. Inside a block opened with L of them,
  fences shorter than L are content. A fence with a langtag and at least L opens a nested
  block; a bare fence closes the innermost nested block, and a bare fence of exactly L with
  nothing nested closes the block itself. A fence followed by anything else (three quotes, say)
  is content, as a markdown viewer shows it.
* Thinking glued to a fence (```` ```<think> ````, Gemini's ```` ```thinking> ````) is thinking:
  outside blocks it opens a thinking section, and at the length that closes the block it
  closes the block and the thinking is read after it.
* A bare fence closes where a markdown viewer closes it, except in a block with real reason to
  hold fenced examples: a document (a ``markdown``/``md``/``rst`` langtag, or a target that is
  a markdown-like file: ``.md``, ``.markdown``, ``.mdx``, ``.rst``, ``.txt`` or no extension)
  or a block that already held a nested one. There the following line decides: a line of text
  after the bare fence means it opens an example; a blank line, another fence or the end
  means it closes.
* ````````shell`` (a closing fence glued to an opening one) is split into the two.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Final, Literal

from .model import FENCED, Codeblock, ToolCall

Found = Codeblock | ToolCall
Blocks = Literal["codeblock", "call", "none"]
"""How a scanner reports code blocks: as :class:`Codeblock`, as :class:`ToolCall` (blocks with
a langtag, named by its first word), or not at all."""

_GLUED_THINKING = (("<thinking>", "</thinking>"), ("<think>", "</think>"),
                   ("thinking>", "</thinking>"), ("think>", "</think>"))
"""Thinking tags a model glues to a fence, with a ``<`` or without, and how each closes."""
MARKERS = ("```", "~~~")
_DOCUMENT_LANGUAGES = frozenset(("markdown", "md", "mdx", "rst"))
"""Langtags whose block is a document."""
_DOCUMENT_EXTENSIONS = frozenset(("md", "markdown", "mdx", "rst", "txt"))
"""The extensions of markdown-like files, where a bare fence may open an example."""
# The first word of a language tag or tool name: word characters and . + # / ~ : - only.
_LANGTAG_WORD = re.compile(r"[\w.+#/~:\-]+(?:\s|$)")

# What a fence line does.
CONTENT: Final = 0
"""It is text: prose outside blocks, content inside one."""
OPENS: Final = 1
"""Outside: it opens a block. Inside: it opens a nested block (an example)."""
CLOSES: Final = 2
CLOSES_NESTED: Final = 3
WAITS: Final = 4
"""A bare fence in a block that may hold examples, whose next line is not here yet."""
SPLITS: Final = 5
"""A closing fence glued to an opening one (````````shell``): read as the two."""
THINKS: Final = 6
"""Outside: thinking glued to a fence opens thinking. Inside: it closes the block, and the
thinking after the fence is read after the block."""
OPENS_EXAMPLE: Final = 7
"""A bare fence in a block that may hold examples, followed by a line of text: it opens one
(and the block remembers that it could have closed there)."""


def holds_documents(lang: str) -> bool:
    """Whether a block opened with ``lang`` may hold fenced examples in its text: a document
    language, or a target that is a markdown-like file (``save notes.md``, ``save README``).
    Plain string work, no regular expression or cache: a reply's file blocks mostly name
    paths no other block names."""
    words = lang.split(None, 1)
    if not words:
        return False
    if words[0].lower() in _DOCUMENT_LANGUAGES:
        return True
    stem, dot, extension = words[-1].rstrip().rpartition("/")[2].lstrip(".").rpartition(".")
    if len(words) < 2:  # the langtag itself may be a path (``notes.md``)
        return bool(dot and stem) and extension.lower() in _DOCUMENT_EXTENSIONS
    return not dot or not stem or extension.lower() in _DOCUMENT_EXTENSIONS


def holds_a_file(lang: str) -> bool:
    """Whether a block holds a whole document or file (``markdown``, ``save src/app.py``),
    whose nested blocks are its text, not calls that were meant to run."""
    words = lang.split()
    if len(words) >= 2:
        last = words[-1]
        extension = last.rpartition(".")[2] if "." in last else ""
        if "/" in last or (extension and extension.replace("_", "x").isalnum()):
            return True  # the common case first: a path (a folder, or a file extension)
    return holds_documents(lang)


@functools.lru_cache(maxsize=256)
def is_langtag(info: str) -> bool:
    """Whether a fence's info string starts like a language or tool name (three quotes,
    ``<think>`` and ``thinking>`` do not)."""
    return _LANGTAG_WORD.match(info.strip()) is not None


def glued_thinking(info: str) -> tuple[str, str] | None:
    """The thinking tag a fence's info string starts with, and its closing tag."""
    start = info.lstrip(" \t")
    for tag, close in _GLUED_THINKING:
        if start.startswith(tag):
            return tag, close
    return None


def _is_glued(count: int, info: str) -> bool:
    return count >= 6 and count % 2 == 0 and info[:1] not in ("", " ", "\t", "`")


def line_action(char: str, count: int, info: str, open_char: str, open_count: int,
                nested: int, container: bool, text: str = "", line_end: int = -1,
                final: bool = True) -> int:
    """What a fence line of ``count`` ``char`` and ``info`` does: outside blocks when
    ``open_count`` is 0, else inside a block opened with ``open_count`` ``open_char``
    (``nested``: the length of the innermost example open in it, 0 if none; ``container``:
    it may hold examples). Where a bare fence may open an example, the next line decides:
    it is read from ``text``, where the fence line ends at ``line_end`` (see
    :func:`line_after`; the defaults: the text ends there)."""
    if open_count and char != open_char:
        return CONTENT
    if char == "`":
        if count >= 6 and _is_glued(count, info):
            return SPLITS
        if "`" in info:
            return CONTENT  # ```x``` inline
    if not open_count:
        return THINKS if glued_thinking(info) is not None else OPENS
    if not info.strip():
        if count < open_count:
            return CONTENT
        if nested:
            return CLOSES_NESTED if count >= nested else CONTENT
        if count > open_count:
            return CONTENT  # a bare fence longer than the opener
        if not container:
            return CLOSES
        following = line_after(text, line_end, final)
        if following is None:
            return WAITS
        following = following.strip()
        return OPENS_EXAMPLE if following and not following.startswith(MARKERS) else CLOSES
    if is_langtag(info):
        return OPENS if count >= open_count else CONTENT
    if count == open_count and not nested and glued_thinking(info) is not None:
        return THINKS
    return CONTENT


def line_after(text: str, line_end: int, final: bool) -> str | None:
    """The line after the one that ends at ``line_end`` in ``text``: "" when the text ends
    there and is ``final``, None when it has not come yet."""
    after = line_end + 1
    if after >= len(text):
        return "" if final else None
    newline = text.find("\n", after)
    return text[after:] if newline == -1 else text[after:newline]


def name_and_argline(lang: str) -> tuple[str, str]:
    """A call's name (the langtag's first word) and argument line (the rest)."""
    words = lang.split(None, 1)
    return words[0], words[1] if len(words) == 2 else ""


def closed_block(blocks: Blocks, lang: str, content: str, start: int, end: int
                 ) -> Found | None:
    """What a block opened at ``start`` with ``lang`` and closed by the fence that ends at
    ``end`` is reported as, if anything."""
    if blocks == "call":
        if not lang:
            return None
        name, argline = name_and_argline(lang)
        return ToolCall(name, argline, content, None, None, start, FENCED, end)
    if blocks == "codeblock":
        return Codeblock(lang, content, start)
    return None


@dataclass(slots=True)
class Fence:
    """A block that is open."""

    ticks: int
    """How many backticks (or tildes) opened it."""
    lang: str
    start: int
    body: int
    container: bool
    """It may hold examples: it holds documents, or held a nested block."""
    line: int
    """1-based line of ``start``; 0 until counted (only a block that outlives its region, or
    is reported, needs one)."""
    nested: list[int]
    pending_close: int | None = None
    """A bare fence whose next line decides (where its line starts)."""
    fallback: int | None = None
    """The first bare fence that was read as opening a nested block although it could have
    closed this one (its offset): if the block never closes, it closes there."""
    marker: str = "```"
    """``````` or ``~~~``: what its fences are made of (the other kind is content)."""
    viewer: bool = False
    """Read as a markdown viewer reads it: a bare fence that could close it closes it."""
    held_nested: bool = False
    """A nested block was opened in it."""

    def action(self, count: int, info: str, char: str, text: str = "", line_end: int = -1,
               final: bool = True) -> int:
        """What a fence line does inside this block (see :func:`line_action`)."""
        return line_action(char, count, info, self.marker[0], self.ticks,
                           self.nested[-1] if self.nested else 0, self.container, text,
                           line_end, final)

    def nests(self, action: int, ticks: int, at: int) -> bool:
        """Take a nested block's opening or closing (at the line starting at ``at``);
        whether ``action`` was one."""
        if action == CLOSES_NESTED:
            self.nested.pop()
        elif action == OPENS:
            self.nested.append(ticks)
            self.held_nested = True
            self.container = not self.viewer
        elif action == OPENS_EXAMPLE:
            if self.fallback is None:
                self.fallback = at
            self.nested.append(self.ticks)
        else:
            return False
        return True

    @property
    def held_examples(self) -> bool:
        """Whether a block that holds no file held nested blocks: a markdown viewer ends it
        at the first bare fence, so the blocks after that are its text only in our reading,
        and each is reported (a file's or document's examples are its text)."""
        return self.held_nested and not (self.lang and holds_a_file(self.lang))


def opens_container(ticks: int, lang: str) -> bool:
    """Whether a block opened by ``ticks`` fence characters and ``lang`` may hold examples
    from the start (one opened with more than three is closed only by as many)."""
    return ticks == 3 and holds_documents(lang)
