"""Session: one conversation's execution environment.

It owns what must not leak between conversations in one process: the loaded tools, the hooks,
the confirmation policy, the workspace roots, the sandbox, the secrets, and per-conversation
resources such as the persistent shell. It satisfies :class:`~fencecall.tools.ToolContext`,
the narrow view tools get of it.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..defaults import BACKGROUND_AFTER, MAX_JOBS
from ..environments import Environment
from ..message import Message
from ..parsing import MARKDOWN, Diagnostic, FormatLike, ToolCall, parse
from ..realpath import real_path
from ..sandbox import (
    ResourceLimits,
    Sandbox,
    SandboxPolicy,
    SharedNetwork,
    choose_sandbox,
    make_scratch,
    remove_stale_once,
    share_network,
    sweep_groups_once,
)
from ..sandbox.reaper import sweep_once
from ..secrecy import TOOL_ENV_ALLOWLIST, Redactor, tool_environment
from ..tools import (
    ConfirmFunc,
    ConfirmRequest,
    HookRegistry,
    ResourceKey,
    TextFiles,
    Toolchain,
    ToolInvocation,
)
from ..tools.hook_points import SESSION_END, SESSION_START, SessionEvent
from ..tools.runtime.job_manager import JobManager, JobView
from ..tools.runtime.output import DEFAULT_LIMIT as DEFAULT_OUTPUT_LIMIT
from ..tools.tool_context import JOBS, PYTHON, SHELL, Answer

if TYPE_CHECKING:
    from ..checkpoints import Checkpoints
    from ..tools.mcp.servers import McpServers
from ._pipeline import execute_calls
from .confirm_policy import auto_no, auto_yes
from .permissions import Permissions

R = TypeVar("R")


class Session:
    """Tools, hooks, confirmation and resources for one conversation.

    ``roots`` are the folders file tools may touch (the workspace, plus any the user added).
    ``sandbox`` is a :class:`Sandbox` or a policy (``workspace-write`` by default: the roots
    are writable, nothing else, no network unless ``network``); where bubblewrap cannot run,
    a policy falls back to ``off`` with a warning. Tool processes see only the allow-listed
    environment plus ``pass_env`` (names or globs); the values of ``secrets`` (name → value)
    never reach them and are redacted from every result. Resources created through
    :meth:`resource` are closed by :meth:`close`, and so are ``mcp_servers`` (the MCP
    servers whose tools the toolchain holds) when given. A shell command still running after
    ``background_after`` seconds (None: never) goes on as one of at most ``max_jobs``
    background :attr:`jobs`, which end with the session. What each tool process may take is
    the sandbox's ``limits`` (see :class:`~fencecall.sandbox._resource_limits.ResourceLimits`).
    ``permissions`` are the rules that refuse calls or let them run unasked (none by default).
    With an ``environment`` (a container) the shell and python run there, the file tools act
    on its files (``environment.files`` is the workspace), and the sandbox is off (the
    environment is the boundary); it is closed with the session when ``owns_environment``.
    """

    def __init__(self, toolchain: Toolchain, *, workspace: Path | str | None = None,
                 confirm: ConfirmFunc = auto_no,
                 extra_roots: Sequence[Path | str] = (), hooks: HookRegistry | None = None,
                 sandbox: Sandbox | SandboxPolicy | str = SandboxPolicy.WORKSPACE_WRITE,
                 network: bool = False, pass_env: Iterable[str] = (),
                 secrets: Mapping[str, str] | None = None,
                 mcp_servers: McpServers | None = None,
                 background_after: float | None = BACKGROUND_AFTER, max_jobs: int = MAX_JOBS,
                 permissions: Permissions | None = None,
                 environment: Environment | None = None, owns_environment: bool = False):
        remove_stale_once()
        sweep_once()
        sweep_groups_once()
        self.toolchain = toolchain
        self.environment = environment
        self._owns_environment = owns_environment
        if environment is not None:
            workspace = environment.files
            sandbox = Sandbox(SandboxPolicy.OFF, limits=_limits(sandbox))
        self._workspace = real_path(Path(workspace if workspace is not None else Path.cwd()))
        self._roots = (self._workspace, *(real_path(Path(r)) for r in extra_roots))
        self._read_roots: tuple[Path, ...] = ()
        self._output_limit = DEFAULT_OUTPUT_LIMIT
        self._deadline: float | None = None
        self._confirm = confirm
        self._hooks = hooks or HookRegistry()
        if isinstance(sandbox, Sandbox):
            self._sandbox = sandbox
        else:
            self._sandbox, warning = choose_sandbox(sandbox, self._roots, network=network)
            if warning:
                warnings.warn(warning, RuntimeWarning, stacklevel=2)
        self._tmp: Path | None = None
        if self._sandbox.enforced and self._sandbox.tmp is None:
            # One /tmp per conversation, shared by its shell and python, as it is unsandboxed.
            self._tmp = make_scratch("tmp")
            self._sandbox = replace(self._sandbox, tmp=self._tmp)
        self._background_after = background_after
        self._max_jobs = max_jobs
        self._job_logs: Path | None = None
        self._own_job_logs: Path | None = None
        self._network_shared = False
        self._own_network: SharedNetwork | None = None
        self._pass_env = tuple(pass_env)
        self._secrets = dict(secrets or {})
        self.redact = Redactor(self._secrets)
        self.mcp_servers = mcp_servers
        self._editor: TextFiles | None = None
        self._resources: dict[ResourceKey[Any], Any] = {}
        self._lock = threading.RLock()
        self._closed = False
        self.permissions = permissions or Permissions()
        self.permissions.install(self._hooks)
        self.checkpoints: Checkpoints | None = None
        """The workspace's checkpoints, where the agent keeps them (see :meth:`serve_agent`)."""
        for spec in toolchain.tools:
            for hook in spec.hooks:
                self._hooks.register(hook)
        self._hooks.run(SESSION_START, SessionEvent(self))

    # -- the ToolContext protocol ------------------------------------------------------

    @property
    def workspace(self) -> Path:
        return self._workspace

    @property
    def roots(self) -> tuple[Path, ...]:
        return self._roots

    @property
    def readable_roots(self) -> tuple[Path, ...]:
        return (*self._roots, *self._read_roots)

    @property
    def output_limit(self) -> int:
        return self._output_limit

    def allow_reading(self, folder: Path) -> None:
        """Let the read tool read ``folder`` (fencecall's own, which no tool writes: it is
        not a root, so neither file tools nor sandboxed processes may write it)."""
        folder = real_path(folder)
        if folder not in self.readable_roots:
            self._read_roots = (*self._read_roots, folder)

    def use_editor(self, files: TextFiles | None) -> None:
        """Let the file tools read and write through an editor's buffers (None: the disk)."""
        self._editor = files

    @property
    def text_files(self) -> TextFiles | None:
        """The editor, while nothing the model started can run beside a file tool. The
        editor opens a path by name after the tool checked it, so a process of the model's
        swapping a folder for a link in between could steer it outside the workspace; with
        a background job or a live interpreter (whose threads run on), files go through the
        disk, opened by descriptor."""
        if self._editor is None:
            return None
        with self._lock:
            jobs, interpreter, shell = self._found(JOBS), self._found(PYTHON), self._found(SHELL)
        if jobs is not None and jobs.counts()["running"]:
            return None
        if interpreter is not None and interpreter.alive():
            return None
        if shell is not None and shell.has_processes():
            return None
        return self._editor

    @property
    def jobs(self) -> JobManager:
        """The background jobs of the conversation (made on first use)."""
        return self.resource(JOBS, lambda: JobManager(
            self._jobs_folder, output_limit=self._output_limit,
            disk_limit=self._sandbox.limits.output,
            max_jobs=self._max_jobs, background_after=self._background_after))

    def serve_agent(self, *, output_limit: int = 0, jobs_folder: Path | None = None,
                    deadline: float | None = None, checkpoints: Path | None = None) -> None:
        """What the agent that drives the session needs, given once as it is built (never
        per run): tools keep up to ``output_limit`` characters of output (at least the
        default; for an agent that saves huge results to files, so the files hold all of
        it); the jobs' logs go to ``jobs_folder`` (a conversation's own folder, which no tool
        writes; made private at the first job) rather than a temporary one; and the run's
        time limit is ``deadline`` (a :func:`time.monotonic` instant). With ``checkpoints``
        (a folder of the conversation's), the workspace is recorded there before each call
        that can write, fencecall's folders beside it left out. Call it before the first tool
        runs: shells and jobs started earlier keep what they were given."""
        self._output_limit = max(self._output_limit, output_limit)
        if checkpoints is not None and self.checkpoints is None:
            from ..checkpoints import Checkpoints  # only a conversation that keeps them

            self.checkpoints = Checkpoints(checkpoints, self._workspace,
                                           excluded=(checkpoints.parent,))
            self.checkpoints.install(self._hooks)
        if jobs_folder is not None:
            self._job_logs = jobs_folder
        self._deadline = deadline

    def _jobs_folder(self) -> Path:
        if self._job_logs is None:
            self._own_job_logs = self._job_logs = make_scratch("jobs")
        else:
            self._job_logs.mkdir(mode=0o700, exist_ok=True)
        self.allow_reading(self._job_logs)  # the model may read a whole log
        return self._job_logs

    def job_notices(self) -> list[JobView]:
        """The jobs that ended since the model last heard of them (each once)."""
        with self._lock:
            jobs = self._found(JOBS)
        return [] if jobs is None else jobs.notices()

    def running_jobs(self) -> list[JobView]:
        """The background jobs running now (what leaving the conversation would stop)."""
        with self._lock:
            jobs = self._found(JOBS)
        return [] if jobs is None else jobs.running()

    def stop_jobs(self) -> list[int]:
        """End every running job (a time limit ends them); their ids."""
        with self._lock:
            jobs = self._found(JOBS)
        return [] if jobs is None else jobs.stop_all()

    @property
    def hooks(self) -> HookRegistry:
        return self._hooks

    @property
    def sandbox(self) -> Sandbox:
        """Where the session's processes run. Made on first use to share one loopback among
        them (see :func:`share_network`), so a server a command started is reachable from
        the later ones."""
        with self._lock:
            if not self._network_shared and not self._closed:
                self._network_shared = True
                given = self._sandbox.shared_network
                self._sandbox, why = share_network(self._sandbox)
                if self._sandbox.shared_network is not given:
                    self._own_network = self._sandbox.shared_network
                if why is not None and self._sandbox.enforced and not self._sandbox.network:
                    warnings.warn(f"background jobs' ports cannot be reached from later "
                                  f"commands: {why}", RuntimeWarning, stacklevel=2)
            return self._sandbox

    @property
    def approves_every_call(self) -> bool:
        return self._confirm is auto_yes

    def confirm(self, request: ConfirmRequest) -> Answer:
        """Ask through the session's confirm function, offering to remember the narrowest
        permission rules that allow the call (an "always allow" answer adds them)."""
        spec = self.toolchain.get(request.tool)
        if request.remember is None and spec is not None and not self.approves_every_call:
            invocation = ToolInvocation(request.call, spec, request.kwargs, self)
            request = replace(request, remember=self.permissions.offer(invocation))
        return self._confirm(request)

    def tool_env(self) -> dict[str, str]:
        """The environment for processes tools start: the allow-listed variables and those
        the user passes, never a secret, so a model cannot read one back through a shell.
        In an environment only those passed: its image has its own ``PATH`` and ``HOME``."""
        return tool_environment(os.environ, self._pass_env, secret_names=self._secrets,
                                allowlist=() if self.environment is not None else
                                TOOL_ENV_ALLOWLIST)

    def functions(self) -> Mapping[str, Callable[..., Any]]:
        return self.toolchain.functions()

    @property
    def deadline(self) -> float | None:
        """The run's time limit as a :func:`time.monotonic` instant (see :meth:`serve_agent`)."""
        return self._deadline

    def time_left(self) -> float | None:
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def resource(self, key: ResourceKey[R], factory: Callable[[], R]) -> R:
        """The session's resource ``key``, created by ``factory`` on first use."""
        with self._lock:
            if self._closed:
                raise RuntimeError("session is closed")
            if key not in self._resources:
                self._resources[key] = factory()
            value: R = self._resources[key]
            return value

    def _found(self, key: ResourceKey[R]) -> R | None:
        """The resource ``key`` where it was made (hold the lock)."""
        value: R | None = self._resources.get(key)
        return value

    # -- running calls -------------------------------------------------------------------

    def execute(self, message: Message | str, fmt: FormatLike = MARKDOWN) -> Iterator[Message]:
        """Run the tool calls in a model message, written in ``fmt``."""
        if isinstance(message, str):
            message = Message("assistant", message)
        parsed = parse(message.content, fmt)
        yield from execute_calls(self, message, parsed.calls, parsed.diagnostics)

    def execute_calls(self, message: Message, calls: Iterable[ToolCall],
                      diagnostics: Iterable[Diagnostic] = (),
                      history: Sequence[Message] = ()) -> Iterator[Message]:
        """Run calls already parsed from ``message`` (streamed or native ones), and tell the
        model of the ``diagnostics``; ``history`` is the conversation so far, for hooks."""
        yield from execute_calls(self, message, calls, diagnostics, history)

    def run_command(self, line: str) -> str | None:
        """Run a tool's slash command (``/name args``); None if no tool has it."""
        name, _, rest = line.lstrip("/").partition(" ")
        for spec in self.toolchain.tools:
            for command in spec.commands:
                if command.name == name:
                    return command.run(self, rest.strip()) or ""
        return None

    def close(self) -> None:
        """Run session-end hooks and close every resource; safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            # the jobs first: a job's processes end before the shell's folders go
            resources = sorted(self._resources.values(),
                               key=lambda value: not isinstance(value, JobManager))
            self._resources.clear()
        self._hooks.run(SESSION_END, SessionEvent(self))
        for value in resources:
            _close(value)
        if self.mcp_servers is not None:
            self.mcp_servers.close()
        if self._own_network is not None:
            self._own_network.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
        if self._own_job_logs is not None:
            shutil.rmtree(self._own_job_logs, ignore_errors=True)
        if self.environment is not None and self._owns_environment:
            self.environment.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _limits(sandbox: Sandbox | SandboxPolicy | str) -> ResourceLimits:
    """The resource limits a sandbox given as an object carries (the defaults otherwise)."""
    return sandbox.limits if isinstance(sandbox, Sandbox) else ResourceLimits()


def _close(value: Any) -> None:
    close = getattr(value, "close", None)
    if callable(close):
        close()
