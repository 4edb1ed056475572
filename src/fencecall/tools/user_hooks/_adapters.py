"""The user's hooks on a session's hook points: each ``[[hooks]]`` entry becomes a hook of
its event's point, which hands the command the event as JSON and turns its verdict into
what the point understands (a Block, an Allow, messages for the model).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from ...message import Message, Status
from ...sandbox.host_programs import clean_path
from .._hooks import Allow, Block, HookPoint, HookRegistry, HookReturn
from ..hook_points import (
    PROMPT_SUBMIT,
    RUN_STOP,
    SESSION_END,
    SESSION_START,
    TOOL_POST_EXECUTE,
    TOOL_PRE_EXECUTE,
    RunStop,
    SessionEvent,
    ToolPostExecute,
    ToolPreExecute,
    UserPrompt,
)
from ..tool_context import ToolContext
from ._declaration import HookEvent, UserHook
from ._runner import run_hook
from ._verdict import Verdict, failed, verdict

POINTS: Mapping[HookEvent, HookPoint[Any]] = {
    "session_start": SESSION_START, "prompt": PROMPT_SUBMIT, "pre_tool": TOOL_PRE_EXECUTE,
    "post_tool": TOOL_POST_EXECUTE, "stop": RUN_STOP, "session_end": SESSION_END}
EVENT_VARIABLE = "FENCECALL_HOOK_EVENT"
_FIRST = 1000
"""The priority of the hooks that must run before (or, negated, after) every other."""


class UserHooks:
    """The ``[[hooks]]`` of the configuration, for one session. A hook runs on the host in
    the workspace, with the environment tools get (no secret in it; its PATH without the
    entries a program the model planted could be found through) plus
    ``FENCECALL_HOOK_EVENT``; what it reads on stdin has the known secrets redacted.
    ``warn`` tells the user of a hook that failed. What a ``session_start`` hook adds for
    the model goes with the first prompt (nothing is sent before it)."""

    def __init__(self, hooks: tuple[UserHook, ...], *, redact: Callable[[str], str],
                 warn: Callable[[str], None]) -> None:
        self._hooks = hooks
        self._redact = redact
        self._warn = warn
        self._session_id: str | None = None
        self._waiting: list[str] = []
        """Context from session start hooks, for the first prompt."""

    def register(self, registry: HookRegistry) -> None:
        """Add each hook to the point of its event, and two of fencecall's own: one that
        learns the conversation's name first, one that hands the model what the session
        start hooks said with a prompt no hook blocked (the last hooks to run)."""
        registry.add(PROMPT_SUBMIT, self._learn_name, priority=_FIRST, name="hooks' name")
        registry.add(RUN_STOP, self._learn_name, priority=_FIRST, name="hooks' name")
        registry.add(PROMPT_SUBMIT, self._session_context, priority=-_FIRST,
                     name="session start hooks' context")
        for hook in self._hooks:
            registry.add(POINTS[hook.event], self._adapter(hook), name=hook.name)

    def _learn_name(self, data: UserPrompt | RunStop) -> None:
        self._session_id = data.session_id

    def _session_context(self, data: UserPrompt) -> list[str]:
        waiting, self._waiting = self._waiting, []
        return waiting

    def _adapter(self, hook: UserHook) -> Callable[[Any], HookReturn]:
        adapters: Mapping[HookEvent, Callable[[UserHook, Any], HookReturn]] = {
            "session_start": self._session_start, "session_end": self._session_end,
            "prompt": self._prompt, "pre_tool": self._tool_call,
            "post_tool": self._tool_result, "stop": self._stop}
        adapter = adapters[hook.event]
        return lambda data: adapter(hook, data)

    def _session_start(self, hook: UserHook, data: SessionEvent) -> HookReturn:
        self._waiting += self._run(hook, data.context, {}).context
        return None

    def _session_end(self, hook: UserHook, data: SessionEvent) -> HookReturn:
        self._run(hook, data.context, {})
        return None

    def _prompt(self, hook: UserHook, data: UserPrompt) -> HookReturn:
        return _returned(self._run(hook, data.context, {"prompt": data.prompt}))

    def _tool_call(self, hook: UserHook, data: ToolPreExecute) -> HookReturn:
        invocation = data.invocation
        if not hook.matches(invocation.spec.name):
            return None
        return _returned(self._run(hook, invocation.context, _call_fields(data)))

    def _tool_result(self, hook: UserHook, data: ToolPostExecute) -> HookReturn:
        invocation = data.invocation
        if not hook.matches(invocation.spec.name):
            return None
        fields = {**_call_fields(data), "tool_result": _result(data)}
        return _returned(self._run(hook, invocation.context, fields))

    def _stop(self, hook: UserHook, data: RunStop) -> HookReturn:
        return _returned(self._run(hook, data.context, {
            "outcome": data.outcome.value, "reason": data.reason,
            "stop_hook_active": data.continued > 0}))

    def _run(self, hook: UserHook, context: ToolContext, fields: dict[str, Any]) -> Verdict:
        """Run ``hook`` on the event's ``fields``; its verdict, a failure told the user."""
        workspace = str(context.workspace)
        event = {"hook_event": hook.event, "session_id": self._session_id,
                 "workspace": workspace, "cwd": workspace, **fields}
        stdin = self._redact(json.dumps(event, ensure_ascii=False, default=str))
        env = context.tool_env()
        env.update(PATH=clean_path(env.get("PATH", os.defpath), context.roots),
                   PYTHONSAFEPATH="1", **{EVENT_VARIABLE: hook.event})
        try:
            found = verdict(hook, run_hook(hook.argv, stdin.encode(), cwd=context.workspace,
                                           env=env, timeout=hook.timeout))
        except OSError as err:
            found = failed(hook, f"{hook.name} could not start: {err}")
        if found.problem is not None:
            self._warn(found.problem)
        return found


def _call_fields(data: ToolPreExecute | ToolPostExecute) -> dict[str, Any]:
    invocation = data.invocation
    return {"tool": invocation.spec.name, "tool_input": dict(invocation.kwargs),
            "call_id": invocation.call.call_id}


def _result(data: ToolPostExecute) -> dict[str, Any]:
    """The call's results as one: their texts, how it ended (``ok`` or the status of its
    first failed result), its exit code where it had one, and how long it took."""
    failure = next((m for m in data.results if m.failed), None)
    status: Status | None = failure.status if failure is not None else None
    codes = [m.exit_code for m in data.results if m.exit_code is not None]
    return {"content": "\n".join(m.content for m in data.results),
            "status": "ok" if status is None else status.value,
            "exit_code": codes[-1] if codes else None,
            "duration_ms": round(data.duration * 1000)}


def _returned(found: Verdict) -> list[Message | str | Block | Allow]:
    """A verdict as the items a hook returns: context first, then a Block or an Allow."""
    items: list[Message | str | Block | Allow] = list(found.context)
    if found.block is not None:
        items.append(Block(found.block))
    elif found.allow is not None:
        items.append(Allow(found.allow))
    return items
