"""Asking the person at the terminal before a tool changes something.

The question comes after the *complete* call: the tool, the call as the model wrote it
(langtag and argline, or its named arguments as JSON), its whole body, the arguments it was
bound to that the written call does not show (defaults, say), and the preview (a diff for
file edits) where that says something the body does not. All of it goes through
:func:`~fencecall.cli.visible.visible`, so an escape sequence, a carriage return or a bidi
override in a call is shown (``␛[2K``, ``␍``, ``<U+202E>``), never interpreted, and nothing
is read as rich markup. A very long part is shown as its head and tail around a marker line
saying how much is left out; answering ``v`` prints everything and asks again. Where
permission rules can express the call, ``a`` allows it and calls like it for the rest of the
conversation: the narrowest rules (each command of a shell line, each path, the exact code)
are shown before the question and said again once added. ``n`` ends the turn, so the user
says what to do instead before the model is asked again; ``t`` declines and tells the model
why, and the run goes on. What was typed before the question (while the model was still
writing) is thrown away, so it cannot answer it.
"""

from __future__ import annotations

import array
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.text import Text

from ..execution import auto_no, auto_yes
from ..tools import ConfirmFunc, ConfirmRequest, Decline
from ..tools.tool_context import Answer
from .visible import json_visible, visible, visible_text

if TYPE_CHECKING:
    from rich.syntax import Syntax  # pygments: loaded only to show a call for confirmation

MAX_LINES = 60
"""A part of the call longer than this (or than :data:`MAX_CHARS`) is shown cut."""
MAX_CHARS = 6000
HEAD_LINES, HEAD_CHARS = 24, 2400
TAIL_LINES, TAIL_CHARS = 12, 1200
MAX_RULES = 300
"""Characters of the rules an "always" answer would add shown before the call is viewed."""

_LEXERS = {"shell": "bash", "ipython": "python", "python": "python"}


@dataclass(frozen=True, slots=True)
class Part:
    """One part of a confirmation: a label line (may be empty) and a text shown in full."""

    label: str
    text: str
    lexer: str = "text"
    numbered: bool = False


@dataclass(frozen=True, slots=True)
class Excerpt:
    """The head and tail of a long text, and what lies between them."""

    head: str
    tail: str
    tail_line: int
    hidden_lines: int
    hidden_chars: int

    @property
    def marker(self) -> str:
        lines = f"{self.hidden_lines} line{'' if self.hidden_lines == 1 else 's'}"
        return (f"[… {lines} not shown ({self.hidden_chars:,} characters) — answer v to view "
                "the whole call …]")


def excerpt(text: str) -> Excerpt | None:
    """The head and tail of ``text`` if it is too long to show whole, else None.

    The head is the first :data:`HEAD_LINES` lines (at most :data:`HEAD_CHARS` characters),
    the tail the last :data:`TAIL_LINES` lines (at most :data:`TAIL_CHARS`)."""
    if len(text) <= MAX_CHARS and text.count("\n") < MAX_LINES:
        return None
    head_end = 0
    for _ in range(HEAD_LINES):
        newline = text.find("\n", head_end)
        head_end = len(text) if newline < 0 else newline + 1
        if newline < 0:
            break
    head_end = min(head_end, HEAD_CHARS)
    tail_start = len(text) - 1 if text.endswith("\n") else len(text)  # a final \n ends a line
    for _ in range(TAIL_LINES):
        tail_start = text.rfind("\n", 0, tail_start)
        if tail_start < 0:
            break
    tail_start = max(tail_start + 1, len(text) - TAIL_CHARS, head_end)
    hidden = text[head_end:tail_start]
    if not hidden:
        return None
    # lines wholly or partly hidden: a hidden part that ends inside a line touches one more
    hidden_lines = hidden.count("\n") + (0 if hidden.endswith("\n") else 1)
    return Excerpt(text[:head_end], text[tail_start:], text.count("\n", 0, tail_start) + 1,
                   hidden_lines, len(hidden))


