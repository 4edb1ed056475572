"""One batch task, start to end: its workspace, session, conversation log, agent and result.

:meth:`TaskRunner.arun` is a coroutine: the model's replies are read on the batch's event
loop, and what blocks (making the workspace and session, the tools' processes, the diff)
runs in the runner's worker threads. It never raises: whatever goes wrong becomes the
result's status. A :class:`Stop` lets the scheduler end it from outside (a timeout, or the batch
stopping): calls not yet started are blocked, a retry's backoff or a wait for the batch's
budget wakes up, and the task's shell processes are killed, so a command that hangs ends
now; the scheduler then cancels the coroutine, which ends a reply being read at once. The
session itself is closed by the task, never while a tool of it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import re
import shutil
import signal
import threading
import time
from collections.abc import AsyncGenerator, Callable, Generator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .. import assembly
from ..accounting import Account, Limits, TokenCounter
from ..agent import Agent, Conversation
from ..agent.loop import answer_of
from ..agent.offload import DaemonThreads, in_thread
from ..agent.stats import TOKEN_KINDS, collect
from ..assembly import Overrides, RunSettings, resolve_settings
from ..config import Config, check_apart
from ..defaults import CONCURRENCY
from ..errors import UserError
from ..execution import Session, auto_no, auto_yes
from ..export import export
from ..message import Message, Outcome
from ..providers import (
    AsyncProvider,
    ChatRequest,
    Gate,
    Provider,
    ProviderError,
    StreamEvent,
    has_astream,
)
from ..realpath import real_path
from ..sandbox import Sandbox, choose_sandbox
from ..secrecy import tool_environment
from ..tools import Block, HookRegistry, ResourceKey, Toolchain
from ..tools.hook_points import TOOL_PRE_EXECUTE, ToolPreExecute
from ..tools.mcp import McpServerConfig
from ..tools.permission_rules import PermissionRules
from ._results import TaskResult, ToolCallRecord
from ._task_workspace import WorkspaceError, diff, prepare
from ._tasks import Task

TRAJECTORY_NAME = "trajectory.json"
"""A task's trajectory in ATIF, beside its log (``--trajectories``)."""

if TYPE_CHECKING:
    from ..tools.mcp.servers import McpServers

R = TypeVar("R")
KeepPolicy = Literal["all", "failed", "none"]
ERROR_TEXT = 500
"""Characters kept of a failed call's result in the task's result."""


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """How every task of a batch runs, unless the task says otherwise.

    ``folder`` holds each task's workspace and conversation log (``tasks/<id>-<hash>/``).
    ``task_timeout`` is the default for the whole of one task; ``request_timeout`` the wait
    for the model's server (the configuration's key of that name). Confirmation: nobody is
    there to ask, so with ``yes`` every call runs (inside the sandbox where it is enforced)
    and without it every call that needs a yes is declined, and the model is told so.
    ``secrets`` are the values of the providers' key variables and the configured secrets
    (default: taken from the environment); tools never see them. ``concurrency`` is how
    many tasks run at once (per shard with Ray).
    """

    config: Config
    folder: Path
    model: str | None = None
    tools: tuple[str, ...] | None = None
    format: str | None = None
    max_steps: int | None = None
    task_timeout: float | None = None
    concurrency: int = CONCURRENCY
    sandbox: str | None = None
    network: bool | None = None
    yes: bool = False
    retries: int | None = None
    request_timeout: float | None = None
    max_tokens: int | None = None
    secrets: Mapping[str, str] | None = None
    grace: float = 10.0
    """Seconds a stopped task's worker gets to end before it is left to end on its own."""
    keep_workspaces: KeepPolicy = "all"
    """Which tasks' workspaces stay on disk after their result: ``all``, ``failed`` (those
    not ``done``) or ``none``. Logs always stay; the result keeps the diff."""
    mcp_servers: tuple[McpServerConfig, ...] | None = None
    """The MCP servers whose tools tasks may use (None: the configuration's). Their tools are
    listed once for the batch; a task that calls one gets a connection of its own (for a
    stdio server its own process, started in a private folder), closed with the task."""
    budget: Limits = field(default_factory=Limits)
    """The whole batch's limits (USD, tokens, wall-clock seconds), held by one
    :class:`~fencecall.accounting.Ledger` that every task's requests reserve from."""
    task_budget: Limits = field(default_factory=Limits)
    """Each task's own limits (as ``--budget-usd`` and the like of a single run: they win
    over the configuration's)."""
    autonomous: bool | None = None
    """A task ends done only when its model calls the complete tool, whose summary is the
    result's ``final`` (None: the configuration's ``autonomous``)."""
    logprobs: bool = False
    """Ask the model's server for each generated token's log probability."""
    trajectories: bool = False
    """Write each finished task's trajectory in ATIF beside its log."""
    permissions: PermissionRules = field(default_factory=PermissionRules)
    """Permission rules of every task, besides the configuration's (``--allow``, ``--deny``)."""
    environment: str | None = None
    """Where tasks without an ``image`` run their tools (``host``, ``sandbox``,
    ``container:IMAGE``; None: the configuration's)."""
    container_cli: str | None = None

    def __post_init__(self) -> None:
        # task workspaces are made (and removed) below the folder: the logs must not be
        check_apart(self.config, [("the batch folder", self.folder.resolve())])

    @property
    def overrides(self) -> Overrides:
        """What these options say of every task's settings."""
        return Overrides(model=self.model, tools=self.tools, format=self.format,
                         max_steps=self.max_steps, max_tokens=self.max_tokens,
                         retries=self.retries, request_timeout=self.request_timeout,
                         sandbox=self.sandbox, network=self.network,
                         budget_usd=self.task_budget.usd, budget_tokens=self.task_budget.tokens,
                         time_limit=self.task_budget.time, autonomous=self.autonomous,
                         logprobs=self.logprobs or None,
                         allow=self.permissions.allow, deny=self.permissions.deny,
                         environment=self.environment, container_cli=self.container_cli)


