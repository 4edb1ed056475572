"""What a self-hosted model server says about its model: the context window.

vLLM lists ``max_model_len`` with each model at ``/v1/models``; llama.cpp's server answers
``/props`` with the context it was started with. Asked once at start, briefly: a server that
says nothing (or is slow) leaves the window to the configuration.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, TypeGuard
from urllib.parse import urlsplit, urlunsplit

WINDOW_KEYS = ("max_model_len", "context_length", "context_window", "n_ctx")


def served_context_window(base_url: str, model: str, timeout: float = 2.0) -> int | None:
    """The context window the server at ``base_url`` (an OpenAI-compatible ``…/v1``) gives
    ``model``, or None when it does not say."""
    if urlsplit(base_url).scheme not in ("http", "https"):
        return None
    listing = _get_json(base_url.rstrip("/") + "/models", timeout)
    for entry in (listing or {}).get("data") or ():
        if isinstance(entry, dict) and entry.get("id") == model:
            for key in WINDOW_KEYS:
                value = entry.get(key)
                if _positive(value):
                    return int(value)
    parts = urlsplit(base_url)
    props = _get_json(urlunsplit((parts.scheme, parts.netloc, "/props", "", "")), timeout)
    settings = (props or {}).get("default_generation_settings") or {}
    for value in (settings.get("n_ctx"), (props or {}).get("n_ctx")):
        if _positive(value):
            return int(value)
    return None


def _positive(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _get_json(url: str, timeout: float) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data = json.loads(response.read(1_000_000))
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
