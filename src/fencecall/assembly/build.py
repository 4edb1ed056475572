"""Building a run from its settings: the provider, the environment (workspace, roots,
sandbox, secrets, MCP servers), the toolchain, the session and the agent.

Every frontend builds its runs here: ``fencecall chat`` and one-shot runs with
:func:`assemble`, the others (``fencecall run``, ``mcp serve``, ``tools``, batch tasks,
which share a provider or a toolchain between runs) with the parts it is made of.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Config, ConfigError, check_apart
from ..execution import Session
from ..execution.permissions import Permissions
from ..realpath import inside, real_path
from ..sandbox import Sandbox, choose_sandbox
from ..secrecy import Redactor, scrub_own_environ, tool_environment
from ..tools import ConfirmFunc, HookRegistry, Toolchain
from ..tools.builtin import complete
from ._places import start_environment
from ._run_settings import NO_MODEL, NoModel, RunSettings

if TYPE_CHECKING:  # the agent, the providers and their accounting: for the runs that use them
    from concurrent.futures import Executor

    from ..accounting import Account, Pricing, TokenCounter
    from ..agent import Agent, Conversation, EventSink
    from ..environments import Environment as Place
    from ..providers import Provider
    from ..tools.mcp.servers import McpServers

Warn = Callable[[str], None]
"""Where a warning is said once (a sandbox that cannot run, an MCP server that failed)."""


def _warn(text: str) -> None:
    warnings.warn(text, RuntimeWarning, stacklevel=3)


@dataclass(frozen=True, slots=True)
class Environment:
    """Where a run's tools work and what they may not leak: the secrets (by variable name),
    and the sandbox over the settings' roots."""

    settings: RunSettings
    secrets: Mapping[str, str]
    sandbox: Sandbox


def own_secrets(config: Config) -> dict[str, str]:
    """The secrets set in this process's environment, their values then wiped from its
    environment block (they stay in memory for the providers), so no tool can read them back
    through ``/proc``."""
    secrets = config.secret_values(os.environ)
    scrub_own_environ(secrets)
    return secrets


def environment(settings: RunSettings, config: Config, secrets: Mapping[str, str], *,
                warn: Warn = _warn) -> Environment:
    """The run's environment: the workspace made if missing, the roots refused if they hold
    fencecall's home or its configuration file or lie in the home (see :func:`check_apart`),
    and the sandbox chosen (where it cannot run, ``warn`` says the fallback)."""
    make_workspace(settings.workspace)
    check_apart(config, [("the workspace", settings.workspace),
                         *(("the --root folder", root) for root in settings.roots[1:])])
    sandbox, warning = choose_sandbox(settings.sandbox, settings.roots,
                                      network=settings.network, limits=config.resources)
    if warning:
        warn(warning)
    return Environment(settings, dict(secrets), sandbox)


_KERNEL_FOLDERS = (Path("/proc"), Path("/sys"), Path("/dev"))


def make_workspace(folder: Path) -> None:
    """Make the workspace if only its last folder is missing; refuse one that is a file, a
    kernel folder (``/proc``, ``/sys``, ``/dev``), or whose parent is missing too: a typo
    must not make a tree of folders from the root."""
    real = real_path(folder.expanduser())
    if any(inside(real, kernel) for kernel in _KERNEL_FOLDERS):
        raise ConfigError(f"the workspace {folder} is in a kernel folder ({real}): choose a "
                          "folder of files")
    if real.is_dir():
        return
    if real.exists():
        raise ConfigError(f"the workspace {folder} is not a folder")
    if not real.parent.is_dir():
        raise ConfigError(f"the workspace {folder} does not exist and neither does its folder "
                          f"{real.parent}: make it first (mkdir -p) or choose another")
    try:
        real.mkdir()
    except OSError as err:
        raise ConfigError(f"cannot make the workspace {folder}: {err.strerror}") from None


_prepared = environment
"""The function above, for the builders whose ``environment`` is where the tools run."""


def mcp_servers(env: Environment, config: Config) -> McpServers | None:
    """The settings' MCP servers (None without one: the MCP machinery is then never
    imported). Their processes get the environment tools get, and nothing from the roots."""
    if not env.settings.mcp_servers:
        return None
    from ..tools.mcp.servers import McpServers

    tool_env = tool_environment(os.environ, config.pass_env, secret_names=env.secrets)
    return McpServers(env.settings.mcp_servers, env=tool_env, roots=env.settings.roots,
                      cache_dir=config.home / "mcp-tools")