class SetupError(Exception):
    """A task cannot start as given (no model); its result says why."""


class Stopped(Exception):
    """Raised inside a task's worker once its :class:`Stop` fired."""


class Stop:
    """A task's stop switch, fired from outside its worker thread (see the module)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._resources: list[Any] = []
        self.reason: str | None = None

    @property
    def fired(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Stopped(self.reason or "stopped")

    def sleep(self, seconds: float) -> None:
        """The agent's sleep (a retry's backoff, a wait for the batch's budget), cut short
        when the task stops: it then raises :class:`Stopped`."""
        self._event.wait(seconds)
        self.check()

    def watch(self, resource: object) -> None:
        """A session resource that is aborted (see :func:`_kill`) when the task stops, or at
        once if it has stopped."""
        with self._lock:
            if not any(known is resource for known in self._resources):
                self._resources.append(resource)
            fired = self._event.is_set()
        if fired:
            _kill(resource)

    def fire(self, reason: str) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            resources = list(self._resources)
        for resource in resources:
            _kill(resource)


def _kill(resource: object) -> None:
    """Abort a resource that can be (the shell and python sessions: their process group is
    killed, bwrap and with it the whole sandbox, and they never start again; an MCP server's
    connection), or SIGKILL the process group of one that has a ``pid``. The worker sees its
    command end and goes on to stop."""
    abort = getattr(resource, "abort", None)
    if callable(abort):
        with contextlib.suppress(Exception):
            abort()
        return
    try:
        alive = getattr(resource, "alive", None)
        if callable(alive) and not alive():
            return
        pid = getattr(resource, "pid", None)
    except Exception:  # a resource closed meanwhile
        return
    if isinstance(pid, int) and pid > 0:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


class _StoppableSession(Session):
    """A session whose resources its task's :class:`Stop` knows about."""

    def __init__(self, toolchain: Toolchain, *, stop: Stop, **options: Any):
        self._stop = stop
        super().__init__(toolchain, **options)

    def resource(self, key: ResourceKey[R], factory: Callable[[], R]) -> R:
        value = super().resource(key, factory)
        self._stop.watch(value)
        return value