def _json(value: Any, indent: int | None = None) -> str:
    """JSON as a person reads it: non-ASCII letters as they are, but everything visible()
    would replace as a ``\\uXXXX`` escape (still valid JSON)."""
    return json_visible(json.dumps(value, ensure_ascii=False, indent=indent, default=str))


def parts(request: ConfirmRequest) -> list[Part]:
    """What a confirmation shows, in order, before the question (the text not yet made
    visible; :func:`render_confirmation` does that)."""
    call = request.call
    lexer = _LEXERS.get(request.tool, "text")
    if call.is_codeblock:
        written = "```" + " ".join(filter(None, (call.name, call.argline)))
    else:
        written = " ".join(filter(None, (call.name, call.argline)))
        details = [f"id {call.call_id}"] if call.call_id else []
        written += f"  ({', '.join([*details, f'{call.format} format'])})"
    shown = [Part("call: ", written)]
    if call.kwargs:
        shown.append(Part("arguments:", _json(dict(call.kwargs), 2), "json", True))
    if call.content or not call.kwargs:
        shown.append(Part("" if call.is_codeblock else "body:", call.content, lexer, True))
    extra = _bound_extras(request.kwargs, call.content, call.kwargs)
    if extra:
        shown.append(Part("with: ", ", ".join(f"{k}={_json(v)}" for k, v in extra.items())))
    preview = request.preview
    if preview and preview != call.content:
        first, newline, rest = preview.partition("\n")
        if call.content and newline and rest.removesuffix("\n") == call.content.removesuffix(
                "\n"):  # a heading over the body ("new file a.txt:"): no need to repeat it
            shown.append(Part("preview: ", first + " (then the body above, as it is)"))
        else:
            preview_lexer = "diff" if preview.startswith(("---", "@@")) else lexer
            shown.append(Part("preview:", preview, preview_lexer))
    return shown


def _bound_extras(bound: Mapping[str, Any], content: str,
                  written: Mapping[str, Any]) -> dict[str, Any]:
    """The bound arguments the written call does not already show as they are."""
    return {key: value for key, value in bound.items()
            if not (isinstance(value, str) and value == content and content)
            and not (key in written and written[key] == value)}


def _syntax(text: str, part: Part, start_line: int = 1) -> Syntax:
    from rich.syntax import Syntax

    return Syntax(visible(text), part.lexer, word_wrap=True, line_numbers=part.numbered,
                  start_line=start_line)


def _print_part(console: Console, part: Part, complete: bool) -> bool:
    """Print one part; True if it was cut."""
    cut = None if complete else excerpt(part.text)
    inline = part.label.endswith(" ")
    if inline:  # a one-line part: the label and the text on one line
        text = part.text if cut is None else cut.head
        console.print(Text(part.label, style="bold").append(visible_text(text)))
        if cut is not None:
            console.print(Text(cut.marker, style="bold reverse yellow"))
            console.print(visible_text(cut.tail))
        return cut is not None
    if part.label:
        console.print(Text(part.label, style="bold"))
    if not part.text:
        console.print(Text("(empty)", style="dim italic"))
        return False
    if cut is None:
        console.print(_syntax(part.text, part))
        return False
    console.print(_syntax(cut.head.removesuffix("\n"), part))
    console.print(Text(cut.marker, style="bold reverse yellow"))
    console.print(_syntax(cut.tail, part, cut.tail_line))
    return True


def render_confirmation(console: Console, request: ConfirmRequest, *,
                        complete: bool = False) -> bool:
    """Print the call ``request`` asks about (long parts cut unless ``complete``); True if
    something was cut."""
    console.rule(visible_text(request.tool, "bold yellow"), align="left", style="yellow")
    cut = False
    for part in parts(request):
        cut = _print_part(console, part, complete) or cut
    return cut


def question(request: ConfirmRequest) -> Text:
    """The prompt line: the request's question (made visible) and the answers it takes
    (``a`` only where rules can say the call)."""
    always = " [a]lways" if request.remember is not None else ""
    return visible_text(request.question, "bold yellow").append(
        f" [y]es [n]o{always} [v]iew [t]ell the model: ")