def toolchain(settings: RunSettings, config: Config, servers: McpServers | None = None, *,
              warn: Warn | None = None) -> Toolchain:
    """The tools the settings select from the built-ins, plugins, the configured tool
    packages and the MCP servers, and in an autonomous run the complete tool besides (the
    only way such a run ends done). Each server that fails to start says why, as a warning
    or through ``warn``, also when the selection then fails."""
    if warn is None:
        return _selected(settings, config, servers)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            return _selected(settings, config, servers)
    finally:  # said outside the catching block, where a warning is not caught again
        for warning in caught:
            warn(str(warning.message))


def _selected(settings: RunSettings, config: Config, servers: McpServers | None) -> Toolchain:
    """What the allowlist selects, and complete in an autonomous run: it is off by default,
    so an allowlist seldom names it, and without it such a run could never end done."""
    extra = servers.tools(settings.tools) if servers else []
    chain = Toolchain.build(settings.tools, root=settings.workspace,
                            packages=config.tool_packages, extra=extra)
    if settings.autonomous and chain.get(complete.NAME) is None:  # off by default
        chain = replace(chain, tools=(*chain.tools, complete.tool))
    return chain


def provider(settings: RunSettings, config: Config,
             secrets: Mapping[str, str] | None = None, *,
             max_connections: int = 64, warn: Warn = _warn) -> Provider:
    """The model's provider, waiting ``request_timeout`` for its server and retrying its
    requests ``retries`` times, with at most ``max_connections`` requests open at once on
    an event loop. ``secrets`` holds the API keys (default: the environment). Raises
    :class:`NoModel` when the settings name no model."""
    if settings.model is None:
        raise NoModel(NO_MODEL)
    from ..providers import get_provider

    built, _ = get_provider(settings.model, config, secrets, timeout=settings.request_timeout,
                            retries=settings.retries, max_connections=max_connections)
    if settings.sampling.logprobs and not getattr(built, "gives_logprobs", False):
        warn(f"--logprobs is ignored: {settings.model}'s API gives no log probabilities")
    if settings.limits.usd is not None:
        require_price(settings, config, built)
    return built


def require_price(settings: RunSettings, config: Config, model: Provider) -> None:
    """Raise :class:`ConfigError` where the model's price is unknown: a USD budget could
    not be held (say which key would fix it)."""
    if not pricing(settings, model).known:
        where = config.path or "the configuration file"
        raise ConfigError(
            f"a USD budget (--budget-usd, budget_usd): the price of {settings.model} is "
            f"unknown (genai-prices does not list it), so the budget cannot be held; set its "
            f"price in {where}: "
            f'[models."{settings.model}"] price = {{input = USD, output = USD}} (per million '
            "tokens), or use --budget-tokens")


def pricing(settings: RunSettings, model: Provider) -> Pricing:
    """The model's price: the configured one, else its list price."""
    from ..accounting import Pricing

    return Pricing(settings.model_name, model.name, model.url or None, settings.price)


def counter(settings: RunSettings, config: Config,
            secrets: Mapping[str, str] | None = None) -> TokenCounter:
    """Counts the model's tokens where its provider reports none (see
    :func:`~fencecall.accounting.counter_for`). ``secrets`` hold the API keys, as for
    :func:`provider` (default: the environment): Anthropic's counting endpoint needs one."""
    from ..accounting import Estimate, counter_for

    provider_name = (settings.model or "").partition("/")[0]
    found = config.providers.get(provider_name)
    if found is None:
        return Estimate()
    key = found.api_key(os.environ if secrets is None else secrets)
    return counter_for(found.kind, found.base_url, settings.model_name, key)


def session(env: Environment, config: Config, chain: Toolchain, *, confirm: ConfirmFunc,
            servers: McpServers | None = None, hooks: HookRegistry | None = None,
            kind: Callable[..., Session] = Session, warn: Warn = _warn,
            **extra: Any) -> Session:
    """The session of a run: its tools, confirmation, permission rules, roots, sandbox and
    secrets, and the user's hooks from the configuration file (``warn`` tells of one that
    fails). ``kind`` makes it (a :class:`Session` subclass, with ``extra`` arguments);
    ``servers`` are closed with it."""
    if config.hooks:
        from ..tools.user_hooks import UserHooks

        hooks = hooks or HookRegistry()
        UserHooks(config.hooks, redact=Redactor(env.secrets), warn=warn).register(hooks)
    return kind(chain, workspace=env.settings.workspace, confirm=confirm,
                permissions=Permissions(env.settings.permissions),
                extra_roots=env.settings.roots[1:], hooks=hooks, sandbox=env.sandbox,
                pass_env=config.pass_env, secrets=env.secrets, mcp_servers=servers,
                background_after=env.settings.background_after,
                max_jobs=env.settings.max_jobs, **extra)