class _StoppableProvider:
    """A provider whose stream raises :class:`Stopped` once the task stops (the scheduler
    also cancels a stopped task's coroutine, which ends an async stream at once)."""

    def __init__(self, inner: Provider, stop: Stop):
        self._inner, self._stop = inner, stop
        self.name = inner.name
        self.url = inner.url
        if has_astream(inner):
            self.astream = functools.partial(self._astream, inner)

    def stream(self, request: ChatRequest) -> Generator[StreamEvent, None, None]:
        self._stop.check()
        inner = self._inner.stream(request)
        try:
            for event in inner:
                self._stop.check()
                yield event
        finally:
            inner.close()

    async def _astream(self, inner: AsyncProvider,
                       request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        self._stop.check()
        async with aclosing(inner.astream(request)) as events:
            async for event in events:
                self._stop.check()
                yield event


@dataclass(slots=True)
class _Attempt:
    """What a task's run has made so far, for its end to close and report."""

    folder: Path
    workspace: Path
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    clock: float = field(default_factory=time.monotonic)
    model: str | None = None
    base: str | None = None
    session: Session | None = None
    conversation: Conversation | None = None


def folder_name(task_id: str) -> str:
    """A folder name for a task id: readable, safe, and distinct for distinct ids."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id)[:60].strip("._-") or "task"
    return f"{readable}-{hashlib.sha256(task_id.encode()).hexdigest()[:10]}"


class TaskRunner:
    """Runs tasks with one batch's options; shares what tasks may share (providers and their
    connections, token counters, built toolchains, the batch's budget ``account``, worker
    threads), never what they must not (workspace, session, log).

    Its coroutines run on one event loop; :meth:`aclose` on that loop, once they ended,
    closes the providers' connections there."""

    def __init__(self, options: BatchOptions, account: Account | None = None):
        self.options = options
        self.account = account
        config = options.config
        self.secrets = dict(options.secrets if options.secrets is not None
                            else config.secret_values(os.environ))
        self.defaults = resolve_settings(config, options.overrides)
        """The settings of a task that says nothing of its own."""
        sandbox, self.warning = choose_sandbox(self.defaults.sandbox, [],
                                               network=self.defaults.network)
        self.policy = sandbox.policy
        self._lock = threading.Lock()
        self._providers: dict[tuple[str, float, int], Provider] = {}
        self._counters: dict[str, TokenCounter] = {}
        self._toolchains: dict[tuple[tuple[str, ...] | None, bool], Toolchain] = {}
        self.executor = DaemonThreads(max(1, options.concurrency) + 8, "fencecall-batch")
        """Where tasks' blocking work runs: a thread per running task at most (tools run
        in one while their task waits on nothing else), and a few for the others' set-up."""
        declared = (options.mcp_servers if options.mcp_servers is not None
                    else options.config.mcp_servers)
        self._mcp = self._mcp_servers(declared) if declared else None

    def _mcp_servers(self, declared: Sequence[McpServerConfig]) -> McpServers:
        from ..tools.mcp.servers import McpServers

        config = self.options.config
        self.options.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        env = tool_environment(os.environ, config.pass_env, secret_names=self.secrets)
        servers = McpServers(declared, env=env, roots=(self.options.folder,),
                             cache_dir=config.home / "mcp-tools", hand_over=False)
        servers.tools(None)  # listed now, so no task's time limit pays for a server's start
        return servers

    async def aclose(self) -> None:
        """Close what the batch shares: the providers' connections on this loop, the MCP
        connections that listed tools, the worker threads (those of tasks left to end on
        their own are not waited for)."""
        for provider in list(self._providers.values()):
            closing = getattr(provider, "aclose", None)
            if callable(closing):
                with contextlib.suppress(Exception):
                    await closing()
        if self._mcp is not None:
            await in_thread(self._mcp.close)
        self.executor.shutdown(wait=False, cancel_futures=True)

    def gates(self) -> list[Gate]:
        """The providers' gates (for the requests in flight and retries)."""
        with self._lock:
            found = [getattr(provider, "gate", None) for provider in self._providers.values()]
        return [gate for gate in found if isinstance(gate, Gate)]

    def timeout_of(self, task: Task) -> float | None:
        return task.task_timeout or self.options.task_timeout

    def _provider(self, settings: RunSettings, task: Task) -> Provider:
        """The provider for the model's server (and request timeout), shared by the tasks
        that use it: one connection pool and one gate, so a rate limit slows all of them
        as one, and another provider's tasks not at all."""
        limit = self.timeout_of(task)
        wait = min(settings.request_timeout, limit) if limit else settings.request_timeout
        key = ((settings.model or "").partition("/")[0], wait, settings.retries)
        with self._lock:
            if key not in self._providers:
                self._providers[key] = assembly.provider(
                    replace(settings, request_timeout=wait), self.options.config,
                    self.secrets, max_connections=max(1, self.options.concurrency))
            return self._providers[key]

    def _counter(self, settings: RunSettings) -> TokenCounter:
        """The model's token counter, shared: a count learned by one task (the system
        prompt, a tool's schema) is not asked of the tokenizer again by the others."""
        key = str(settings.model)
        with self._lock:
            if key not in self._counters:
                self._counters[key] = assembly.counter(settings, self.options.config,
                                                       self.secrets)
            return self._counters[key]

    def _toolchain(self, settings: RunSettings) -> Toolchain:
        """Toolchains are immutable, so tasks with one allowlist (and mode) share one (tool
        files, ``.py`` entries, are loaded from each task's own workspace)."""
        config, names = self.options.config, settings.tools
        if names is not None and any(name.endswith(".py") for name in names):
            with self._lock:
                return assembly.toolchain(settings, config, self._mcp)
        key = (names, settings.autonomous)
        with self._lock:  # built once: the first wave of tasks all asks at the same moment
            if key not in self._toolchains:
                self._toolchains[key] = assembly.toolchain(settings, config, self._mcp)
            return self._toolchains[key]

    async def arun(self, task: Task, stop: Stop) -> TaskResult:
        """Run ``task`` to its end; every failure is the result's status. Cancelled once
        ``stop`` fired, it ends as stopped (or timed out) with what it has so far."""
        folder = real_path(self.options.folder) / "tasks" / folder_name(task.id)
        attempt = _Attempt(folder, folder / "workspace")
        status: Outcome = Outcome.ERROR
        error: str | None = None
        try:
            agent = await in_thread(functools.partial(self._set_up, task, stop, attempt),
                                    self.executor)
            status = await agent.asend(task.prompt)
            if status is Outcome.INTERRUPTED:  # nobody is there to press Ctrl-C
                status = Outcome.ERROR
            elif status in (Outcome.BUDGET, Outcome.TIME_LIMIT):  # which limit, what spent
                error = agent.conversation.messages[-1].content
        except Stopped:
            pass
        except asyncio.CancelledError:
            if not stop.fired:
                raise
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()  # the stop's cancel: the task ends with its result
        except Exception as err:
            status, error = Outcome.ERROR, _describe(err)
        return await in_thread(functools.partial(self._end, task, stop, attempt, status, error),
                               self.executor)

    def _set_up(self, task: Task, stop: Stop, attempt: _Attempt) -> Agent:
        """The task's workspace, session, log and agent (in a worker thread)."""
        folder, workspace, config = attempt.folder, attempt.workspace, self.options.config
        if folder.exists():  # an earlier attempt that never finished: start afresh
            shutil.rmtree(folder)
        folder.mkdir(parents=True, mode=0o700)
        attempt.base = prepare(task.workspace, workspace)
        stop.check()
        settings = resolve_settings(config, task.overrides, self.options.overrides,
                           Overrides(workspace=workspace))
        attempt.model = settings.model
        if settings.model is None:
            raise SetupError("no model: give the task a model, pass --model, or set one "
                             "in the configuration")
        provider = self._provider(settings, task)
        if self.options.budget.usd is not None:  # the batch's USD cap needs its price
            assembly.require_price(settings, config, provider)
        hooks = HookRegistry()
        hooks.add(TOOL_PRE_EXECUTE, _blocked_when(stop), priority=1_000_000, name="batch-stop")
        env = assembly.environment(settings, config, self.secrets,
                                   warn=_said_once)  # the batch warned at its start
        place = assembly.start_environment(settings, workspace, task.workdir, cpus=task.cpus,
                                           memory_mb=task.memory_mb)
        if place is None and (task.cpus or task.memory_mb):
            raise SetupError("cpus and memory_mb limit a task's container: give the task an "
                             "image (or run the batch with --env container:IMAGE)")
        try:
            attempt.session = session = assembly.session(
                env, config, self._toolchain(settings), kind=_StoppableSession, stop=stop,
                confirm=auto_yes if self.options.yes else auto_no, hooks=hooks,
                environment=place, owns_environment=place is not None)
        except BaseException:
            if place is not None:
                place.close()
            raise
        # the results file is fsynced, and a task without its line runs again on resume
        attempt.conversation = conversation = Conversation(folder, synced=False)
        conversation.remember({"model": settings.model, "format": settings.format.name,
                               "tools": list(session.toolchain.names()),
                               "workspace": str(workspace),
                               "sandbox": str(env.sandbox.policy), "batch_task": task.id})
        return assembly.agent(settings, config, _StoppableProvider(provider, stop), session,
                              conversation, sleep=stop.sleep, account=self.account,
                              secrets=self.secrets, tokens=self._counter(settings),
                              executor=self.executor)

    def _end(self, task: Task, stop: Stop, attempt: _Attempt, status: Outcome,
             error: str | None) -> TaskResult:
        """Close the task's session and log, take its diff, and make its result (in a
        worker thread)."""
        try:
            if attempt.session is not None:
                attempt.session.close()
        finally:
            if attempt.conversation is not None:
                attempt.conversation.close()
        if stop.fired and status is Outcome.ERROR:  # an outcome despite the stop stands
            status = Outcome.TIMEOUT if stop.reason == "timeout" else Outcome.STOPPED
            error = (f"ran past its timeout of {self.timeout_of(task):g} s"
                     if status is Outcome.TIMEOUT else "the batch was stopped")
        workspace, changes = attempt.workspace, None
        if workspace.is_dir() and status is not Outcome.STOPPED:
            try:
                changes = diff(workspace, attempt.base,
                               Sandbox(self.policy, (real_path(workspace),)))
            except WorkspaceError as err:
                error = f"{error}; {err}" if error else str(err)
        if workspace.is_dir() and _removes(self.options.keep_workspaces, status):
            try:
                _remove_tree(workspace)
            except OSError as err:
                note = f"the workspace could not be removed ({err})"
                error = f"{error}; {note}" if error else note
        conversation = attempt.conversation
        messages = conversation.messages if conversation is not None else []
        result = _result(task, status, error, messages, self.options.config,
                         model=attempt.model, diff=changes, wall=time.monotonic() - attempt.clock,
                         started=attempt.started,
                         log=conversation.path if conversation is not None else None,
                         workspace=workspace if workspace.is_dir() else None)
        if self.options.trajectories and conversation is not None:
            result = replace(result, trajectory=str(_write_trajectory(
                conversation, self.options.config)))
        return result


