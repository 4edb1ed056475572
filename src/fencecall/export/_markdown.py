"""A conversation as a markdown transcript, to read or paste: each prompt, reply, call,
result and note in order, then the totals. Text the model or a tool wrote goes in a fence
longer than any run of backticks in it, so it cannot end the fence or become markup."""

from __future__ import annotations

import re

from .. import __version__
from ._atif import PriceOf
from ._text import arguments, call_line, heading, reply_line, totals
from ._turns import Turn

_TICKS = re.compile(r"`{3,}")


def fenced(text: str, lang: str = "") -> str:
    """``text`` in a fence no line of it can close."""
    longest = max((len(run) for run in _TICKS.findall(text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def markdown(name: str, turns: list[Turn], prices: PriceOf) -> str:
    """The transcript of conversation ``name``."""
    out = [f"# Conversation {_inline(name)}", "",
           f"Exported by fencecall {__version__}: {totals(turns, prices)}.", ""]
    for turn in turns:
        out += [f"## {_inline(heading(turn))}", "",
                f"*{turn.message.timestamp.isoformat(timespec='seconds')}*", ""]
        if turn.kind == "agent" and turn.message.reply is not None:
            out += [f"*{reply_line(turn.message.reply, prices)}*", ""]
        out += [fenced(turn.message.content, "text"), ""]
        for action in turn.actions:
            out += [f"### Call {_inline(call_line(action))}", "",
                    fenced(arguments(action), "json"), ""]
            for result in action.results:
                out += ["Result:", "", fenced(result.content, "text"), ""]
        for note in turn.notes:
            out += ["### Note", "", fenced(note.content, "text"), ""]
    out += ["## Totals", "", totals(turns, prices), ""]
    return "\n".join(out)


def _inline(text: str) -> str:
    """``text`` on one line, its markdown characters escaped (a heading it cannot break)."""
    return re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", " ".join(text.split()))
