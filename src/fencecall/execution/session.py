"""Session: one conversation's execution environment.

It owns what must not leak between conversations in one process: the loaded tools, the hooks,
the confirmation policy, the workspace roots, and per-conversation resources such as the
persistent shell. The session in use is also reachable through a ContextVar, so code deep in
a tool can find it without global state.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..message import Message
from ..parsing import ToolFormat
from .confirm import ConfirmFunc, auto_no
from .hooks import SESSION_END, SESSION_START, HookRegistry, SessionEvent

if TYPE_CHECKING:
    from ..tools.registry import Toolchain

R = TypeVar("R")
_current: ContextVar[Session | None] = ContextVar("fencecall_session", default=None)


def current_session() -> Session | None:
    return _current.get()


class Session:
    """Tools, hooks, confirmation and resources for one conversation.

    ``roots`` are the folders file tools may touch (the workspace, plus any the user added);
    resources created through :meth:`resource` are closed by :meth:`close`; ``hidden_env``
    names environment variables that processes started by tools must not see.
    """

    def __init__(self, toolchain: Toolchain, *, workspace: Path | str | None = None,
                 confirm: ConfirmFunc = auto_no, fmt: ToolFormat | str = ToolFormat.MARKDOWN,
                 extra_roots: Sequence[Path | str] = (), hooks: HookRegistry | None = None,
                 hidden_env: Iterable[str] = ()):
        self.toolchain = toolchain
        self.workspace = Path(workspace if workspace is not None else Path.cwd()).resolve()
        self.roots = (self.workspace, *(Path(r).resolve() for r in extra_roots))
        self.confirm = confirm
        self.format = ToolFormat(fmt)
        self.hooks = hooks or HookRegistry()
        self.hidden_env = frozenset(hidden_env)
        self._resources: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._closed = False
        for spec in toolchain.tools:
            for hook in spec.hooks:
                self.hooks.register(hook)
        self.hooks.run(SESSION_START, SessionEvent(self))

    def tool_env(self) -> dict[str, str]:
        """The environment for processes tools start: ours, minus secrets such as API keys,
        so a model cannot read them back through a shell."""
        return {k: v for k, v in os.environ.items() if k not in self.hidden_env}

    def resource(self, key: str, factory: Callable[[], R]) -> R:
        """The session's resource ``key``, created by ``factory`` on first use."""
        with self._lock:
            if self._closed:
                raise RuntimeError("session is closed")
            if key not in self._resources:
                self._resources[key] = factory()
            value: R = self._resources[key]
            return value

    @contextmanager
    def active(self) -> Iterator[Session]:
        """Make this the current session in this context."""
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    def execute(self, message: Message | str) -> Iterator[Message]:
        """Run the tool calls in a model message (see :func:`execute_msg`)."""
        from .tooluse import execute_msg

        if isinstance(message, str):
            message = Message("assistant", message)
        with self.active():
            yield from execute_msg(message, self)

    def run_command(self, line: str) -> str | None:
        """Run a tool's slash command (``/name args``); None if no tool has it."""
        name, _, rest = line.lstrip("/").partition(" ")
        for spec in self.toolchain.tools:
            for command in spec.commands:
                if command.name == name:
                    with self.active():
                        return command.run(self, rest.strip()) or ""
        return None

    def close(self) -> None:
        """Run session-end hooks and close every resource; safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            resources = list(self._resources.values())
            self._resources.clear()
        self.hooks.run(SESSION_END, SessionEvent(self))
        for value in resources:
            _close(value)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close(value: Any) -> None:
    close = getattr(value, "close", None)
    if callable(close):
        close()