def _write_trajectory(conversation: Conversation, config: Config) -> Path:
    """The task's trajectory in ATIF, written beside its log (``trajectory.json``)."""
    assert conversation.folder is not None
    path = conversation.folder / TRAJECTORY_NAME
    path.write_text(export(conversation, "atif",
                           lambda model: config.model_settings(model).price), encoding="utf-8")
    return path


def _said_once(warning: str) -> None:
    """A task's sandbox warning: the batch said it once, for all its tasks."""


def _removes(policy: KeepPolicy, status: Outcome) -> bool:
    return policy == "none" or (policy == "failed" and status is Outcome.DONE)


def _remove_tree(folder: Path) -> None:
    """Remove a task's workspace, also folders its commands made read-only or unreadable.
    Each folder is opened relative to its parent's descriptor and never through a link, so
    a process that swaps a folder for a link meanwhile cannot point a chmod outside."""
    for _, folders, _, parent in os.fwalk(folder):
        for name in folders:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                             dir_fd=parent)
            except OSError:
                continue  # a link (rmtree unlinks it) or gone
            try:
                os.fchmod(fd, 0o700)
            finally:
                os.close(fd)
    shutil.rmtree(folder)


def _blocked_when(stop: Stop) -> Callable[[ToolPreExecute], Block | None]:
    def hook(event: ToolPreExecute) -> Block | None:
        return Block("the batch task was stopped (its timeout, or the batch ending)") if (
            stop.fired) else None

    return hook


