"""Spilling huge tool results to files, so they do not crowd out the conversation.

A result whose text counts more than a limit is written whole, byte for byte, to a new file
in the conversation's ``outputs`` folder (``outputs/003-shell.txt``); the model is shown its
start and its end, a line saying what was cut between them, and how to read the rest with
the read tool (the call written out, with a line range, in the conversation's call format).

Where the files go is decided once, apart from the spilling: :func:`outputs_folder` gives a
conversation's folder (its ``outputs`` subfolder, or one temporary folder per process for a
conversation in memory), which must exist before the session starts, since the read tool
refuses paths outside the session's roots and the folder has to be one of them. Then
:func:`spill` takes that folder explicitly, holds no state, and writes nowhere else.

The lines counted and the line numbers shown are those of the read tool (``str.splitlines``,
so ``\\r`` and the other Unicode line breaks end lines too), so a range given here reads
the lines it names.
"""

from __future__ import annotations

import atexit
import bisect
import contextlib
import os
import re
import shutil
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..accounting.tokens import TokenCounter
from ..message import Message
from ..parsing import MARKDOWN, FormatLike, UnrepresentableCall
from ..sandbox import make_scratch
from ..tools.builtin.read import MAX_BYTES as READ_MAX_BYTES
from ..tools.builtin.read import MAX_LINE_CHARS as READ_MAX_LINE_CHARS
from ..tools.builtin.read import MAX_LINES as READ_MAX_LINES
from ..tools.builtin.read import tool as read_tool
from ..tools.runtime.file_io import BINARY_SNIFF
from ..tools.spec import render_call
from .conversation import PRIVATE_FILE, private_folder

OUTPUTS = "outputs"
"""The subfolder of a conversation's folder that holds its spilled results."""
HEAD_SHARE = 0.4
"""At most this share of the limit, in tokens, goes to the start of the output shown…"""
TAIL_SHARE = 0.4
"""…and this share to its end; the rest is left for the notes and as a margin."""
PIECE_SHARE = 0.5
"""The read call offered asks for about this share of the limit, so its result fits."""

_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
"""The characters that end a line for ``str.splitlines``, and so for the read tool."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_NUMBERED = re.compile(r"(\d+)-")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SHRINK = 0.9
_MARGIN = 0.8
"""The share of the room the notes leave that the start and the end may take at most."""
_TRIES = 20


# -- where the files go ----------------------------------------------------------------


def outputs_folder(conversation_folder: Path | None) -> Path:
    """The folder spilled results of a conversation go to, created private (0o700), as an
    absolute real path: ``conversation_folder / "outputs"``, or, for a conversation in memory
    (``None``), one temporary folder made once per process (``fencecall-outputs-PID-…`` in
    the temporary directory) and removed when the process exits (a later fencecall removes
    it where the process was killed). Give it to the session as a root (``extra_roots``) so
    the read tool may read what was spilled there."""
    if conversation_folder is None:
        return _memory_outputs()
    folder = conversation_folder / OUTPUTS
    private_folder(folder)
    return folder.resolve()


_memory_lock = threading.Lock()
_memory_folder: Path | None = None


def _memory_outputs() -> Path:
    global _memory_folder
    with _memory_lock:
        if _memory_folder is None or not _memory_folder.is_dir():
            folder = make_scratch(OUTPUTS).resolve()  # mkdtemp: 0o700 already
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            _memory_folder = folder
        return _memory_folder


# -- spilling --------------------------------------------------------------------------


def spill(result: Message, outputs: Path, limit_tokens: int, counter: TokenCounter, *,
          fmt: FormatLike = MARKDOWN) -> Message:
    """``result`` itself when its content counts at most ``limit_tokens`` with ``counter``;
    otherwise a copy whose content shows the start and the end of the output, what was cut
    between them, and where the whole output was saved: a new file in ``outputs`` (a folder
    from :func:`outputs_folder`, made private if it is not) holding the content exactly, as
    the bytes it was decoded from with ``surrogateescape``. The copy keeps every field of
    ``result`` and adds ``metadata["spilled"]``: ``{"path", "bytes", "lines", "tokens"}``
    (of the whole output). The read call offered is written in ``fmt``, the format the
    model calls tools in.

    The new content counts under the limit whenever the limit leaves room for the notes
    (about 150 tokens with their path); below that it holds the notes alone.
    """
    if limit_tokens < 1:
        raise ValueError(f"limit_tokens must be 1 or more, got {limit_tokens}")
    content = result.content
    tokens = counter.count(content)
    if tokens <= limit_tokens:
        return result
    data = _encode(content)
    path = _write_new(outputs, _tool_name(result), data)
    shown = _Shortened(content, data, tokens, path, limit_tokens, counter, fmt).text()
    spilled = {"path": str(path), "bytes": len(data), "lines": len(content.splitlines()),
               "tokens": tokens}
    return replace(result, content=shown, metadata={**result.metadata, "spilled": spilled})


class Spiller:
    """Saves each result that takes more than ``limit_tokens`` (see :func:`spill`). The
    folder is made on the first, in the conversation's folder or a private one, and
    ``allow_reading`` gives the tools read access to it then."""

    def __init__(self, limit_tokens: int, counter: TokenCounter,
                 conversation_folder: Path | None, allow_reading: Callable[[Path], None],
                 fmt: FormatLike = MARKDOWN):
        self._limit, self._counter, self._fmt = limit_tokens, counter, fmt
        self._conversation_folder, self._allow_reading = conversation_folder, allow_reading
        self._outputs: Path | None = None

    def __call__(self, result: Message) -> Message:
        """``result``, or its start and end with the path of the file holding all of it."""
        if self._counter.count(result.content) <= self._limit:
            return result
        if self._outputs is None:
            self._outputs = outputs_folder(self._conversation_folder)
            self._allow_reading(self._outputs)
        return spill(result, self._outputs, self._limit, self._counter, fmt=self._fmt)


def _tool_name(result: Message) -> str:
    name = result.tool or (result.call.tool if result.call is not None else None) or "output"
    return _UNSAFE.sub("_", name).strip("._-")[:40] or "output"


def _write_new(folder: Path, tool: str, data: bytes) -> Path:
    """A new file in ``folder``, ``NNN-TOOL.txt`` numbered after the highest there, holding
    ``data``. Created with O_EXCL (and never through a link), so an existing name, or a
    link put in the folder's place, is skipped for the next number instead of written."""
    private_folder(folder)
    folder = folder.resolve()
    taken = (_NUMBERED.match(entry.name) for entry in os.scandir(folder))
    number = max((int(match.group(1)) for match in taken if match), default=0)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        number += 1
        path = folder / f"{number:03d}-{tool}.txt"
        try:
            fd = os.open(path, flags, PRIVATE_FILE)
        except FileExistsError:
            continue
        break
    try:
        os.fchmod(fd, PRIVATE_FILE)  # whatever the umask
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
        raise
    os.close(fd)
    return path


