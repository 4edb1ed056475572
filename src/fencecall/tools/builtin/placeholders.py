"""Placeholders: lines a model writes for text it left out ("# ... rest of the code").

Saved over a real file, such a line would replace the text it stands for, so save and append
refuse it (files.refusal). A line's *comment* is its text inside comment syntax (``#``, ``//``,
``/* */``, JSX's ``{/* */}``, ``<!-- -->``, ``--``, ``;``, ``%``, a block comment's `` * ``
lines, Python's triple quotes); its *words* are its letters; an *ellipsis* is three dots or
"…". A line is a placeholder when:

1. Its comment begins with an ellipsis followed only by placeholder words ("# ... rest of
   the code ...", "// ... other methods", "# ... more tests"). Or its comment is an ellipsis
   alone, bare or in one pair of brackets ("# ...", "// …", "/* ... */", "<!-- ... -->",
   "# [...]"), or an ellipsis before a short phrase on what was left out (up to eight words,
   no punctuation, led by "rest", "existing", "remaining", "other", "previous", "original",
   "more", "unchanged" or "same": "// ... rest of the component", "<!-- ... rest of the
   HTML ... -->", "# ... other routes"), unless a comment line right above or below says
   something or the ellipsis is set off by two spaces or more ("#     ..."): there it
   belongs to the comment (an example in it, a list trailing off).
2. Its comment, made only of placeholder words, says what was left out: the rest of something
   ("// rest of file unchanged", "<!-- rest of content -->"), code said to be unchanged
   ("# code remains the same", "# other methods unchanged", "# (unchanged)": one word in
   brackets), or existing or remaining code ("/* existing code */", "# remaining
   implementation"). A comment naming data or a part ("# unchanged lines", "# the existing
   class", "# the remaining functions"), of one word ("# Rest", "# unchanged") or saying more
   ("# ... and then we loop", "# ...then retry") is an ordinary comment, and so is one the
   comment above runs on into, as that ends in a comma, "the", "and"... or is long (50
   characters) with no full stop: "# ...so return the" then "# original code unchanged.".
3. Outside comments, in code: an ellipsis alone, bare or in one pair of brackets ("...",
   "[...]", "(...)"), or beginning the line before placeholder words or a phrase as in rule
   1 ("... rest of the code", "... other routes"). Not: a spread (JavaScript's "...rest,": an
   ellipsis glued to one word); an ellipsis before "," ")" or ";" (C's variadic "...);",
   Python's "...,"); Python's Ellipsis as a statement or an element, a "..." line after a
   line ending in ":" (a body), after a docstring in a body, or after a line ending in "," or
   an opening bracket (an element, as in a "Tuple[" over several lines); YAML's document end
   "...".
4. In prose (Markdown, reStructuredText, text, AsciiDoc, Org, TeX) an ellipsis alone is prose
   (a pause, output left out of an example), and so are "# ...", "- ..." (a heading, an
   item) and an ellipsis glued to one word. There a line is a placeholder in an HTML comment
   (rules 1 and 2), when it begins with an ellipsis and says what was left out ("... rest of
   the document unchanged", "... rest of the README"), or when it says text is unchanged
   ("(rest of the file unchanged)"); "## Existing code" is a heading.
5. Never: a doctest line ("..." after ">>>"), a line inside a Python triple-quoted string (a
   test's fixture may hold placeholders on purpose), a prose line inside a Markdown fence or
   indented four spaces or more (a code or literal block: an example may show "# ... your
   code" or "...remaining output omitted..."). The kind of file comes from its suffix.

Beyond rule 1's phrase, a line holding anything but placeholder words, ellipses, digits,
brackets and punctuation (a quote, "=", another word, more than twelve words) is not a
placeholder: "x = ...", "foo(...)", 'print("...")', "def f(): ...", "[...] as the paper
says". Real code has the rare false alarm still: "# ..." alone between statements, meaning
"and so on", reads as a placeholder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import PurePath


class Kind(Enum):
    """How a file's lines are read: what an ellipsis alone is, which syntax holds comments."""

    CODE = "code"
    PYTHON = "python"
    YAML = "yaml"
    PROSE = "prose"


