"""Toolchain: the tools one session has loaded, chosen by an allowlist.

Allowlist entries are tool names, ``fnmatch`` globs (``mcp.*``), ``hint:TAG`` (every tool
carrying that hint), or paths to ``.py`` files. Tools marked ``disabled_by_default`` load
only when named exactly. A name, or a hint, that matches nothing is an error (with the nearest
one); a named tool that is not available here is a warning. A Toolchain is immutable, so
sessions in different threads each hold their own and never see each other's tools. It also
remembers the known tools it left out, so that a call of one is told it did not run rather
than taken for plain text.
"""

from __future__ import annotations

import difflib
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..parsing import FORMATS, FormatLike, get_format
from ._instructions import tools_instructions
from .loading import ToolLoadError, builtin_tools, load_from_file, package_tools, plugin_tools
from .spec import ToolSpec, api_name

_INIT_LOCK = threading.Lock()


class UnknownToolError(UserError, ValueError):
    """An allowlist named a tool that does not exist."""


def is_file_entry(entry: str) -> bool:
    return entry.endswith(".py") or "/" in entry or "\\" in entry


def is_glob(entry: str) -> bool:
    return any(c in entry for c in "*?[")


def matches(spec: ToolSpec, entry: str) -> bool:
    """Whether ``entry`` (name, glob or ``hint:TAG``) selects ``spec``."""
    if entry.startswith("hint:"):
        return entry[5:] in spec.hints
    return fnmatchcase(spec.name, entry)


@dataclass(frozen=True)
class Toolchain:
    """An ordered, immutable set of loaded tools (sorted by load priority, then name)."""

    tools: tuple[ToolSpec, ...] = ()
    left_out: tuple[ToolSpec, ...] = field(default=(), repr=False, compare=False)
    """Known tools the selection did not load (a built-in ``--tools`` left out, an MCP tool a
    glob filtered out, one off by default or not available here); never initialised."""
    _by_name: dict[str, ToolSpec] = field(init=False, repr=False, compare=False)
    _by_block: dict[str, ToolSpec] = field(init=False, repr=False, compare=False)
    _left_out: tuple[dict[str, ToolSpec], dict[str, ToolSpec]] = field(
        init=False, repr=False, compare=False)
    _instructions: dict[tuple[str, bool], str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.tools, key=ToolSpec.sort_key))
        object.__setattr__(self, "tools", ordered)
        by_name: dict[str, ToolSpec] = {}
        by_block: dict[str, ToolSpec] = {}
        for spec in ordered:
            if spec.name in by_name:
                raise ValueError(f"two tools are called {spec.name!r}")
            by_name[spec.name] = spec
            by_name.setdefault(api_name(spec.name), spec)
            for block_type in spec.block_types:
                by_block.setdefault(block_type, spec)
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_by_block", by_block)
        left_by_name: dict[str, ToolSpec] = {}
        left_by_block: dict[str, ToolSpec] = {}
        for spec in self.left_out:  # one added after the selection (complete) is loaded
            if spec.is_runnable and spec.name not in by_name:
                left_by_name.setdefault(spec.name, spec)
                left_by_name.setdefault(api_name(spec.name), spec)
                for block_type in spec.block_types:
                    left_by_block.setdefault(block_type, spec)
        object.__setattr__(self, "_left_out", (left_by_name, left_by_block))
        object.__setattr__(self, "_instructions", {})

    @classmethod
    def build(cls, allowlist: Sequence[str] | None = None, *,
              catalogue: Iterable[ToolSpec] | None = None,
              root: Path | None = None, packages: Sequence[str] = (),
              extra: Iterable[ToolSpec] = ()) -> Toolchain:
        """Select and initialise tools.

        ``catalogue`` defaults to the built-in tools plus installed plugins; ``packages`` adds
        the tools of those packages and their modules, ``extra`` more tools (an MCP
        server's, say). File entries are
        loaded with :func:`load_from_file`; relative ones are resolved against ``root`` (the
        workspace) and must stay inside it. The known tools not selected are kept as
        :attr:`left_out`.
        """
        known = list(builtin_tools()) + plugin_tools() if catalogue is None else list(catalogue)
        known += package_tools(packages)
        known += extra
        chosen: dict[str, ToolSpec] = {}
        if allowlist is None:
            for spec in known:
                if not spec.disabled_by_default and spec.is_available():
                    chosen.setdefault(spec.name, spec)
        else:
            for entry in allowlist:
                for spec in _select(entry, known, root):
                    chosen.setdefault(spec.name, spec)
        first_of: dict[str, ToolSpec] = {}
        for spec in known:
            first_of.setdefault(spec.name, spec)
        for spec in list(chosen.values()):
            for name in spec.requires:
                if name in first_of:
                    chosen.setdefault(name, first_of[name])
        return cls(tuple(_initialise(spec) for spec in chosen.values()),
                   tuple(spec for name, spec in first_of.items() if name not in chosen))

    def get(self, name: str) -> ToolSpec | None:
        """The tool called ``name`` (or its provider-safe form, ``mcp__fetch``)."""
        return self._by_name.get(name)

    def for_langtag(self, langtag: str) -> ToolSpec | None:
        """The tool a code block's langtag dispatches to (by its first word)."""
        words = langtag.split(maxsplit=1)
        return self._by_block.get(words[0]) if words else None

    def not_loaded(self, name: str, *, langtag: bool = False) -> ToolSpec | None:
        """The known tool, not loaded here, that a call of ``name`` means (``langtag``: a code
        block's, by its first word), unless a loaded tool answers to it."""
        by_name, by_block = self._left_out
        if langtag:
            words = name.split(maxsplit=1)
            return None if not words or self.for_langtag(name) else by_block.get(words[0])
        return None if self.get(name) else by_name.get(name)

    def unloaded_langtags(self) -> frozenset[str]:
        """The first words of the code blocks that call a known tool not loaded here."""
        return frozenset(self._left_out[1])

    def names(self) -> list[str]:
        return [spec.name for spec in self.tools]

    def functions(self) -> Mapping[str, Callable[..., Any]]:
        """The functions these tools make callable from code run by the python tool."""
        found: dict[str, Callable[..., Any]] = {}
        for spec in self.tools:
            found.update(spec.functions)
        return found

    def instructions(self, fmt: FormatLike = "markdown", *, compact: bool = False) -> str:
        """The system-prompt text teaching a model these tools in ``fmt`` (``compact``: the
        short form for small models). Kept per built-in format: the tools never change, and
        a batch's sessions share one toolchain and would each render the same text."""
        name = fmt if isinstance(fmt, str) else fmt.name
        if FORMATS.get(name) is not get_format(fmt):  # a format object of the caller's own
            return tools_instructions(self.tools, fmt, lookup=self.get, compact=compact)
        key = (name, compact)
        if key not in self._instructions:
            self._instructions[key] = tools_instructions(self.tools, fmt, lookup=self.get,
                                                         compact=compact)
        return self._instructions[key]


