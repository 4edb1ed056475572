"""Asking the editor's user before a call runs, with what the terminal would show.

Every call the session would confirm at a terminal becomes a ``session/request_permission``
whose content is the terminal's confirmation, complete and never cut: the same parts
(:func:`fencecall.cli.confirm_prompt.parts`), each made visible (:func:`fencecall.cli.visible.
visible`) and fenced, so neither an escape sequence nor markdown changes how it reads. The
answers: allow once; always allow, which adds the narrowest permission rules that allow the
call for the rest of the session, as the terminal's ``a`` does (offered where rules can
express the call: see :meth:`fencecall.execution.permissions.Permissions.offer`); reject.
Nothing runs before the answer; a cancelled or failed request (the editor went away) is a
rejection, which the model is told of as a declined call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import acp
from acp.schema import PermissionOption, ToolCallUpdate

from ..cli.confirm_prompt import parts
from ..cli.visible import visible
from ..tools import ConfirmRequest
from ._text import fenced
from ._updates import KINDS, Reporter

ALLOW, ALWAYS, REJECT = "allow-once", "allow-always", "reject-once"
_ONCE = PermissionOption(option_id=ALLOW, name="Allow once", kind="allow_once")
_REJECT = PermissionOption(option_id=REJECT, name="Reject", kind="reject_once")
SHOWN_RULES = 300
"""Characters of the rules an "always allow" option names (the rest is cut, with a mark)."""


def options(request: ConfirmRequest) -> tuple[PermissionOption, ...]:
    """Allow once, always allow (naming the rules it adds, where rules can express the
    call), reject."""
    if request.remember is None:
        return _ONCE, _REJECT
    rules = visible(", ".join(request.remember.rules))
    if len(rules) > SHOWN_RULES:
        rules = rules[:SHOWN_RULES] + " …"
    always = PermissionOption(option_id=ALWAYS, name=f"Always allow in this session: {rules}",
                              kind="allow_always")
    return _ONCE, always, _REJECT

Ask = Callable[[ToolCallUpdate, Sequence[PermissionOption]], str | None]
"""Sends the request and waits for the option chosen (None: cancelled, or no answer)."""


def request_text(request: ConfirmRequest) -> str:
    """The terminal's confirmation of ``request`` as markdown: the question, then each part
    under its label, made visible and fenced."""
    shown = [f"**{visible(request.question)}**"]
    for part in parts(request):
        label = visible(part.label.strip().rstrip(":"))
        lexer = "" if part.lexer == "text" else part.lexer
        shown.append(f"{label}:\n{fenced(visible(part.text), lexer)}" if label
                     else fenced(visible(part.text), lexer))
    return "\n\n".join(shown)


class Permissions:
    """The session's confirm function: asks through ``ask`` (with ``yes``, every call is
    allowed: ``-y``). What the user always allows becomes permission rules of the session,
    which let such calls run before anyone is asked."""

    def __init__(self, ask: Ask, reporter: Reporter, *, yes: bool = False):
        self._ask = ask
        self._reporter = reporter
        self._yes = yes

    def __call__(self, request: ConfirmRequest) -> bool:
        allowed = self._yes or self._asked(request)
        if allowed:
            self._reporter.running()
        return allowed

    def _asked(self, request: ConfirmRequest) -> bool:
        call_id = self._reporter.current or "unannounced"
        update = ToolCallUpdate(
            tool_call_id=call_id, title=visible(f"{request.question} ({request.tool})"),
            kind=KINDS.get(request.tool, "other"), status="pending",
            content=[acp.tool_content(acp.text_block(request_text(request)))])
        offered = options(request)
        chosen = self._ask(update, offered)
        if chosen == ALWAYS and request.remember is not None:
            request.remember.add()
        return chosen in {option.option_id for option in offered} - {REJECT}