_SUFFIXES = {".py": Kind.PYTHON, ".pyi": Kind.PYTHON, ".pyw": Kind.PYTHON,
             ".yml": Kind.YAML, ".yaml": Kind.YAML} | dict.fromkeys(
    (".md", ".markdown", ".mdx", ".rst", ".txt", ".text", ".adoc", ".org", ".tex"), Kind.PROSE)


def kind_of(path: PurePath) -> Kind:
    return _SUFFIXES.get(path.suffix.lower(), Kind.CODE)


# Comment syntax around a placeholder: "#", "//", "/* */", JSX's "{/* */}", "<!-- -->", "--"
# (not "---" nor a command line's "--flag"), ";", "%", a block comment's " * " lines and
# triple-quoted strings. In prose only an HTML comment is one; "#", ">", "-", "*" and "+" are
# markup there. (Every pattern a line meets runs in linear time: no nested repeats.)
_OPENER = re.compile(
    r"""^(?:<!--|\{/\*+|/\*+|//+|#+|--(?![-\w])|;+|%+|\*(?!\S)|"{3}|'{3})\s*""")
_CLOSERS = ("-->", "*/}", "*/", '"""', "'''")
_HTML_OPENER = re.compile(r"^<!--\s*")
_HTML_CLOSERS = ("-->",)
_MARKUP = re.compile(r"^[#>*+\s-]+")
_BLOCKS = {Kind.CODE: (("/*", "*/"), ("<!--", "-->")), Kind.PROSE: (("<!--", "-->"),)}
_BLOCK_OPENER = re.compile(r"""^(?:/\*|<!--|"{3}|'{3})""")

_ELLIPSIS = re.compile(r"\.{3,}|…")
_E = r"(?:\.{3}|…)"
_BARE = re.compile(rf"{_E}|\[\s*{_E}\s*\]|\(\s*{_E}\s*\)|\{{\s*{_E}\s*\}}|<\s*{_E}\s*>")
_SPREAD = re.compile(r"\.\.\.[\w$]\S*")
# Rule 1's phrase: an ellipsis, then up to eight words led by one saying what was left out,
# with no punctuation but brackets, an ellipsis and dots inside a name ("main.py").
_PHRASE_HEAD = re.compile(r"[(\[{<]?\s*(?:\.{3}|…)\s*(?:\(\s*)?(?:the\s+)?(rest|existing|"
                          r"remaining|other|previous|original|more|unchanged|same)\b",
                          re.IGNORECASE)
_PHRASE_TAIL = re.compile(r"(?:[\w\s'/()\[\]{}<>-]|…|\.\.\.|\.(?=\w))*")
_PHRASE_WORDS = 8
_BRACKETED = re.compile(r"\(\s*[a-z]+\s*\)|\[\s*[a-z]+\s*\]", re.IGNORECASE)
_PROSE_HEADS = frozenset({"rest", "existing", "remaining"})
_WORD = re.compile(r"[a-z]+")
_FILLER = re.compile(r"[\s\d()\[\]{}<>.,:;!?/*\u2013\u2014-]*")
_TRIPLE_QUOTE = re.compile(r"\"{3}|'{3}")
_COMMENT_AFTER_CODE = re.compile(r"\s#")
# An ellipsis set off inside its comment ("#     ...") is laid out in an example there; a
# comment ending mid-sentence ("so return the"), or long and with no full stop (a paragraph
# wrapped), runs on into the next line.
_WRAPPED = 50
_LAID_OUT = re.compile(r"(?:#+|//+|--|;+|%+|\*)\s{2,}")
_RUNS_ON = re.compile(r"(?:,|\b(?:the|a|an|to|of|and|or|with|for|in|on|so|but|that|which))$",
                      re.IGNORECASE)