def _select(entry: str, known: list[ToolSpec], root: Path | None) -> list[ToolSpec]:
    if is_file_entry(entry):
        return load_from_file(entry, root=root)
    hits = [spec for spec in known if matches(spec, entry)]
    explicit = not entry.startswith("hint:") and not is_glob(entry)
    if not hits:
        _refuse_unknown(entry, known)
    selected = []
    for spec in hits:
        if spec.disabled_by_default and not explicit:
            continue
        if not spec.is_available():
            if explicit:
                warnings.warn(f"fencecall: tool {spec.name!r} is not available here; skipped",
                              stacklevel=3)
            continue
        selected.append(spec)
    if not explicit and not selected:
        warnings.warn(f"fencecall: {entry!r} matched no available tool", stacklevel=3)
    return selected


def _refuse_unknown(entry: str, known: list[ToolSpec]) -> None:
    """Raise for an entry that names no known tool, with the nearest name: a name, or a hint
    no tool carries. A glob matching nothing, or an MCP server's hint (its server may have
    failed to start), is left to the caller's warning."""
    if entry.startswith("hint:"):
        tag, choices = entry[5:], sorted({hint for spec in known for hint in spec.hints})
        if tag in choices or tag.startswith("mcp:"):
            return
        what = f"no tool has the hint {tag!r}"
    elif is_glob(entry):
        return
    else:
        tag, choices = entry, sorted({spec.name for spec in known})
        what = f"unknown tool {entry!r}"
    close = difflib.get_close_matches(tag, choices, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(choices) or 'none'}"
    raise UnknownToolError(f"{what}; {hint}")


def _initialise(spec: ToolSpec) -> ToolSpec:
    if spec.init is None:
        return spec
    with _INIT_LOCK:
        final = spec.init()
    if not isinstance(final, ToolSpec):
        raise ToolLoadError(f"{spec.name}: init() returned {type(final).__name__}, not ToolSpec")
    return final