def agent(settings: RunSettings, config: Config, model: Provider, run_session: Session,
          conversation: Conversation | None = None, *, on_event: EventSink | None = None,
          sleep: Callable[[float], None] = time.sleep,
          account: Account | None = None, secrets: Mapping[str, str] | None = None,
          tokens: TokenCounter | None = None, executor: Executor | None = None,
          interruptible: bool = False, checkpoints: bool = False) -> Agent:
    """The agent loop of a run, its spend counted from now and held to the settings'
    limits, and to a budget shared with other runs (``account``, a batch's) where given;
    ``sleep`` waits out a retry's backoff and a shared budget held by other runs;
    ``secrets`` hold the API keys a token counter may need (default: the environment);
    ``tokens`` is the model's counter where runs share one (default: :func:`counter`);
    ``executor``, ``interruptible`` and ``checkpoints`` as in
    :class:`~fencecall.agent.AgentSettings`."""
    from ..accounting import Spend
    from ..agent import Agent, AgentSettings

    how = AgentSettings(
        fmt=settings.format, max_steps=settings.max_steps, max_tokens=settings.max_tokens,
        retries=settings.retries, feedback_limit=settings.feedback_limit,
        sampling=settings.sampling, compact=settings.compact,
        context_window=settings.context_window, compaction=settings.compaction,
        result_share=settings.result_share, autonomous=settings.autonomous,
        vision=settings.vision, interruptible=interruptible, sleep=sleep, executor=executor,
        checkpoints=checkpoints)
    return Agent(model, settings.model_name, run_session, conversation, how, on_event=on_event,
                 counter=tokens or counter(settings, config, secrets),
                 spend=Spend(pricing(settings, model), settings.limits, account=account,
                             wait=sleep))


def tool_session(settings: RunSettings, config: Config, *, confirm: ConfirmFunc,
                 secrets: Mapping[str, str] | None = None, hooks: HookRegistry | None = None,
                 warn: Warn = _warn, environment: Place | None = None) -> Session:
    """A session with the settings' environment, MCP servers and tools (also a run without
    a model: a saved reply's calls). ``secrets`` default to this process's (see
    :func:`own_secrets`). Servers that were started are stopped again if the tools cannot
    be selected. The tools run in ``environment`` where one is given (started by the
    caller, who closes it), else in the one the settings name (a container, started here
    and closed with the session)."""
    secrets = own_secrets(config) if secrets is None else secrets
    env = _prepared(settings, config, secrets, warn=warn)
    servers = mcp_servers(env, config)
    owned = None
    try:
        owned = start_environment(settings) if environment is None else None
        chain = toolchain(settings, config, servers, warn=warn)
        return session(env, config, chain, confirm=confirm, servers=servers, hooks=hooks,
                       warn=warn, environment=environment or owned,
                       owns_environment=owned is not None)
    except BaseException:
        if servers is not None:
            servers.close()
        if owned is not None:
            owned.close()
        raise


def assemble(settings: RunSettings, config: Config, *, confirm: ConfirmFunc,
             conversation: Callable[[], Conversation] | None = None,
             on_event: EventSink | None = None, secrets: Mapping[str, str] | None = None,
             warn: Warn = _warn, interruptible: bool = False,
             environment: Place | None = None) -> Agent:
    """A whole run: the provider, then the :func:`tool_session`, then the conversation
    (``conversation()`` makes or opens it only once the run's environment stands, so a
    refused run leaves no log behind; default: one in memory), then the agent
    (``interruptible`` as in :class:`~fencecall.agent.AgentSettings`), which keeps
    checkpoints of the workspace where the conversation has a folder. The tools run in
    ``environment`` where given (see :func:`tool_session`)."""
    secrets = own_secrets(config) if secrets is None else secrets
    model = provider(settings, config, secrets, warn=warn)
    run_session = tool_session(settings, config, confirm=confirm, secrets=secrets, warn=warn,
                               environment=environment)
    try:
        log = conversation() if conversation is not None else None
    except BaseException:
        run_session.close()
        raise
    return agent(settings, config, model, run_session, log, on_event=on_event, secrets=secrets,
                 interruptible=interruptible, checkpoints=True)