_FENCE = re.compile(r"`{3,}|~{3,}")
_EXAMPLE = re.compile(r" {4}|\t")
_MAX_WORDS = 12
_FEW_LINES = 5

# Words a placeholder is made of. _UNCHANGED says text was kept as it was; with a _SUBJECT
# ("code", "rest") it says so of the text left out. "# unchanged lines" names data, not code.
_UNCHANGED = frozenset({"unchanged", "omitted", "elided", "unmodified", "untouched", "snip",
                        "snipped", "truncated"})
_ALONE = _UNCHANGED | {"etc"}
_LEFT_OUT = _ALONE | {"rest", "existing", "remaining", "same"}
_STAYS = frozenset({"before", "remains", "remain", "stays", "stay", "is", "are"})
_CODE_NOUNS = frozenset({
    "code", "function", "functions", "class", "classes", "method", "methods", "module",
    "content", "contents", "implementation", "imports", "body", "logic", "definitions",
    "stuff"})
_SUBJECTS = _CODE_NOUNS | {"rest", "everything"}
# What "existing" or "remaining" stands for in a placeholder: the code, not a part it names.
_WHOLE = frozenset({"code", "implementation", "content", "contents", "logic", "stuff",
                    "imports"})
_PLACEHOLDER_WORDS = _LEFT_OUT | _CODE_NOUNS | frozenset({
    "previous", "original", "other", "more", "old", "your", "additional", "file", "files",
    "line", "lines", "tests", "text", "section", "sections", "document", "here", "below",
    "above", "the", "of", "this", "is", "are", "remains", "remain", "stays", "stay", "as",
    "before", "keep", "kept", "everything", "else", "and", "so", "on", "goes", "go", "to",
    "be", "for", "brevity", "clarity", "simplicity"})


@dataclass(frozen=True)
class _Words:
    """What a line's text is made of, when it is only placeholder words and ellipses."""

    words: tuple[str, ...]
    elided: bool  # it holds an ellipsis
    leading: bool  # an ellipsis comes before any word


def _read(text: str) -> _Words | None:
    lowered = text.lower()
    rest = _ELLIPSIS.sub(" ", lowered)
    words = tuple(_WORD.findall(rest))
    if (len(words) > _MAX_WORDS or not set(words) <= _PLACEHOLDER_WORDS
            or not _FILLER.fullmatch(_WORD.sub("", rest))):
        return None
    first = _ELLIPSIS.search(lowered)
    leading = first is not None and _WORD.search(lowered, 0, first.start()) is None
    return _Words(words, first is not None, leading)


def _phrase(inner: str) -> str | None:
    """The word leading rule 1's phrase, if ``inner`` is one."""
    head = _PHRASE_HEAD.match(inner)
    if head is None or not _PHRASE_TAIL.fullmatch(inner, head.end()):
        return None
    return head.group(1).lower() if len(_WORD.findall(inner.lower())) <= _PHRASE_WORDS else None


def _closed(text: str, closers: tuple[str, ...]) -> str:
    """``text`` without the comment closer it ends in, if any."""
    for closer in closers:
        if text.endswith(closer):
            return text[:-len(closer)].rstrip(" \t*")
    return text


def _unchanged(found: set[str]) -> bool:
    return bool(found & _UNCHANGED) or ("same" in found and bool(found & _STAYS))


def _says_left_out(words: tuple[str, ...], prose: bool) -> bool:
    """Rule 2 (in prose text, only its "unchanged" part: "## Existing code" is a heading)."""
    found = set(words)
    if len(words) < 2:
        return False
    if _unchanged(found) and found & _SUBJECTS:
        return True
    if prose:
        return False
    rest_of = "rest" in words and "of" in words[words.index("rest"):]
    return rest_of or bool(found & {"existing", "remaining"} and found & _WHOLE)


