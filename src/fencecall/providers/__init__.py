"""Model providers: OpenAI-compatible chat completions and Anthropic messages."""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..config import Config, ConfigError
from .base import (
    ChatRequest,
    NativeCall,
    Provider,
    ProviderError,
    StreamEnd,
    StreamEvent,
    TextDelta,
)


def get_provider(model: str, config: Config,
                 env: Mapping[str, str] | None = None) -> tuple[Provider, str]:
    """(provider, model name) for ``provider/model`` (``local/qwen2.5``, ``openai/gpt-4o``)."""
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
    if settings.kind == "anthropic":
        from .anthropic_provider import AnthropicProvider

        return AnthropicProvider(api_key=key, base_url=settings.base_url, name=name), model_name
    from .openai_provider import OpenAIProvider

    return OpenAIProvider(api_key=key, base_url=settings.base_url, name=name), model_name


__all__ = [
    "ChatRequest",
    "NativeCall",
    "Provider",
    "ProviderError",
    "StreamEnd",
    "StreamEvent",
    "TextDelta",
    "get_provider",
]