def _describe(err: Exception) -> str:
    """What went wrong, for the result: fencecall's own errors say it in their message."""
    text = str(err).strip()
    if isinstance(err, WorkspaceError | SetupError | ProviderError | UserError):
        return text
    return f"{type(err).__name__}: {text}"


def _result(task: Task, status: Outcome, error: str | None, messages: Sequence[Message],
            config: Config, *,
            model: str | None, diff: str | None, wall: float, started: datetime,
            log: Path | None, workspace: Path | None) -> TaskResult:
    """The result record: the log's replies, calls, tokens and cost (as ``fencecall stats``
    counts them)."""
    replies = [m for m in messages if m.role == "assistant"]
    calls = tuple(
        ToolCallRecord(m.call.tool, m.call.outcome, m.call.duration_s,
                       None if m.call.ok else m.content[:ERROR_TEXT])
        for m in messages if m.role == "system" and m.call is not None)
    stats = collect([messages], lambda key: config.model_settings(key).price)
    tokens = dict.fromkeys(TOKEN_KINDS, 0)
    for entry in stats.models.values():
        for kind in TOKEN_KINDS:
            tokens[kind] += entry.tokens[kind]
    cost = stats.cost
    return TaskResult(
        id=task.id, status=status, final=answer_of(messages),
        error=error, steps=len(replies), tool_calls=calls,
        tool_errors=sum(call.outcome != "ok" for call in calls), tokens=tokens,
        counted_replies=sum(entry.counted + entry.estimated for entry in stats.models.values()),
        estimated_replies=sum(entry.estimated for entry in stats.models.values()),
        cost_usd=None if cost is None else str(cost), model=model, wall_s=round(wall, 3),
        diff=diff, log=str(log) if log else None,
        workspace=str(workspace) if workspace else None, metadata=dict(task.metadata),
        started=started.isoformat(), finished=datetime.now(UTC).isoformat())