def _encode(text: str) -> bytes:
    """The bytes ``text`` was decoded from: UTF-8, with the lone surrogates that
    ``surrogateescape`` makes of undecodable bytes turned back into those bytes. Any other
    lone surrogate (which no decoding of bytes yields) is kept as ``surrogatepass`` writes
    it, so nothing is dropped."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        pass
    out = bytearray()
    position = 0
    for match in _SURROGATE.finditer(text):
        out += text[position:match.start()].encode("utf-8")
        code = ord(match.group())
        out += bytes([code - 0xDC00]) if 0xDC80 <= code <= 0xDCFF \
            else match.group().encode("utf-8", "surrogatepass")
        position = match.end()
    out += text[position:].encode("utf-8")
    return bytes(out)


def _ends_line(text: str) -> bool:
    return text[-1:] in _BREAKS if text else True


class _Shortened:
    """The text shown in place of an output: its start, a note on what was cut, its end,
    and where the whole is."""

    def __init__(self, content: str, data: bytes, tokens: int, path: Path, limit: int,
                 counter: TokenCounter, fmt: FormatLike):
        self.content = content
        self.data = data
        self.tokens = tokens
        self.path = path
        self.limit = limit
        self.counter = counter
        self.fmt = fmt
        self.bounds = [0]
        """Where each line ends (and the next starts), from 0 to ``len(content)``."""
        for line in content.splitlines(keepends=True):
            self.bounds.append(self.bounds[-1] + len(line))
        self.lines = len(self.bounds) - 1
        self.chars_per_token = len(content) / max(tokens, 1)

    def text(self) -> str:
        frame = self.counter.count(self._compose(0, len(self.content), worst=True))
        # the start and the end share what the notes leave (with a margin), as the limit's
        # shares at most
        scale = min(1.0, max(0, self.limit - frame) * _MARGIN
                    / (self.limit * (HEAD_SHARE + TAIL_SHARE)))
        head_budget = int(self.limit * HEAD_SHARE * scale)
        tail_budget = int(self.limit * TAIL_SHARE * scale)
        while True:
            end = self._head_end(head_budget)
            start = self._tail_start(tail_budget, end)
            shown = self._compose(end, start)
            if (head_budget == 0 and tail_budget == 0) or self.counter.count(shown) <= self.limit:
                return shown
            head_budget, tail_budget = int(head_budget * 0.7), int(tail_budget * 0.7)

    # -- choosing the cuts

    def _head_end(self, budget: int) -> int:
        """Where the start shown ends: at a line's end, unless that would keep less than
        half of what fits (one long line), then mid-line."""
        chars = min(int(budget * self.chars_per_token), len(self.content))
        for _ in range(_TRIES):
            if chars <= 0 or budget <= 0:
                return 0
            line_end = self.bounds[bisect.bisect_right(self.bounds, chars) - 1]
            end = line_end if line_end * 2 >= chars else chars
            found = self.counter.count(self.content[:end])
            if found <= budget:
                return end
            chars = min(end - 1, int(end * budget / found * _SHRINK))
        return 0

    def _tail_start(self, budget: int, floor: int) -> int:
        """Where the end shown starts (not before ``floor``): at a line's start, unless that
        would keep less than half of what fits, then mid-line."""
        size = len(self.content)
        chars = min(int(budget * self.chars_per_token), size - floor)
        for _ in range(_TRIES):
            if chars <= 0 or budget <= 0:
                return size
            start = size - chars
            line_start = self.bounds[bisect.bisect_left(self.bounds, start)]
            if (size - line_start) * 2 < chars:
                line_start = start
            found = self.counter.count(self.content[line_start:])
            if found <= budget:
                return line_start
            kept = size - line_start
            chars = min(kept - 1, int(kept * budget / found * _SHRINK))
        return size

    # -- writing it

    def _compose(self, end: int, start: int, *, worst: bool = False) -> str:
        """The text shown with the start up to ``end`` and the end from ``start``;
        ``worst``: the notes alone, with numbers as long as they can get."""
        head, tail = ("", "") if worst else (self.content[:end], self.content[start:])
        parts = [head, "" if _ends_line(head) else "\n", self._cut_note(end, start), "\n",
                 tail, "" if _ends_line(tail) else "\n", "\n", self._closing(end, start)]
        return "".join(parts)

    def _hidden(self, end: int, start: int) -> tuple[int, int, bool, bool]:
        """The first and last line not shown whole, and whether each is partly shown."""
        first = min(bisect.bisect_right(self.bounds, end), max(self.lines, 1))  # 1-based
        last = bisect.bisect_left(self.bounds, start)  # the line ending at/after ``start``
        return (first, max(first, last), self.bounds[first - 1] != end,
                start != self.bounds[min(last, self.lines)])

    def _cut_note(self, end: int, start: int) -> str:
        size = len(_encode(self.content[end:start]))
        first, last, head_partial, tail_partial = self._hidden(end, start)
        if start <= end:
            return "[... nothing cut ...]"
        if not head_partial and not tail_partial:
            count = last - first + 1
            which = f"line {first}" if count == 1 else f"lines {first}-{last}"
            return f"[... {count} line{'s' * (count != 1)} cut: {which}, {size} bytes ...]"
        if first == last:
            where = {(True, True): "the middle", (True, False): "the end",
                     (False, True): "the start"}[head_partial, tail_partial]
            return f"[... {size} bytes cut: {where} of line {first} ...]"
        parts = []
        whole_first = first + head_partial
        whole_last = last - tail_partial
        if head_partial:
            parts.append(f"the end of line {first}")
        if whole_first == whole_last:
            parts.append(f"line {whole_first}")
        elif whole_first < whole_last:
            parts.append(f"lines {whole_first}-{whole_last}")
        if tail_partial:
            parts.append(f"the start of line {last}")
        listed = ", ".join(parts[:-1]) + " and " + parts[-1]
        return f"[... {size} bytes cut: {listed} ...]"

    def _closing(self, end: int, start: int) -> str:
        first, last, _, _ = self._hidden(end, start)
        lines = f"{self.lines} line{'s' * (self.lines != 1)}"
        summary = (f"This output was too long to show whole ({lines}, "
                   f"{len(self.data)} bytes, about {self.tokens} tokens): above are its start "
                   f"and its end. All of it is saved in {self.path}")
        unreadable = ("it holds NUL bytes, which the read tool does not show"
                      if b"\x00" in self.data[:BINARY_SNIFF] else
                      f"it is over the read tool's limit of {READ_MAX_BYTES} bytes"
                      if len(self.data) > READ_MAX_BYTES else None)
        if unreadable is not None:
            return (f"{summary}; {unreadable}, so look at parts of it with other tools "
                    f"(such as a shell's head, tail, grep or sed -n '{first},{last}p').")
        call = self._read_call(first, min(last, first + self._piece(end, start) - 1))
        longest = max(self.bounds[i + 1] - self.bounds[i] for i in range(first - 1, last))
        long_lines = (f" The read tool shows lines over {READ_MAX_LINE_CHARS} characters "
                      "cut in the middle." if longest > READ_MAX_LINE_CHARS else "")
        return (f"{summary}.{long_lines} Read what was cut with the read tool, a piece at a "
                f"time, starting with:\n{call}")

    def _piece(self, end: int, start: int) -> int:
        """How many lines to read at a time for a result of about PIECE_SHARE of the limit,
        from the density of what was cut."""
        first, last, _, _ = self._hidden(end, start)
        cut_tokens = self.tokens * max(start - end, 1) / max(len(self.content), 1)
        per_line = cut_tokens / (last - first + 1)
        return max(1, min(READ_MAX_LINES, int(self.limit * PIECE_SHARE / max(per_line, 1e-9))))

    def _read_call(self, first: int, last: int) -> str:
        """The read call for lines ``first`` to ``last`` of the file, as ``_read_on`` in the
        read tool writes one: named arguments, or, in markdown, the words on the langtag
        (where a path with a space cannot take a range: then the path alone)."""
        path = str(self.path)
        try:
            return render_call(read_tool, {"path": path, "start": first, "end": last},
                               self.fmt)
        except (UnrepresentableCall, ValueError):
            pass
        if any(c.isspace() for c in path):
            return render_call(read_tool, {"path": path}, self.fmt)
        return render_call(read_tool, {"path": f"{path} {first} {last}"}, self.fmt)
