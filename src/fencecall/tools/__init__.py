"""Tools: their specs, arguments, discovery and selection."""

from .arguments import ArgumentError, Parameter
from .loading import ToolLoadError, builtin_tools, load_from_file, plugin_tools
from .registry import Toolchain, UnknownToolError, current_toolchain, init_tools
from .spec import Command, Example, ToolSpec

__all__ = [
    "ArgumentError",
    "Command",
    "Example",
    "Parameter",
    "ToolLoadError",
    "ToolSpec",
    "Toolchain",
    "UnknownToolError",
    "builtin_tools",
    "current_toolchain",
    "init_tools",
    "load_from_file",
    "plugin_tools",
]
