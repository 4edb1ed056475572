"""fencecall: an agent runtime in which a model's plain text is the tool call.

The public face is flat: ``from fencecall import Agent, Session, Toolchain, parse``. Each name
is written once, as one import line below: type checkers read it there, and
:func:`__getattr__` imports it from the module that line names on its first use (PEP 562), so
``import fencecall`` (and the CLI's start) costs only what a program touches: parsing a reply
never loads a provider's SDK.
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the public face, one name a line (``X as X``: exported, for type checkers)
    from .agent import Agent as Agent
    from .agent import AgentSettings as AgentSettings
    from .agent import Conversation as Conversation
    from .agent import RunResult as RunResult
    from .assembly import agent_from_config as agent_from_config
    from .config import Config as Config
    from .config import ConfigError as ConfigError
    from .config import load_config as load_config
    from .errors import ToolError as ToolError
    from .errors import UserError as UserError
    from .execution import Session as Session
    from .execution import auto_no as auto_no
    from .execution import auto_yes as auto_yes
    from .message import CallRecord as CallRecord
    from .message import Message as Message
    from .message import NativeCallRecord as NativeCallRecord
    from .message import Outcome as Outcome
    from .message import ReplyRecord as ReplyRecord
    from .message import Status as Status
    from .message import Usage as Usage
    from .parsing import CallFormat as CallFormat
    from .parsing import Codeblock as Codeblock
    from .parsing import Diagnostic as Diagnostic
    from .parsing import Parsed as Parsed
    from .parsing import StreamParser as StreamParser
    from .parsing import ToolCall as ToolCall
    from .parsing import UnrepresentableCall as UnrepresentableCall
    from .parsing import get_format as get_format
    from .parsing import parse as parse
    from .parsing import parse_codeblocks as parse_codeblocks
    from .parsing import render as render
    from .providers import Provider as Provider
    from .providers import ProviderError as ProviderError
    from .providers import ScriptedProvider as ScriptedProvider
    from .providers import ScriptedReply as ScriptedReply
    from .providers import get_provider as get_provider
    from .tools import Parameter as Parameter
    from .tools import Toolchain as Toolchain
    from .tools import ToolSpec as ToolSpec

__version__ = "0.1.0"


def _public_names() -> dict[str, str]:
    """Each public name and its home package, read from the import lines above."""
    with open(__file__, encoding="utf-8") as source:
        found = re.findall(r"^    from \.(\w+) import (\w+) as \2$", source.read(), re.M)
    return {name: home for home, name in found}


_MODULE_OF = _public_names()
__all__ = [*_MODULE_OF, "__version__"]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'fencecall' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
