"""How one run talks to its model: every setting resolved in one place.

Frontends say what they were told (flags, a batch's options, a task's line) as
:class:`Overrides`, most specific first; :func:`resolve` applies one precedence to all of them
(the first override that sets a value, then the model's own ``[models."provider/name"]``
table, then the file's top level and the defaults) and every derived rule: the window asked of
a self-hosted server, the compact prompt for small windows, and the reply's share of the
window. Adding a setting means adding it here and in the code that uses it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from ..config import Config, PromptMode, Sampling
from ..providers.served import served_context_window

T = TypeVar("T")

REPLY_SHARE = 4
"""Without a configured reply limit, a reply may take at most 1/REPLY_SHARE of the window."""


@dataclass(frozen=True, slots=True)
class Overrides:
    """What one source of settings says; None (or empty) where it says nothing."""

    max_steps: int | None = None
    max_tokens: int | None = None
    retries: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    context_window: int | None = None
    prompt: PromptMode | None = None


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Everything the agent loop needs to know about its model, resolved."""

    model: str
    """``provider/name``, as configured."""
    max_steps: int
    max_tokens: int
    retries: int
    sampling: Sampling
    context_window: int | None
    compact: bool
    feedback_limit: int


def resolve(config: Config, model: str, *overrides: Overrides,
            ask_server: bool = False,
            served: Callable[[str, str], int | None] = served_context_window) -> RunSettings:
    """The settings of a run of ``model``. With ``ask_server`` and no window configured, a
    self-hosted OpenAI-compatible server is asked for its model's window (``served``)."""
    per_model = config.model_settings(model)

    def first(pick: Callable[[Overrides], T | None], *fallbacks: T | None) -> T | None:
        return next((found for found in (*(pick(o) for o in overrides), *fallbacks)
                     if found is not None), None)

    window = first(lambda o: o.context_window, per_model.context_window)
    provider_name, _, model_name = model.partition("/")
    provider = config.providers.get(provider_name)
    if window is None and ask_server and provider is not None and provider.kind == "openai" \
            and provider.base_url:
        window = served(provider.base_url, model_name)
    reply_limit = first(lambda o: o.max_tokens, per_model.max_tokens)
    if reply_limit is None:
        reply_limit = (min(config.max_tokens, window // REPLY_SHARE) if window
                       else config.max_tokens)
    prompt = replace(per_model, context_window=window,
                     prompt=first(lambda o: o.prompt, per_model.prompt)).prompt_mode()
    retries = first(lambda o: o.retries)
    return RunSettings(
        model=model,
        max_steps=first(lambda o: o.max_steps) or config.max_steps,
        max_tokens=reply_limit,
        retries=config.retries if retries is None else retries,
        sampling=Sampling(first(lambda o: o.temperature, per_model.sampling.temperature),
                          first(lambda o: o.top_p, per_model.sampling.top_p),
                          next((o.stop for o in overrides if o.stop), per_model.sampling.stop)),
        context_window=window,
        compact=prompt == "compact",
        feedback_limit=config.near_misses)
