"""Model providers: one module per wire API, chosen from one table.

Each provider turns a :class:`ChatRequest` into a stream of events and owns its wire format
(message shapes, tool schemas, error types). :class:`ScriptedProvider` is an in-process test
double that replays scripted replies, so code built on providers tests without a socket.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from .._lazy import lazy_names
from ..config import Config, ConfigError, ProviderKind

if TYPE_CHECKING:
    from ..message import Usage
    from ._gate import Gate, GateStats
    from ._scripted import ScriptedProvider, ScriptedReply
    from .base import (
        AsyncProvider,
        ChatRequest,
        NativeCall,
        Provider,
        ProviderError,
        Scores,
        StreamBroken,
        StreamEnd,
        StreamEvent,
        TextDelta,
        has_astream,
    )
else:  # the gate's asyncio and the scripted double load only where they are used
    __getattr__, __dir__ = lazy_names(__name__, {
        "..message": ("Usage",),
        "._gate": ("Gate", "GateStats"),
        "._scripted": ("ScriptedProvider", "ScriptedReply"),
        ".base": ("AsyncProvider", "ChatRequest", "NativeCall", "Provider", "ProviderError",
                  "Scores", "StreamBroken", "StreamEnd", "StreamEvent", "TextDelta",
                  "has_astream"),
    })

ProviderFactory = Callable[..., "Provider"]

PROVIDER_KINDS: Mapping[ProviderKind, str] = MappingProxyType({
    "openai": "fencecall.providers._openai_provider:OpenAIProvider",
    "anthropic": "fencecall.providers._anthropic_provider:AnthropicProvider",
})
"""Each provider kind's class, as ``module:name``; imported only when used, so the vendor
SDKs load only for the provider in use."""


def provider_class(kind: ProviderKind) -> ProviderFactory:
    """The class that speaks ``kind``'s wire API."""
    module, _, name = PROVIDER_KINDS[kind].partition(":")
    factory: ProviderFactory = getattr(importlib.import_module(module), name)
    return factory


def get_provider(model: str, config: Config, env: Mapping[str, str] | None = None, *,
                 timeout: float | None = None,
                 retries: int | None = None,
                 max_connections: int = 64) -> tuple[Provider, str]:
    """(provider, model name) for ``provider/model`` (``local/qwen2.5``, ``openai/gpt-4o``).
    ``timeout`` (seconds to wait for the server) and ``retries`` default to the
    configuration's ``request_timeout`` and ``retries``; ``max_connections`` bounds the
    requests open at once on the async path (the provider's gate)."""
    timeout = config.request_timeout if timeout is None else timeout
    retries = config.retries if retries is None else retries
    env = os.environ if env is None else env
    name, sep, model_name = model.partition("/")
    if not sep or not model_name:
        raise ConfigError(f"model {model!r}: write it as provider/name, e.g. openai/gpt-4o")
    settings = config.providers.get(name)
    if settings is None:
        known = ", ".join(sorted(config.providers))
        raise ConfigError(f"unknown provider {name!r}; configured providers: {known}")
    key = settings.api_key(env)
    if settings.key_required and not key:
        raise ConfigError(f"provider {name!r} needs an API key: set {settings.api_key_env}")
    factory = provider_class(settings.kind)
    return factory(api_key=key, base_url=settings.base_url, name=name, timeout=timeout,
                   max_retries=retries, max_connections=max_connections), model_name


__all__ = [
    "PROVIDER_KINDS",
    "AsyncProvider",
    "ChatRequest",
    "Gate",
    "GateStats",
    "NativeCall",
    "Provider",
    "ProviderError",
    "Scores",
    "ScriptedProvider",
    "ScriptedReply",
    "StreamBroken",
    "StreamEnd",
    "StreamEvent",
    "TextDelta",
    "Usage",
    "get_provider",
    "has_astream",
    "provider_class",
]