def _placeholder_line(line: str, in_comment: bool) -> bool | None:
    """For only_placeholder: True for a line standing for left-out text ("# ... existing
    code", "[...]"), False for comment syntax alone ("/*", three quotes), None otherwise."""
    inner = _closed(line, _CLOSERS)
    commented = in_comment or inner != line
    inner, marks = _OPENER.subn("", inner)
    commented = commented or bool(marks)
    if not inner:
        return False if commented else None
    text = _read(inner)
    if text is None:
        return None
    said = commented and bool(_LEFT_OUT & set(text.words)) and (
        len(text.words) > 1 or text.words[0] in _ALONE)
    return True if text.elided or said else None


def only_placeholder(text: str) -> str | None:
    """The content, when it is nothing but a placeholder ("# ...", "/* rest unchanged */",
    a bare "..."): writing it would leave a stub where text belongs. Real code is never that:
    a stub function ("def f(): ...") or prose with an ellipsis has other words around it."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or len(lines) > _FEW_LINES:
        return None
    in_comment = _BLOCK_OPENER.match(lines[0]) is not None
    kinds = [_placeholder_line(line, in_comment) for line in lines]
    if None in kinds or True not in kinds:
        return None
    return "\n".join(lines)


class _Line(Enum):
    """What a line is to the rules."""

    PLACEHOLDER = "placeholder"
    ELLIPSIS_COMMENT = "ellipsis comment"  # "# ...": one unless a comment beside it says
    COMMENT = "comment"  # a comment that says something
    OTHER = "other"


def placeholder_lines(text: str, kind: Kind) -> list[tuple[int, str]]:
    """The number (from 1) and stripped text of each placeholder line in ``text``."""
    reader = _Reader(kind)
    lines = text.split("\n")
    seen = [reader.line(line) for line in lines]

    def says(index: int) -> bool:
        return 0 <= index < len(seen) and seen[index] is _Line.COMMENT

    return [(index + 1, lines[index].strip()) for index, what in enumerate(seen)
            if what is _Line.PLACEHOLDER
            or (what is _Line.ELLIPSIS_COMMENT and not says(index - 1) and not says(index + 1))]


def _comment(stripped: str, inner: str, continued: bool) -> _Line:
    """Rules 1 and 2, for the comment ``stripped`` whose text is ``inner``; ``continued``: the
    comment above runs on into this one."""
    if not inner:
        return _Line.OTHER
    text = _read(inner)
    if text is not None and text.words:
        if text.leading:
            return _Line.PLACEHOLDER
        bracketed = _BRACKETED.fullmatch(inner) is not None and text.words[0] in _UNCHANGED
        if not continued and (bracketed or _says_left_out(text.words, prose=False)):
            return _Line.PLACEHOLDER
    elided = _BARE.fullmatch(inner) is not None or _phrase(inner) is not None
    return _Line.ELLIPSIS_COMMENT if elided and not _LAID_OUT.match(stripped) else _Line.COMMENT


def _string_after(quote: str | None, line: str) -> str | None:
    """The Python triple quote still open after ``line``, given the one open before it."""
    position = 0
    while True:
        if quote is None:
            opening = _TRIPLE_QUOTE.search(line, position)
            if opening is None:
                return None
            quote, position = opening.group(), opening.end()
        else:
            end = line.find(quote, position)
            if end < 0:
                return quote
            position = end + len(quote)
            quote = None


@dataclass
class _Reader:
    """Reads a file's lines in order: what a line is depends on the lines above it (a block
    comment, a string or a fence still open, a doctest, the line a "..." is the body of)."""

    kind: Kind
    comment_end: str | None = None  # the closer of the block comment the line is in
    quote: str | None = None  # the Python triple quote of the string the line is in
    fence: str | None = None  # the Markdown fence of the example the line is in
    doctest: bool = False  # the line above was a doctest's
    runs_on: bool = False  # the line above was a comment running on into this line
    code: str | None = None  # Python: the last code line, stripped

    def line(self, line: str) -> _Line:
        stripped = line.strip()
        continued, self.runs_on = self.runs_on, False
        if not stripped:
            return _Line.OTHER
        skipped = self._skipped(stripped) or (
            self.kind is Kind.PROSE and _EXAMPLE.match(line) is not None)
        what = _Line.OTHER if skipped else self._judged(line, stripped, continued)
        if self.kind is Kind.PYTHON and not stripped.startswith("#"):
            self.code = stripped
        return what

    def _skipped(self, stripped: str) -> bool:
        """Rule 5: lines of a doctest, a Python string or a fenced example (noting where
        these begin and end)."""
        self.doctest = stripped.startswith(">>>") or (
            self.doctest and stripped.startswith("..."))
        if self.kind is Kind.PYTHON:
            inside = self.quote is not None
            if inside or not stripped.startswith("#"):
                self.quote = _string_after(self.quote, stripped)
            if inside:
                return True
        if self.kind is Kind.PROSE:
            fence = _FENCE.match(stripped)
            if self.fence is None and fence is not None:
                self.fence = fence.group()
                return True
            if self.fence is not None:
                if stripped.startswith(self.fence) and not stripped.strip(self.fence[0]):
                    self.fence = None
                return True
        return self.doctest

    def _in_block_comment(self, stripped: str) -> bool:
        """Whether the line is inside a block comment opened above; note one it opens."""
        if self.comment_end is not None:
            if self.comment_end in stripped:
                self.comment_end = None
            return True
        for opener, closer in _BLOCKS.get(self.kind, ()):
            if stripped.startswith(opener) and closer not in stripped[len(opener):]:
                self.comment_end = closer
        return False

    def _judged(self, line: str, stripped: str, continued: bool) -> _Line:
        prose = self.kind is Kind.PROSE
        in_comment = self._in_block_comment(stripped)
        closers, opener = (_HTML_CLOSERS, _HTML_OPENER) if prose else (_CLOSERS, _OPENER)
        inner = opener.sub("", _closed(stripped, closers))
        commented = in_comment or inner != stripped
        if prose and not commented:
            inner = _MARKUP.sub("", inner)
        if commented:
            self.runs_on = _RUNS_ON.search(inner) is not None or (
                len(inner) >= _WRAPPED and not inner.endswith((".", ":", "!", "?")))
            return _comment(stripped, inner, continued)
        if _SPREAD.fullmatch(inner):
            return _Line.OTHER
        head = _phrase(inner)
        if head is not None and (not prose or head in _PROSE_HEADS):
            return _Line.PLACEHOLDER
        text = _read(inner)
        if text is None:
            return _Line.OTHER
        if prose:  # rule 4
            found = set(text.words)
            left_out = bool(found & {"rest", "existing", "remaining"}) or _unchanged(found)
            said = (text.leading and left_out) or _says_left_out(text.words, prose=True)
        else:
            said = self._code_placeholder(line, stripped, text)
        return _Line.PLACEHOLDER if said else _Line.OTHER

    def _code_placeholder(self, line: str, stripped: str, text: _Words) -> bool:
        """Rule 3: an ellipsis outside comments, in code."""
        if text.words:
            return text.leading
        if not _BARE.fullmatch(stripped) or self.kind is Kind.YAML:
            return False
        return not (self.kind is Kind.PYTHON and stripped == "..." and self._python(line))

    def _python(self, line: str) -> bool:
        """Whether a Python "..." line is code: the body of the line above (ending in ":"),
        what follows a docstring in a body, or an element (the line above ends in "," or
        opens a bracket)."""
        above = self.code
        if above is None:
            return False
        ends = {above[-1], _COMMENT_AFTER_CODE.split(above, maxsplit=1)[0].rstrip()[-1:]}
        docstring = above.endswith(('"""', "'''")) and line != line.lstrip()
        return docstring or bool(ends & set(":,([{"))
