"""What a tool may know of the session it runs in: a narrow protocol, not the Session.

:class:`~fencecall.execution.Session` satisfies :class:`ToolContext`; a tool author imports
only :mod:`fencecall.tools`, and tests can hand tools any object with these members.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ..environments import Environment
from ..parsing import ToolCall
from ..sandbox import Sandbox
from ._hooks import HookRegistry
from .runtime.job_manager import JobManager

if TYPE_CHECKING:
    from .runtime.python_session import PythonSession
    from .runtime.shell_session import ShellSession

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class ResourceKey(Generic[R]):
    """Names a resource a session keeps for its tools (a shell, an interpreter, an MCP
    server's connection), made on first use and closed with the session; its type parameter
    says what the resource is, so what a lookup gives back is typed."""

    name: str


SHELL: ResourceKey[ShellSession] = ResourceKey("shell")
"""The persistent shell the shell tool runs commands in."""
PYTHON: ResourceKey[PythonSession] = ResourceKey("python")
"""The interpreter the ipython tool runs code in."""
JOBS: ResourceKey[JobManager] = ResourceKey("jobs")
"""The background jobs of the conversation."""


@dataclass(frozen=True, slots=True)
class Remember:
    """The narrowest permission rules that allow a call the user is asked about, as written,
    and ``add``, which keeps them for the rest of the conversation: an "always allow this"
    answer (see :mod:`fencecall.execution.permissions`)."""

    rules: tuple[str, ...]
    add: Callable[[], None]


@dataclass(frozen=True, slots=True)
class ConfirmRequest:
    """What the user is asked: the complete call as written and as bound, a one-line
    question, a preview of its effect (a diff, say) and, where rules can express it, how to
    allow calls like it from now on (``remember``)."""

    tool: str
    call: ToolCall
    question: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    preview: str | None = None
    remember: Remember | None = None


@dataclass(frozen=True, slots=True)
class Decline:
    """A "no" that says more than False: ``reason``, what the user wants the model told, and
    ``ends_turn``, the model is not asked again at once (the user will say what to do
    instead). It is falsy, as every no is, so ``if not confirm(...)`` reads it right."""

    reason: str = ""
    ends_turn: bool = False

    def __bool__(self) -> bool:
        return False


Answer = bool | Decline
"""What a confirmation comes to: yes (True), a plain no (False), or a :class:`Decline`."""
ConfirmFunc = Callable[[ConfirmRequest], Answer]


class TextFiles(Protocol):
    """Text files as an editor holds them (its buffers, unsaved changes included). Where a
    session has one, the file tools read and write through it a file whose path has passed
    the workspace rules; failures are :class:`OSError`."""

    def read(self, path: Path) -> str: ...

    def write(self, path: Path, text: str) -> None: ...


class ToolContext(Protocol):
    """The session as a tool sees it."""

    @property
    def workspace(self) -> Path:
        """The folder tools work in."""
        ...

    @property
    def roots(self) -> tuple[Path, ...]:
        """The folders file tools may touch: the workspace first, then any the user added."""
        ...

    @property
    def output_limit(self) -> int:
        """Characters of a command's output a tool keeps (the middle of longer output is
        cut): higher where the agent saves huge results to files instead."""
        ...

    @property
    def readable_roots(self) -> tuple[Path, ...]:
        """The folders the read tool may read: the roots, then folders of fencecall's own that
        no tool writes (a conversation's saved outputs)."""
        ...

    @property
    def hooks(self) -> HookRegistry: ...

    @property
    def text_files(self) -> TextFiles | None:
        """The editor the file tools read and write through (None: the disk)."""
        ...

    @property
    def jobs(self) -> JobManager:
        """The conversation's background jobs (shell commands that went on running)."""
        ...

    @property
    def sandbox(self) -> Sandbox:
        """Where the session's processes run: what the operating system lets them do."""
        ...

    @property
    def environment(self) -> Environment | None:
        """Where the shell and python run, and whose files the file tools act on, when that
        is not the host or the sandbox: a container (None: here)."""
        ...

    def confirm(self, request: ConfirmRequest) -> Answer:
        """Ask the user; a falsy answer (False, a :class:`Decline`) means do not do it."""
        ...

    @property
    def approves_every_call(self) -> bool:
        """Whether every confirmation is answered yes without asking (``-y``)."""
        ...

    def resource(self, key: ResourceKey[R], factory: Callable[[], R]) -> R:
        """The session's resource ``key`` (a shell, an interpreter), made on first use and
        closed with the session."""
        ...

    def tool_env(self) -> dict[str, str]:
        """The environment for processes tools start (no secrets in it)."""
        ...

    def time_left(self) -> float | None:
        """Seconds until the run's time limit (None: it has none); no command may run
        past it."""
        ...

    def functions(self) -> Mapping[str, Callable[..., Any]]:
        """The functions the loaded tools make callable from code (the python tool)."""
        ...
