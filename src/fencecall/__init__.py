"""fencecall: an agent runtime in which a model's plain text is the tool call.

The public face is flat: ``from fencecall import Agent, Session, Toolchain, parse``. Each name
is imported on first use (PEP 562), so ``import fencecall`` (and the CLI's start) costs only
what a program touches: parsing a reply never loads a provider's SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent import Agent, AgentSettings, Conversation, RunResult
    from .config import Config, ConfigError, load_config
    from .errors import ToolError, UserError
    from .execution import Session, auto_no, auto_yes
    from .message import (
        CallRecord,
        Message,
        NativeCallRecord,
        Outcome,
        ReplyRecord,
        Status,
        Usage,
    )
    from .parsing import (
        CallFormat,
        Codeblock,
        Diagnostic,
        Parsed,
        StreamParser,
        ToolCall,
        UnrepresentableCall,
        get_format,
        parse,
        parse_calls,
        parse_codeblocks,
        render,
    )
    from .providers import Provider, ProviderError, ScriptedProvider, ScriptedReply, get_provider
    from .tools import Parameter, Toolchain, ToolSpec

__version__ = "0.1.0"

_HOMES = {
    "agent": ("Agent", "AgentSettings", "Conversation", "RunResult"),
    "config": ("Config", "ConfigError", "load_config"),
    "errors": ("ToolError", "UserError"),
    "execution": ("Session", "auto_no", "auto_yes"),
    "message": ("CallRecord", "Message", "NativeCallRecord", "Outcome", "ReplyRecord", "Status",
                "Usage"),
    "parsing": ("CallFormat", "Codeblock", "Diagnostic", "Parsed", "StreamParser", "ToolCall",
                "UnrepresentableCall", "get_format", "parse", "parse_calls", "parse_codeblocks",
                "render"),
    "providers": ("Provider", "ProviderError", "ScriptedProvider", "ScriptedReply",
                  "get_provider"),
    "tools": ("Parameter", "ToolSpec", "Toolchain"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "Agent", "AgentSettings", "CallFormat", "CallRecord", "Codeblock", "Config", "ConfigError",
    "Conversation", "Diagnostic", "Message", "NativeCallRecord", "Outcome", "Parameter",
    "Parsed", "Provider", "ProviderError", "ReplyRecord", "RunResult", "ScriptedProvider",
    "ScriptedReply", "Session", "Status", "StreamParser", "ToolCall", "ToolError", "ToolSpec",
    "Toolchain", "UnrepresentableCall", "Usage", "UserError", "__version__",
    "auto_no", "auto_yes", "get_format", "get_provider", "load_config", "parse", "parse_calls",
    "parse_codeblocks", "render",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'fencecall' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
