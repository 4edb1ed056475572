"""An agent built from the user's configuration in one call, the way the command line builds
one: the configuration file and the environment, then the caller's settings over them.

    from fencecall import agent_from_config, auto_yes

    with agent_from_config("openai/gpt-4o-mini", max_steps=10, confirm=auto_yes) as agent:
        print(agent.run("Make the tests pass.").answer)

Keyword settings have the names (and the checks) of the configuration file's keys, so a
setting reads the same in the file, on the command line and here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import (
    LIMIT_KEYS,
    READERS,
    RENAMED,
    Config,
    ConfigError,
    load_config,
    read_limits,
    read_settings,
)
from ..errors import new_names, unknown_settings
from ..execution import auto_no
from ..tools import ConfirmFunc
from ._run_settings import NO_MODEL, NoModel, Overrides, resolve_settings
from .build import assemble, own_secrets

if TYPE_CHECKING:
    from ..agent import Agent

WHERE = "agent_from_config"
"""How an error names the keywords it is about."""
KEYWORDS = frozenset({*READERS, *LIMIT_KEYS} - {"model", "telemetry", "telemetry_content"})
"""The settings :func:`agent_from_config` takes as keywords: the file's single-valued keys
(and their old names). Not telemetry: whether spans are sent is the caller's choice of
:func:`fencecall.telemetry.using`, around whatever it runs."""
_SAID = frozenset(item.name for item in fields(Overrides))
"""The settings a source may say (as a flag does): those keywords win over the environment."""


class ConfiguredAgent:
    """An agent from :func:`agent_from_config`, and what it owns: closing it ends the
    session (the tools' processes, background jobs, MCP servers) and the conversation's log.
    As a context manager it gives the :class:`~fencecall.agent.Agent` and closes both after."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def close(self) -> None:
        """End the session, then the log (also when the session's end fails)."""
        try:
            self.agent.session.close()
        finally:
            self.agent.conversation.close()

    def __enter__(self) -> Agent:
        return self.agent

    def __exit__(self, *exc: object) -> None:
        self.close()


def agent_from_config(model: str | None = None, *, workspace: str | Path | None = None,
                      confirm: ConfirmFunc | None = None, env: Mapping[str, str] | None = None,
                      **settings: Any) -> ConfiguredAgent:
    """The agent ``fencecall chat`` would build: ``model`` (``provider/name``; default: the
    environment's or the file's), tools working in ``workspace`` (default: the current
    folder), calls that need a yes asked of ``confirm`` (default
    :func:`~fencecall.execution.auto_no`: declined). The configuration file and the
    ``FENCECALL_*`` variables are read from ``env`` (default: this process's environment);
    ``settings`` are keywords named as the file's keys (``max_steps=10``,
    ``feedback_limit=0``, ``sandbox="read-only"``), checked as the file's are, and win over
    the file and the environment as flags do; ``environment`` is the key's text
    (``"container:IMAGE"``) or an :class:`~fencecall.environments.Environment` already
    started (its ``files`` the workspace; the caller closes it). Raises
    :class:`~fencecall.config.ConfigError` for an unknown name or a bad value, and
    :class:`NoModel` where no model is named."""
    environ = os.environ if env is None else env
    place = settings.pop("environment") if not isinstance(
        settings.get("environment", ""), str) else None
    config, said = keyword_settings(load_config(environ), settings)
    said = replace(said, model=model,
                   workspace=None if workspace is None else Path(workspace))
    run = resolve_settings(config, said, env=environ, ask_server=True)
    if run.model is None:
        raise NoModel(NO_MODEL)
    secrets = own_secrets(config) if env is None else config.secret_values(environ)
    return ConfiguredAgent(assemble(run, config, confirm=confirm or auto_no, secrets=secrets,
                                    environment=place))


def keyword_settings(config: Config, settings: Mapping[str, Any]) -> tuple[Config, Overrides]:
    """``settings`` (named as the file's keys, old names included) checked as the file's
    keys are: what a source may say, as :class:`Overrides` (above the environment and the
    file), and the others (``pass_env``, ``secrets``, ``tool_packages``) over ``config``."""
    named = new_names(settings, RENAMED, "", lambda text: ConfigError(f"{WHERE}: {text}"))
    problem = unknown_settings(named, KEYWORDS)
    if problem is not None:
        raise ConfigError(f"{WHERE}: {problem}")
    values = read_settings(settings, WHERE)
    limits = read_limits(named, "", WHERE)
    said = Overrides(**{key: value for key, value in values.items() if key in _SAID},
                     budget_usd=limits.usd, budget_tokens=limits.tokens, time_limit=limits.time)
    return replace(config, **{key: value for key, value in values.items()
                              if key not in _SAID}), said
