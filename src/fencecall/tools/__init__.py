"""Tools: their specs, arguments, context, hooks, discovery and selection.

A tool author needs only this package: :class:`ToolSpec` (or :meth:`ToolSpec.from_function`),
:class:`ToolInvocation` (what ``execute`` receives), :class:`ToolError` (raise it to tell the
model what went wrong) and the hook points in :mod:`fencecall.tools.hook_points`.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ..errors import ToolError
    from ._hooks import Allow, Block, Hook, HookOutcome, HookPoint, HookRegistry
    from ._parameters import ArgumentError, Parameter
    from .loading import ToolLoadError, builtin_tools, load_from_file, plugin_tools
    from .registry import Toolchain, UnknownToolError
    from .spec import Command, Example, Hint, ToolInvocation, ToolSpec, render_call
    from .tool_context import (
        ConfirmFunc,
        ConfirmRequest,
        Decline,
        Remember,
        ResourceKey,
        TextFiles,
        ToolContext,
    )
else:
    __getattr__, __dir__ = lazy_names(__name__, {
        "..errors": ("ToolError",),
        "._hooks": ("Allow", "Block", "Hook", "HookOutcome", "HookPoint", "HookRegistry"),
        "._parameters": ("ArgumentError", "Parameter"),
        ".loading": ("ToolLoadError", "builtin_tools", "load_from_file", "plugin_tools"),
        ".registry": ("Toolchain", "UnknownToolError"),
        ".spec": ("Command", "Example", "Hint", "ToolInvocation", "ToolSpec", "render_call"),
        ".tool_context": ("ConfirmFunc", "ConfirmRequest", "Decline", "Remember", "ResourceKey",
                          "TextFiles", "ToolContext"),
    })

__all__ = [
    "Allow",
    "ArgumentError",
    "Block",
    "Command",
    "ConfirmFunc",
    "ConfirmRequest",
    "Decline",
    "Example",
    "Hint",
    "Hook",
    "HookOutcome",
    "HookPoint",
    "HookRegistry",
    "Parameter",
    "Remember",
    "ResourceKey",
    "TextFiles",
    "ToolContext",
    "ToolError",
    "ToolInvocation",
    "ToolLoadError",
    "ToolSpec",
    "Toolchain",
    "UnknownToolError",
    "builtin_tools",
    "load_from_file",
    "plugin_tools",
    "render_call",
]
