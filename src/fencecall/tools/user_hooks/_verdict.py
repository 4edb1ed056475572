"""What a hook's run comes to: its exit status and its reply, read as Claude Code reads them.

- exit 0: go on. Stdout may be a JSON object: ``additionalContext`` (or
  ``hookSpecificOutput.additionalContext``) is text for the model; a ``pre_tool`` hook's
  ``decision`` (``allow``, ``deny``, ``ask``; or ``hookSpecificOutput.permissionDecision``)
  with its ``reason`` allows the call without confirmation, blocks it, or leaves it to the
  usual confirmation; ``{"decision": "block", "reason": ...}`` blocks a prompt, makes a
  stopping run go on, or tells the model the reason after a tool's result. Stdout that is not
  a JSON object is context for the model from ``prompt`` and ``session_start`` hooks, as in
  Claude Code, and ignored from the others.
- exit 2: block, with stderr as the reason (to the model after a tool ran; to the user at
  session start and end, where there is nothing to block).
- any other status, a time limit, a command that cannot start: an error the user is told of,
  and the action goes on, except a call a ``pre_tool`` hook guards: a guard that failed must
  not let the call through, so the call is blocked (as a Python hook that raises blocks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._declaration import UserHook
from ._runner import Finished

BLOCKING_EXIT = 2
_PERMISSIONS = {"allow": "allow", "approve": "allow", "deny": "deny", "block": "deny",
                "ask": "ask"}
"""``pre_tool`` decisions (Claude Code's older ``approve`` and ``block`` too)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """``block``: the reason the action must not happen; ``allow``: the call runs without
    asking; ``context``: texts for the model; ``problem``: an error the user is told of."""

    block: str | None = None
    allow: str | None = None
    context: tuple[str, ...] = ()
    problem: str | None = None


def failed(hook: UserHook, problem: str) -> Verdict:
    """A hook that crashed, timed out or could not start: a guard blocks, the others not."""
    return Verdict(block=problem if hook.event == "pre_tool" else None, problem=problem)


def verdict(hook: UserHook, finished: Finished) -> Verdict:
    """What ``finished``, the run of ``hook``, says (see the module's docstring)."""
    if finished.exit_code is None:
        return failed(hook, f"{hook.name} took over {hook.timeout:g} s and was stopped")
    said = finished.stderr.strip()
    if finished.exit_code == BLOCKING_EXIT:
        reason = said or f"{hook.name} exited with status 2"
        if hook.event == "post_tool":
            return Verdict(context=(reason,))
        if hook.event in ("session_start", "session_end"):
            return Verdict(problem=f"{hook.name}: {reason}")
        return Verdict(block=reason)
    if finished.exit_code != 0:
        tail = f": {said[-500:]}" if said else ""
        return failed(hook, f"{hook.name} failed with exit status {finished.exit_code}{tail}")
    reply = _json_object(finished.stdout)
    if reply is None:
        text = finished.stdout.strip()
        plain = text and hook.event in ("prompt", "session_start")
        return Verdict(context=(text,) if plain else ())
    return _replied(hook, reply)


def _replied(hook: UserHook, reply: dict[str, Any]) -> Verdict:
    specific = reply.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    context = tuple(text for text in (reply.get("additionalContext"),
                                      specific.get("additionalContext"))
                    if isinstance(text, str) and text.strip())
    reason = _text(specific.get("permissionDecisionReason")) or _text(reply.get("reason"))
    if hook.event == "pre_tool":
        decision = specific.get("permissionDecision", reply.get("decision"))
        permission = _PERMISSIONS.get(decision) if isinstance(decision, str) else None
        if decision is not None and permission is None:
            return Verdict(context=context, problem=f"{hook.name} gave an unknown decision "
                           f"{decision!r} (allow, deny or ask); the call is asked about")
        if permission == "allow":
            return Verdict(allow=reason or f"allowed by {hook.name}", context=context)
        if permission == "deny":
            return Verdict(block=reason or f"denied by {hook.name}", context=context)
        return Verdict(context=context)
    if reply.get("decision") != "block":
        return Verdict(context=context)
    reason = reason or f"{hook.name} said block"
    if hook.event == "post_tool":
        return Verdict(context=(*context, reason))
    if hook.event in ("prompt", "stop"):
        return Verdict(block=reason, context=context)
    return Verdict(context=context)


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
