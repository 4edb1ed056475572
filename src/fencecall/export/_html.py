"""A conversation as one self-contained HTML page to share: inline CSS, no script and
nothing fetched. Everything a model, a tool or the user wrote is escaped, so a hostile
reply shows as text and cannot add markup or script."""

from __future__ import annotations

from html import escape

from .. import __version__
from ._atif import PriceOf
from ._text import arguments, call_line, heading, reply_line, totals
from ._turns import Turn

_STYLE = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#1d1d1f;background:#fafafa}
h1{font-size:1.4rem}section{border-radius:8px;padding:.6rem 1rem;margin:1rem 0;
border:1px solid #ddd;background:#fff}
section.user{border-left:6px solid #2f6fdf}section.agent{border-left:6px solid #2b9a4b}
section.system{border-left:6px solid #c78a1b;background:#fffaf0}
h2{font-size:1rem;margin:.2rem 0}.meta{color:#666;font-size:.85rem}
pre{white-space:pre-wrap;word-break:break-word;background:#f3f3f3;padding:.6rem;
border-radius:6px;margin:.4rem 0}
details{margin:.4rem 0}summary{cursor:pointer;font-weight:600}
"""


def html(name: str, turns: list[Turn], prices: PriceOf) -> str:
    """The page of conversation ``name``."""
    body = [f"<h1>Conversation {escape(name)}</h1>",
            f'<p class="meta">Exported by fencecall {escape(__version__)}: '
            f"{escape(totals(turns, prices))}.</p>"]
    body += [_section(turn, prices) for turn in turns]
    body.append(f"<h2>Totals</h2><p>{escape(totals(turns, prices))}</p>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(name)} · fencecall</title>"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{_STYLE}</style></head><body>\n" + "\n".join(body)
            + "\n</body></html>\n")


def _section(turn: Turn, prices: PriceOf) -> str:
    message = turn.message
    meta = message.timestamp.isoformat(timespec="seconds")
    if turn.kind == "agent" and message.reply is not None:
        meta += " · " + reply_line(message.reply, prices)
    parts = [f'<section class="{turn.kind}"><h2>{escape(heading(turn))}</h2>',
             f'<p class="meta">{escape(meta)}</p>', _pre(message.content)]
    for action in turn.actions:
        parts.append(f"<details open><summary>Call {escape(call_line(action))}</summary>"
                     + _pre(arguments(action))
                     + "".join(_pre(result.content) for result in action.results)
                     + "</details>")
    parts += [f"<details open><summary>Note</summary>{_pre(note.content)}</details>"
              for note in turn.notes]
    parts.append("</section>")
    return "\n".join(parts)


def _pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"
