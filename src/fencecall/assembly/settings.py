"""Every setting of a run, resolved in one place.

Frontends say what they were told (flags, a resumed log's settings, a batch's options, a
task's line) as :class:`Overrides`, most specific first; :func:`resolve` applies one
precedence to all of them (the first override that sets a value, then the environment's
``FENCECALL_*`` variables, then the model's own ``[models."provider/name"]`` table, then the
file's top level and the defaults) and every derived rule: the window asked of a self-hosted
server, the compact prompt for small windows, the reply's share of the window, the roots and
MCP servers a run gets. The result is one frozen :class:`RunSettings`. Adding a setting means
adding it here and in the code that uses it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from ..accounting import Limits, Price
from ..accounting.prices import listed_window
from ..config import Compaction, Config, ConfigError, PromptMode, Sampling
from ..parsing import CallFormat, get_format
from ..tools.mcp import McpServerConfig
from ..tools.runtime.sandbox import SandboxPolicy

T = TypeVar("T")

REPLY_SHARE = 4
"""Without a configured reply limit, a reply may take at most 1/REPLY_SHARE of the window."""
DEFAULT_WINDOW = 32_768
"""The window assumed for a model whose window no configuration, server or model table
gives (so that compaction still keeps requests inside some window)."""


NO_MODEL = ("no model configured: pass --model provider/name or set FENCECALL_MODEL "
            "(e.g. openai/gpt-4o, local/qwen2.5)")


class NoModel(ConfigError):
    """A run that needs a model has none: no source of settings names one."""


@dataclass(frozen=True, slots=True)
class Overrides:
    """What one source of settings says; None (or empty) where it says nothing.

    ``roots`` are folders beside the workspace the model may write; ``mcp`` servers join the
    configured ones (replacing one of the same name). Both add up across sources."""

    model: str | None = None
    format: str | None = None
    tools: tuple[str, ...] | None = None
    max_steps: int | None = None
    max_tokens: int | None = None
    retries: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    context_window: int | None = None
    prompt: PromptMode | None = None
    timeout: float | None = None
    """Seconds to wait for the model's server."""
    workspace: Path | None = None
    roots: tuple[Path, ...] = ()
    sandbox: str | None = None
    network: bool | None = None
    mcp: tuple[McpServerConfig, ...] = ()
    budget_usd: float | None = None
    budget_tokens: int | None = None
    time_limit: float | None = None
    """Wall-clock seconds for the whole run."""
    autonomous: bool | None = None
    """Nobody reads the replies: only the complete tool ends the run done."""
    compaction: Compaction | None = None
    background_after: float | None = None
    """Seconds a shell command runs before it goes on as a background job (0: never)."""

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> Overrides:
        """What the ``FENCECALL_MODEL``, ``_FORMAT``, ``_TOOLS`` and ``_SANDBOX`` variables say."""
        tools = env.get("FENCECALL_TOOLS")
        return cls(model=env.get("FENCECALL_MODEL") or None,
                   format=env.get("FENCECALL_FORMAT") or None,
                   tools=tuple(t.strip() for t in tools.split(",") if t.strip())
                   if tools else None,
                   sandbox=env.get("FENCECALL_SANDBOX") or None)


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Everything a run is built from, resolved (see :func:`resolve`)."""

    model: str | None
    """``provider/name``, as configured; None where no source names one (running a saved
    reply, serving tools: nothing asks a model)."""
    format: CallFormat
    tools: tuple[str, ...] | None
    """The tool allowlist (None: every tool available by default)."""
    max_steps: int
    max_tokens: int
    retries: int
    sampling: Sampling
    context_window: int | None
    compact: bool
    feedback_limit: int
    request_timeout: float
    workspace: Path
    roots: tuple[Path, ...]
    """The folders the model may write, the workspace first."""
    sandbox: SandboxPolicy
    network: bool
    mcp_servers: tuple[McpServerConfig, ...]
    limits: Limits = field(default_factory=Limits)
    price: Price | None = None
    """The model's configured price (None: ``genai-prices``' list price, if any)."""
    autonomous: bool = False
    """The run has nobody reading its replies: its tools include ``complete``, and only a
    call of it ends the run done (see :class:`~fencecall.agent.Agent`)."""
    compaction: Compaction = "summary"
    """How a history that outgrows the window is kept inside it (:mod:`fencecall.agent.context`)."""
    result_share: float = 0.25
    """A tool result above this share of the window is saved to a file instead."""
    background_after: float | None = 15.0
    """Seconds a shell command runs before it goes on as a background job (None: never)."""
    max_jobs: int = 8

    @property
    def model_name(self) -> str:
        """The model as its provider names it (``gpt-4o`` of ``openai/gpt-4o``)."""
        return (self.model or "").partition("/")[2]


def resolve(config: Config, *overrides: Overrides, env: Mapping[str, str] | None = None,
            ask_server: bool = False,
            served: Callable[[str, str], int | None] | None = None) -> RunSettings:
    """The settings of a run. ``env`` (default: this process's environment) comes after the
    overrides. With ``ask_server`` and no window configured, a self-hosted OpenAI-compatible
    server is asked for its model's window (``served``). Raises :class:`ConfigError` for a
    value no source could have meant."""
    sources = (*overrides, Overrides.from_environment(os.environ if env is None else env))

    def first(pick: Callable[[Overrides], T | None], *fallbacks: T | None) -> T | None:
        return next((found for found in (*(pick(o) for o in sources), *fallbacks)
                     if found is not None), None)

    model = first(lambda o: o.model, config.model) or None
    per_model = config.model_settings(model or "")
    window = first(lambda o: o.context_window, per_model.context_window)
    provider_name, _, model_name = (model or "").partition("/")
    provider = config.providers.get(provider_name)
    if window is None and ask_server and provider is not None and provider.kind == "openai" \
            and provider.base_url:
        from ..providers.served import served_context_window
        window = (served or served_context_window)(provider.base_url, model_name)
    if window is None and provider is not None and model_name:
        window = listed_window(model_name, provider.kind, provider.base_url or None)
    compaction: Compaction = first(lambda o: o.compaction, config.compaction) or "summary"
    if window is None and model_name and compaction != "off":
        window = DEFAULT_WINDOW
    reply_limit = first(lambda o: o.max_tokens, per_model.max_tokens)
    if reply_limit is None:
        reply_limit = (min(config.max_tokens, window // REPLY_SHARE) if window
                       else config.max_tokens)
    prompt = replace(per_model, context_window=window,
                     prompt=first(lambda o: o.prompt, per_model.prompt)).prompt_mode()
    workspace = (first(lambda o: o.workspace) or Path.cwd()).expanduser().resolve()
    roots = dict.fromkeys((workspace, *(root.expanduser().resolve()
                                        for o in sources for root in o.roots)))
    servers = {server.name: server for server in config.mcp_servers}
    for source in reversed(sources):  # the more specific source's server wins a name
        servers.update((server.name, server) for server in source.mcp)
    return RunSettings(
        model=model,
        format=_format(first(lambda o: o.format), config.format),
        tools=first(lambda o: o.tools, config.tools),
        max_steps=first(lambda o: o.max_steps, config.max_steps) or config.max_steps,
        max_tokens=reply_limit,
        retries=first(lambda o: o.retries, config.retries) or 0,
        sampling=Sampling(first(lambda o: o.temperature, per_model.sampling.temperature),
                          first(lambda o: o.top_p, per_model.sampling.top_p),
                          next((o.stop for o in sources if o.stop), per_model.sampling.stop)),
        context_window=window,
        compact=prompt == "compact",
        feedback_limit=config.near_misses,
        request_timeout=first(lambda o: o.timeout, config.timeout) or config.timeout,
        workspace=workspace,
        roots=tuple(roots),
        sandbox=_sandbox(first(lambda o: o.sandbox), config.sandbox),
        network=bool(first(lambda o: o.network, config.network)),
        mcp_servers=tuple(servers.values()),
        limits=Limits(first(lambda o: o.budget_usd, per_model.limits.usd, config.limits.usd),
                      first(lambda o: o.budget_tokens, per_model.limits.tokens,
                            config.limits.tokens),
                      first(lambda o: o.time_limit, per_model.limits.time,
                            config.limits.time)),
        price=per_model.price,
        autonomous=bool(first(lambda o: o.autonomous, config.autonomous)),
        compaction=compaction, result_share=config.result_share,
        background_after=first(lambda o: o.background_after, config.background_after) or None,
        max_jobs=config.max_jobs)


def _format(name: str | None, configured: CallFormat) -> CallFormat:
    if name is None:
        return configured
    try:
        return get_format(name)
    except ValueError as err:
        raise ConfigError(f"format: {err}") from None


def _sandbox(name: str | None, configured: SandboxPolicy) -> SandboxPolicy:
    if name is None:
        return configured
    try:
        return SandboxPolicy(name)
    except ValueError:
        choices = ", ".join(policy.value for policy in SandboxPolicy)
        raise ConfigError(f"sandbox {name!r}: choose one of {choices}") from None