def _always_offer(console: Console, request: ConfirmRequest, complete: bool) -> None:
    """Say what ``a`` would allow from now on, where it can be said (the first rules of
    many, unless ``complete``)."""
    if request.remember is None:
        return
    rules = list(request.remember.rules)
    shown: list[str] = []
    while rules and (complete or not shown or len(", ".join([*shown, rules[0]])) <= MAX_RULES):
        shown.append(rules.pop(0))
    more = f", and {len(rules)} more (v: view them)" if rules else ""
    console.print(Text("(a: yes, and always allow for this conversation: ", style="bold")
                  .append(visible_text(", ".join(shown)))
                  .append(more + ")", style="bold"))


def _always(console: Console, request: ConfirmRequest) -> bool:
    """Add the narrowest rules that allow the call (the answer ``a``), and say them."""
    if request.remember is None:
        return False
    request.remember.add()
    console.print(Text("Allowed for the rest of this conversation: ", style="bold green")
                  .append(visible_text(", ".join(request.remember.rules))))
    return True


def discard_typed_ahead(stream: TextIO | None) -> bool:
    """Throw away what was typed before the question is shown (a message typed while the
    model was still writing), so only keys pressed after it answer it; True if there was
    a whole line. Only a terminal has such input: ``stream`` (tests) and pipes keep theirs."""
    if stream is not None or not sys.stdin.isatty():
        return False
    import fcntl
    import termios

    fd = sys.stdin.fileno()
    pending = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, pending)
    termios.tcflush(fd, termios.TCIFLUSH)
    return pending[0] > 0


def _ask(console: Console, prompt: Text | str, stream: TextIO | None) -> str | None:
    """One line typed after ``prompt`` is shown (None: end of input)."""
    if discard_typed_ahead(stream):
        console.print(Text("(What was typed before this question was discarded.)",
                           style="dim"))
    try:
        line = console.input(prompt, stream=stream)
        if stream is not None and not line:  # a stream's end reads as "", not EOFError
            raise EOFError
    except EOFError:
        console.print()
        return None
    return line.strip()


def _tell(console: Console, stream: TextIO | None, given: str) -> Answer:
    """``t``: no, with what the model is to be told (asked for unless typed after ``t``); an
    empty reason is a plain no, which ends the turn."""
    reason = given or _ask(console, Text("Tell the model: ", style="bold"), stream) or ""
    return Decline(reason, ends_turn=not reason)


def terminal_confirm(console: Console, stream: TextIO | None = None) -> ConfirmFunc:
    """Show the complete call and ask: ``y`` yes, ``n`` no (the turn ends: the user says
    what to do instead at the chat prompt), ``a`` yes and always (where rules can say it),
    ``v`` show it uncut and ask again, ``t`` no and tell the model why (the run goes on).
    Typed-ahead input is discarded first; another answer asks again, and end of input is a
    no. ``stream`` replaces stdin (for tests)."""

    def confirm(request: ConfirmRequest) -> Answer:
        complete, shown = False, False
        while True:
            if not shown:
                render_confirmation(console, request, complete=complete)
                _always_offer(console, request, complete)
                shown = True
            answer = _ask(console, question(request), stream)
            word, _, rest = (answer or "").partition(" ")
            word = word.lower()
            if answer is None or (word in ("n", "no") and not rest):
                console.print(Text("Not run. The turn ends here: say what to do instead.",
                                   style="yellow"))
                return Decline(ends_turn=True)
            if word in ("y", "yes") and not rest:
                return True
            if word in ("a", "always") and not rest and request.remember is not None:
                return _always(console, request)
            if word in ("t", "tell"):
                return _tell(console, stream, rest.strip())
            if word in ("v", "view") and not rest:
                complete, shown = True, False
                continue
            always = "a, " if request.remember is not None else ""
            console.print(Text(f"Answer y, n, {always}v or t.", style="yellow"))

    return confirm


def choose_confirm(console: Console, *, yes: bool) -> ConfirmFunc:
    """``-y`` confirms everything; a terminal asks; anything else declines."""
    if yes:
        return auto_yes
    if sys.stdin.isatty():
        return terminal_confirm(console)
    return auto_no
