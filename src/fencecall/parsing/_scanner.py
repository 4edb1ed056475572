"""The one scanning engine behind every parser entry point.

Text arrives in chunks. Only complete lines are scanned, and each exactly once: a region of
new complete lines is searched for the lines that matter (fences, thinking tags, call
openers), so prose costs little and feeding a reply chunk by chunk costs O(total length).
Parsing a whole text is the same machine fed once, which is why whole-text and streaming
results are equal by construction.

The engine is layered, each layer a module with one job:

* :mod:`._fences`: the fence grammar, two functions that every path asks: what a fence line
  does (:func:`~._fences.line_action`) and what a closed block becomes
  (:func:`~._fences.closed_block`);
* :mod:`._kept`: offsets, the text still needed, and line numbers (counted only for a
  diagnostic);
* :mod:`._state`: what is open (a block, thinking, a call tag or span) and the diagnostics
  about what will not run;
* :mod:`._fast`: the fast loop over fence lines; :mod:`._regions`: the general step over a
  region of lines, and the end of the text;
* this module: feeding, which takes a line at a time where it can and lets quiet lines wait.

Other rules:

* ``<thinking>…</thinking>`` and ``<think>…</think>`` are skipped; an unclosed one hides the
  rest of the text; a closing tag without an opening one is dropped.
* A block is final once its closing fence's line is complete (or, where the line after a bare
  fence decides, once that line has begun), so a streaming consumer never sees a half-written
  block.
* ``\r\n`` and lone ``\r`` line ends are read as ``\n`` (offsets are those of the normalised
  text), so no carriage return reaches a command.
* Tag and span syntaxes (:mod:`._syntax`) are found outside blocks and thinking. One that never
  ends, or cannot be read, becomes a :class:`~.model.Diagnostic`, and the text after its
  opener is read again, so a broken call never hides the calls after it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._fences import CLOSES, CONTENT, OPENS, WAITS, Blocks, Fence, Found, line_action
from ._regions import RegionScanner
from ._state import FENCE, OUTSIDE, TAG, THINK
from ._syntax import SpanSyntax, TagSyntax
from .xmlcalls import CDATA_CLOSE, CDATA_OPEN

__all__ = ["Found", "Scanner"]

_BACKTICKS = ("```",)
"""What can complete something inside a backtick block (its quiet strings)."""
_TILDES = ("~~~",)
_NOTHING: list[Found] = []
"""What :meth:`Scanner._step_line` returns when a line completes nothing; never added to."""
_STEP_LIMIT = 1024
"""New lines up to this length are taken a line at a time where they can be (see
:meth:`Scanner._take_lines`); longer ones, such as a whole text, are scanned as one region."""


class Scanner(RegionScanner):
    """Finds code blocks and tool calls in text fed chunk by chunk.

    ``feed`` returns what became certain with that chunk; ``finish`` returns the rest once the
    text is complete. ``blocks`` says how code blocks are reported: as :class:`Codeblock`,
    as :class:`ToolCall` (blocks with a langtag, named by its first word), or not at all (the
    ``xml`` format tracks them only to ignore calls written inside them). ``tags`` and
    ``spans`` are the format's other call syntaxes. :attr:`diagnostics` collects the calls
    that were meant but will not run.
    """

    def __init__(self, *, blocks: Blocks = "codeblock", tags: Sequence[TagSyntax] = (),
                 spans: Sequence[SpanSyntax] = (), fast_paths: bool = True):
        super().__init__(blocks, tags, spans, fast_paths)
        self._partial: list[str] = []
        self._carriage_return = False
        self._plain = True
        """No carriage return is held back and the text is not finished: a chunk without a line
        end only needs to be kept (the fast path of :meth:`feed`)."""
        self._clean: list[str] = []
        """Complete lines not taken yet, each without its last newline: they hold none of the
        strings in :attr:`_quiet`, so they complete nothing (see :meth:`feed`)."""
        self._quiet: tuple[str, ...] | None = self._tables.outside_quiet
        """The strings that can complete something, or change what can, in the current mode
        (outside blocks, ``<think`` waits: see :meth:`_pass_clean`); new lines without any of
        them wait in :attr:`_clean`. None: every line is taken at once (a span, or a bare
        fence whose next line decides)."""
        self._finished = False

    @property
    def reports_codeblocks(self) -> bool:
        """Whether :meth:`feed` and :meth:`finish` report code blocks (else tool calls only)."""
        return self._blocks == "codeblock"

    @property
    def settled(self) -> int:
        """Every call and diagnostic that starts before this offset has been reported: the
        start of what is still open, or the end of the complete lines scanned."""
        if self._clean:
            self._pass_clean()
        held = (self._fence, self._think, self._tag, self._span)
        return min((item.start for item in held if item is not None), default=self._offset)

    # -- feeding -------------------------------------------------------------------------
    #
    # A model streams many small chunks; most hold no line end, and most lines hold nothing
    # that matters in the current mode. So ``feed`` costs about what the minimal consumer of
    # the benchmarks costs: a chunk without a line end is appended to :attr:`_partial`; at a
    # line end the new lines are joined, and when they hold none of the strings that can
    # complete something in the current mode (:attr:`_quiet`) they wait in :attr:`_clean`,
    # untouched, until a line that can comes (or :attr:`settled` or ``finish`` asks). A line
    # that can, if it is a fence line or prose, takes :meth:`_step_line`, which does for that
    # one line what a scan does; anything else is scanned as a region. Lines that wait
    # complete nothing, so every call is still reported with the chunk that completes it.

    def feed(self, chunk: str) -> list[Found]:
        """Add text; return the blocks and calls that are now complete."""
        if "\n" not in chunk:
            if "\r" not in chunk and self._plain:
                self._partial.append(chunk)  # no line is complete yet
                return []
            return self._feed_other(chunk)
        if "\r" in chunk or not self._plain:
            return self._feed_other(chunk)
        before, _, after = chunk.rpartition("\n")
        partial = self._partial
        partial.append(before)
        lines = "".join(partial)  # the new complete lines, without their last newline
        self._partial = [after]
        quiet = self._quiet
        if quiet is not None:
            for needle in quiet:
                if needle in lines:
                    break
            else:
                self._clean.append(lines)  # they can complete nothing
                return []
        return self._take_lines(lines)

    def _feed_other(self, chunk: str) -> list[Found]:
        """:meth:`feed` for a chunk with a carriage return, one after a carriage return that
        ended a chunk, and one after :meth:`finish`."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        chunk = self._normalise(chunk)
        before, newline, after = chunk.rpartition("\n")
        if not newline:
            if chunk:
                self._partial.append(chunk)
            return []
        self._partial.append(before)
        lines = "".join(self._partial)
        self._partial = [after] if after else []
        quiet = self._quiet
        if quiet is not None and not any(needle in lines for needle in quiet):
            self._clean.append(lines)
            return []
        return self._take_lines(lines)

    def _take_lines(self, lines: str) -> list[Found]:
        """New complete lines (without the last newline), one of which can complete
        something. Short ones go a line at a time while :meth:`_step_line` can take them,
        and the lines after one that can wait in :attr:`_clean` when they can; what is left
        is scanned as a region."""
        out: list[Found] = []
        if not self._fast_paths:
            pass
        elif "\n" not in lines:  # the common case: one line
            found = self._step_line(lines, None)
            if found is not None:
                return found if found else out
        elif len(lines) <= _STEP_LIMIT:
            while True:
                line, newline, rest = lines.partition("\n")
                found = self._step_line(line, rest if newline else None)
                if found is None:
                    break  # the general rules take it from this line
                if found:
                    out += found
                if not newline:
                    return out
                lines = rest
                quiet = self._quiet
                if quiet is None:
                    break
                for needle in quiet:
                    if needle in rest:
                        break
                else:
                    self._clean.append(rest)
                    return out
        if self._clean:
            self._pass_clean()
        out += self._scan(lines + "\n", final=False)
        self._set_quiet()
        return out

    def _pass_clean(self) -> None:
        """Take the lines waiting in :attr:`_clean`. What is open keeps them; outside
        blocks they only move the offset on, unless they open thinking (which completes
        nothing, so it may wait, but changes what the next lines are)."""
        clean = self._clean
        clean.append("")
        lines = "\n".join(clean)
        self._clean = []
        mode = self._mode
        if mode is OUTSIDE:
            if "<think" in lines:
                found = self._scan(lines, final=False)
                assert not found, "a line without a fence, tag or span completes nothing"
                self._set_quiet()
                return
        else:  # what is open keeps its text
            self._keep(lines)
        self._offset += len(lines)
        self._lines += lines.count("\n")

    def _set_quiet(self) -> None:
        """Set :attr:`_quiet` for the mode the scanner is in now."""
        mode = self._mode
        quiet: tuple[str, ...] | None
        if mode is OUTSIDE:
            quiet = self._tables.outside_quiet
        elif mode is FENCE:
            fence = self._fence
            assert fence is not None
            quiet = None if fence.pending_close is not None else (
                _BACKTICKS if fence.marker == "```" else _TILDES)
        elif mode is THINK:
            assert self._think is not None
            quiet = (self._think.close,)
        elif mode is TAG:
            tag = self._tag
            assert tag is not None
            quiet = (CDATA_CLOSE,) if tag.in_cdata else (tag.syntax.closing, CDATA_OPEN)
        else:
            quiet = None  # a span's end is found by looking at every character
        self._quiet = quiet

    def _step_line(self, line: str, rest: str | None) -> list[Found] | None:
        """Take the next complete ``line`` (without its newline; ``rest``: the complete lines
        after it, if any) outside blocks or in one, exactly as a scan would, without setting
        up a region. None when the general rules must take it: another needle on the line,
        a glued fence, a fence that closes mid-line, a bare fence that may open an example,
        another mode."""
        if self._mode is OUTSIDE:
            return self._step_outside(line)
        fence = self._fence
        if self._mode is not FENCE or fence is None or fence.pending_close is not None \
                or fence.marker != "```":
            return None
        stripped = line.lstrip(" \t")
        if stripped.startswith("```"):
            info = stripped.lstrip("`")
            ticks = len(stripped) - len(info)
            # the lines after it are whole: an empty ``rest`` is a blank line
            action = fence.action(ticks, info, "`", "" if rest is None else rest, -1,
                                  rest is not None)
            if action == CLOSES:
                return self._step_close(fence, line)
            if action == WAITS:
                return None
            if self._clean:
                self._pass_clean()
            if not fence.nests(action, ticks, self._offset) and action != CONTENT:
                return None  # split, or closed with thinking after it: the general rules
        if self._clean:
            self._pass_clean()
        self._keep(line + "\n")
        self._offset += len(line) + 1
        self._lines += 1
        return _NOTHING

    def _step_outside(self, line: str) -> list[Found] | None:
        """:meth:`_step_line` outside blocks."""
        for needle in self._tables.other_needles:
            if needle in line:
                return None
        if self._clean:
            self._pass_clean()
            if self._mode is not OUTSIDE:
                return None
        stripped = line.lstrip(" \t")
        if stripped.startswith("```"):
            info = stripped.lstrip("`")
            ticks = len(stripped) - len(info)
            action = line_action("`", ticks, info, "`", 0, 0, False)
            if action != OPENS and action != CONTENT:
                return None  # split, or thinking
            if action == OPENS:  # else ```x``` inline: prose
                base = self._offset
                self._fence = self._new_fence(ticks, info.strip(),
                                              base + len(line) - len(stripped),
                                              base + len(line) + 1, self._lines_before() + 1)
                self._mode = FENCE
                self._quiet = _BACKTICKS
        self._offset += len(line) + 1
        self._lines += 1
        return _NOTHING

    def _step_close(self, fence: Fence, line: str) -> list[Found]:
        """Close ``fence`` at ``line``, the next complete line (for :meth:`_step_line`)."""
        clean = self._clean
        if self._kept or fence.body != self._offset:
            if clean:
                self._pass_clean()
            close = self._offset
            content = self._slice(fence.body, close - 1) if close - 1 > fence.body else ""
        elif clean:  # the whole body waits there
            content = "\n".join(clean)
            self._clean = []
            close = self._offset + len(content) + 1
            self._lines += content.count("\n") + 1
        else:
            content = ""
            close = self._offset
        self._offset = close + len(line) + 1
        self._lines += 1
        self._fence = None
        self._mode = OUTSIDE
        self._quiet = self._tables.outside_quiet
        self._kept = []
        out: list[Found] = []
        self._closed(fence, fence.lang, fence.start, content, close + len(line), out)
        return out

    def finish(self) -> list[Found]:
        """Declare the text complete; return what the end of the text completed."""
        if self._finished:
            return []
        if self._clean:
            self._pass_clean()
        if self._carriage_return:
            self._partial.append("\n")
            self._carriage_return = False
        tail = "".join(self._partial)
        self._partial = []
        self._finished = True
        self._plain = False
        out = self._scan(tail, final=True)
        self._end_of_text(out)
        return out

    def parse(self, text: str) -> list[Found]:
        """``feed(text)`` then ``finish()``, for a text known to be whole: it is scanned as
        one final region, so its last line is not held back and nothing is joined or
        copied (on a fresh scanner; otherwise it is exactly those two calls)."""
        if self._offset or self._partial or self._clean or self._carriage_return \
                or self._finished:
            return self.feed(text) + self.finish()
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        self._finished = True
        self._plain = False
        out = self._scan(text, final=True)
        self._end_of_text(out)
        return out

    def _normalise(self, chunk: str) -> str:
        """``\r\n`` and lone ``\r`` as ``\n``; a ``\r`` ending a chunk waits for the next
        one, which may start with the ``\n`` of the same line end."""
        if self._carriage_return:
            chunk = "\r" + chunk
            self._carriage_return = False
        if chunk.endswith("\r"):
            chunk = chunk[:-1]
            self._carriage_return = True
        self._plain = not self._carriage_return
        return chunk.replace("\r\n", "\n").replace("\r", "\n")
