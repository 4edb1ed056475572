"""Typed hook points and the registry that runs them.

Each hook point carries its own data type, so a hook for ``TOOL_PRE_EXECUTE`` is checked to
take a :class:`~fencecall.tools.hook_points.ToolPreExecute`. A hook may return nothing, messages to
add, a :class:`Block` to stop what is about to happen, or an :class:`Allow` to let a call run
without asking (pre hooks only; a Block from any hook wins). Higher priorities run first.
The points themselves and their data types are in :mod:`fencecall.tools.hook_points`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..message import Message, system

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Block:
    """Returned by a pre hook to stop the action; ``reason`` is shown to the model."""

    reason: str


@dataclass(frozen=True, slots=True)
class Allow:
    """Returned by a pre hook to let the call run without asking the user (a permission
    rule, a user's hook said so); ``reason`` says which. A Block from any hook still wins."""

    reason: str


HookReturn = Message | str | Block | Allow | Iterable[Message | str | Block | Allow] | None


@dataclass(frozen=True, slots=True)
class HookPoint(Generic[T]):
    """A named place hooks attach to; ``can_block`` says whether a Block is honoured."""

    name: str
    can_block: bool = False


@dataclass(frozen=True, slots=True)
class Hook(Generic[T]):
    point: HookPoint[T]
    func: Callable[[T], HookReturn]
    priority: int = 0
    name: str = ""


@dataclass(slots=True)
class HookOutcome:
    messages: list[Message] = field(default_factory=list)
    blocked: Block | None = None
    allowed: Allow | None = None
    """The first Allow (where nothing blocked): the call needs no confirmation."""


class HookRegistry:
    """The hooks of one session. Registration is thread-safe; running takes a snapshot."""

    def __init__(self) -> None:
        self._hooks: dict[str, list[Hook[Any]]] = {}
        self._lock = threading.Lock()

    def register(self, hook: Hook[Any]) -> None:
        with self._lock:
            hooks = [*self._hooks.get(hook.point.name, ()), hook]
            hooks.sort(key=lambda h: -h.priority)
            self._hooks[hook.point.name] = hooks

    def add(self, point: HookPoint[T], func: Callable[[T], HookReturn], *, priority: int = 0,
            name: str = "") -> Hook[T]:
        hook = Hook(point, func, priority, name or getattr(func, "__name__", "hook"))
        self.register(hook)
        return hook

    def unregister(self, hook: Hook[Any]) -> None:
        with self._lock:
            self._hooks[hook.point.name] = [
                h for h in self._hooks.get(hook.point.name, ()) if h is not hook]

    def hooks(self, point: HookPoint[Any]) -> tuple[Hook[Any], ...]:
        with self._lock:
            return tuple(self._hooks.get(point.name, ()))

    def run(self, point: HookPoint[T], data: T) -> HookOutcome:
        """Run the hooks of ``point`` in priority order; the first Block stops the rest (an
        Allow does not: a later hook may still block).

        A hook that raises is reported as a system message and, at a point that can block,
        blocks: a guard that crashed must not let the action through.
        """
        outcome = HookOutcome()
        for hook in self.hooks(point):
            try:
                returned = hook.func(data)
                items = returned if isinstance(returned, Iterable) and not isinstance(
                    returned, str | Message | Block | Allow) else [returned]
                for item in items:
                    if isinstance(item, Block):
                        if point.can_block:
                            outcome.blocked = item
                    elif isinstance(item, Allow):
                        if point.can_block and outcome.allowed is None:
                            outcome.allowed = item
                    elif isinstance(item, str):
                        outcome.messages.append(system(item))
                    elif isinstance(item, Message):
                        outcome.messages.append(item)
            except Exception as err:
                outcome.messages.append(system(
                    f"Hook {hook.name!r} ({point.name}) failed: {type(err).__name__}: {err}"))
                if point.can_block:
                    outcome.blocked = Block(f"hook {hook.name!r} failed")
            if outcome.blocked is not None:
                break
        return outcome
