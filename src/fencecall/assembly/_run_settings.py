"""Every setting of a run, resolved in one place.

Frontends say what they were told (flags, a resumed log's settings, a batch's options, a
task's line, :func:`~fencecall.assembly.agent_from_config`'s keywords) as :class:`Overrides`,
most specific first; :func:`resolve_settings` puts them, the environment's ``FENCECALL_*``
variables, the model's own ``[models."provider/name"]`` table and the file's top level
through one precedence (:func:`merge`: the first that says a setting gives it) and applies
every derived rule: the window asked of a self-hosted server, the compact prompt for small
windows, the reply's share of the window, the roots and MCP servers a run gets. The result
is one frozen :class:`RunSettings`. A setting has one name in the file, the flags, the
sources and the result, and its default in one place (:class:`~fencecall.config.Config`'s
field, or :mod:`fencecall.defaults`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..accounting import Limits, Price
from ..accounting.prices import listed_window
from ..config import READERS, Compaction, Config, ConfigError, ModelSettings, PromptMode, Sampling
from ..defaults import BACKGROUND_AFTER, COMPACTION, MAX_JOBS, RESULT_SHARE
from ..environments import parse_environment
from ..parsing import CallFormat, get_format
from ..realpath import real_path
from ..sandbox import SandboxPolicy
from ..tools.permission_rules import PermissionRules, Rule

if TYPE_CHECKING:
    from ..parsing import FormatLike
    from ..tools.mcp import McpServerConfig

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
    """What one source of settings says; None (or empty) where it says nothing. Each field
    has the name of its configuration key (:class:`~fencecall.config.Config`), and of its
    flag and batch task key where there is one.

    ``roots`` are folders beside the workspace the model may write; ``mcp`` servers join the
    configured ones (replacing one of the same name); ``allow`` and ``deny`` are permission
    rules. They add up across sources."""

    model: str | None = None
    format: FormatLike | None = None
    tools: tuple[str, ...] | None = None
    max_steps: int | None = None
    max_tokens: int | None = None
    retries: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    context_window: int | None = None
    prompt: PromptMode | None = None
    request_timeout: float | None = None
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
    feedback_limit: int | None = None
    result_share: float | None = None
    max_jobs: int | None = None
    logprobs: bool | None = None
    """Ask the model's server for each generated token's log probability (a flag, not a
    key of the file: it is asked for a run, not a setup)."""
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    environment: str | None = None
    """Where the tools run: ``host``, ``sandbox`` or ``container:IMAGE``."""
    container_cli: str | None = None

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> Overrides:
        """What the ``FENCECALL_MODEL``, ``_FORMAT``, ``_TOOLS`` and ``_SANDBOX`` variables say."""
        tools = env.get("FENCECALL_TOOLS")
        return cls(model=env.get("FENCECALL_MODEL") or None,
                   format=env.get("FENCECALL_FORMAT") or None,
                   tools=tuple(t.strip() for t in tools.split(",") if t.strip())
                   if tools else None,
                   sandbox=env.get("FENCECALL_SANDBOX") or None)


def merge(*layers: Overrides) -> Overrides:
    """What ``layers`` say together, the most specific first: each setting as the first layer
    that says it gives it (a value other than its field's default: None, or an empty
    ``stop``); ``roots``, ``allow``, ``deny`` and ``mcp`` add up, a nearer layer's server
    winning its name. The one rule of precedence every source of a run's settings goes
    through."""
    said: dict[str, Any] = {}
    for name, default in _OVERRIDE_DEFAULTS:
        values = [getattr(layer, name) for layer in layers]
        if name in ("roots", "allow", "deny"):
            said[name] = tuple(root for value in values for root in value)
        elif name == "mcp":
            named = {server.name: server for value in reversed(values) for server in value}
            said[name] = tuple(named.values())
        else:
            said[name] = next((v for v in values if v != default), default)
    return Overrides(**said)


_OVERRIDE_DEFAULTS = tuple((item.name, item.default) for item in fields(Overrides))
"""Each setting of :class:`Overrides` and its default, read once (``fields`` builds them
anew on every call, twice per batch task)."""


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Everything a run is built from, resolved (see :func:`resolve_settings`)."""

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
    vision: bool = True
    """The model takes images (its ``vision`` setting)."""
    autonomous: bool = False
    """The run has nobody reading its replies: its tools include ``complete``, and only a
    call of it ends the run done (see :class:`~fencecall.agent.Agent`)."""
    compaction: Compaction = COMPACTION
    """How a history that outgrows the window is kept inside it
    (:mod:`fencecall.agent._context`)."""
    result_share: float = RESULT_SHARE
    """A tool result above this share of the window is saved to a file instead."""
    background_after: float | None = BACKGROUND_AFTER
    """Seconds a shell command runs before it goes on as a background job (None: never)."""
    max_jobs: int = MAX_JOBS
    permissions: PermissionRules = field(default_factory=PermissionRules)
    """The rules of every source together (the file's, then ``--allow`` and ``--deny``)."""
    environment: str = "sandbox"
    """Where the tools run: ``host`` (the sandbox off), ``sandbox``, or ``container:IMAGE``
    (the sandbox off too: the container is the boundary)."""
    container_cli: str = "auto"

    @property
    def model_name(self) -> str:
        """The model as its provider names it (``gpt-4o`` of ``openai/gpt-4o``)."""
        return (self.model or "").partition("/")[2]


PLAIN = ("tools", "max_steps", "retries", "request_timeout", "network", "feedback_limit",
         "autonomous", "compaction", "result_share", "max_jobs", "container_cli")
"""The settings a run takes as the first source that says them gives them: each has the same
name in :class:`Overrides`, :class:`~fencecall.config.Config` and :class:`RunSettings`."""
FROM_FILE = tuple(item.name for item in fields(Overrides)
                  if item.name in READERS and item.name != "max_tokens")
"""The file's single-valued keys that are also a source's settings (read from the names
they share). The file's reply limit is not among them: it is capped by the window."""


def resolve_settings(config: Config, *overrides: Overrides,
                     env: Mapping[str, str] | None = None, ask_server: bool = False,
                     served: Callable[[str, str], int | None] | None = None) -> RunSettings:
    """The settings of a run. ``env`` (default: this process's environment) comes after the
    overrides. With ``ask_server`` and no window configured, a self-hosted OpenAI-compatible
    server is asked for its model's window (``served``). Raises :class:`ConfigError` for a
    value no source could have meant."""
    said = merge(*overrides, Overrides.from_environment(os.environ if env is None else env))
    model = said.model or config.model or None
    per_model = config.model_settings(model or "")
    said = merge(said, _model_layer(per_model), _file_layer(config))
    window = _window(config, said, model, ask_server, served)
    prompt = replace(per_model, context_window=window, prompt=said.prompt).prompt_mode()
    workspace = real_path((said.workspace or Path.cwd()).expanduser())
    environment = _environment(said.environment, config.environment)
    roots = dict.fromkeys((workspace, *(real_path(root.expanduser()) for root in said.roots)))
    reply_limit = said.max_tokens
    if reply_limit is None:
        reply_limit = (min(config.max_tokens, window // REPLY_SHARE) if window
                       else config.max_tokens)
    return RunSettings(
        model=model, format=_format(said.format, config.format), max_tokens=reply_limit,
        sampling=Sampling(said.temperature, said.top_p, said.stop, bool(said.logprobs)),
        context_window=window,
        compact=prompt == "compact", workspace=workspace, roots=tuple(roots),
        sandbox=_sandbox(said.sandbox, config.sandbox, environment), mcp_servers=said.mcp,
        environment=environment,
        limits=Limits(said.budget_usd, said.budget_tokens, said.time_limit),
        price=per_model.price, vision=per_model.vision,
        background_after=said.background_after or None,
        permissions=PermissionRules(said.allow, said.deny),
        **{name: getattr(said, name) for name in PLAIN})


def _model_layer(model: ModelSettings) -> Overrides:
    """What the model's own ``[models."provider/name"]`` table says: below every source,
    above the file's top level."""
    return Overrides(max_tokens=model.max_tokens, temperature=model.sampling.temperature,
                     top_p=model.sampling.top_p, stop=model.sampling.stop,
                     context_window=model.context_window, prompt=model.prompt,
                     budget_usd=model.limits.usd, budget_tokens=model.limits.tokens,
                     time_limit=model.limits.time)


def _file_layer(config: Config) -> Overrides:
    """What the file's top level says (its defaults where it is silent): the last source."""
    return Overrides(**{name: getattr(config, name) for name in FROM_FILE},
                     mcp=config.mcp_servers, allow=config.permissions.allow,
                     deny=config.permissions.deny, budget_usd=config.limits.usd,
                     budget_tokens=config.limits.tokens, time_limit=config.limits.time)


def _window(config: Config, said: Overrides, model: str | None, ask_server: bool,
            served: Callable[[str, str], int | None] | None) -> int | None:
    """The context window a source or the model's table gives; else (``ask_server``) the
    one a self-hosted server reports, the model's listed one, or :data:`DEFAULT_WINDOW`
    where compaction needs one."""
    window = said.context_window
    provider_name, _, model_name = (model or "").partition("/")
    provider = config.providers.get(provider_name)
    if window is None and ask_server and provider is not None and provider.kind == "openai" \
            and provider.base_url:
        from ..providers.served import served_context_window
        window = (served or served_context_window)(provider.base_url, model_name)
    if window is None and provider is not None and model_name:
        window = listed_window(model_name, provider.kind, provider.base_url or None)
    if window is None and model_name and said.compaction != "off":
        window = DEFAULT_WINDOW
    return window


def _format(name: FormatLike | None, configured: CallFormat) -> CallFormat:
    if name is None:
        return configured
    try:
        return get_format(name)
    except ValueError as err:
        raise ConfigError(f"format: {err}") from None


def _environment(text: str | None, configured: str) -> str:
    if text is None:
        return configured
    try:
        return str(parse_environment(text))
    except ValueError as err:
        raise ConfigError(str(err)) from None


def _sandbox(name: str | None, configured: SandboxPolicy, environment: str) -> SandboxPolicy:
    """The sandbox policy; off where the tools run on the host or in a container."""
    if environment != "sandbox":
        return SandboxPolicy.OFF
    if name is None:
        return configured
    try:
        return SandboxPolicy(name)
    except ValueError:
        choices = ", ".join(policy.value for policy in SandboxPolicy)
        raise ConfigError(f"sandbox {name!r}: choose one of {choices}") from None
