"""Where tools come from: the built-in package, entry-point plugins and ``.py`` files."""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import pkgutil
import re
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import UserError
from .spec import ToolSpec

ENTRY_POINT_GROUP = "fencecall.tools"


class ToolLoadError(UserError):
    """A tool source could not be loaded; the message names the file or plugin and why."""


def specs_in(module: ModuleType) -> list[ToolSpec]:
    """The ToolSpec values a module defines at top level, in definition order."""
    seen: dict[int, ToolSpec] = {}
    for value in vars(module).values():
        if isinstance(value, ToolSpec):
            seen.setdefault(id(value), value)
    return list(seen.values())


@functools.cache
def builtin_tools() -> tuple[ToolSpec, ...]:
    """Every tool in :mod:`fencecall.tools.builtin` (imported once, then cached)."""
    from . import builtin

    specs: list[ToolSpec] = []
    for info in pkgutil.iter_modules(builtin.__path__, builtin.__name__ + "."):
        specs.extend(specs_in(importlib.import_module(info.name)))
    return tuple(specs)


def _specs_from_object(value: Any, source: str) -> list[ToolSpec]:
    if isinstance(value, ToolSpec):
        return [value]
    if isinstance(value, ModuleType):
        return specs_in(value)
    if callable(value):
        return _specs_from_object(value(), source)
    if isinstance(value, Iterable):
        items = list(value)
        if all(isinstance(item, ToolSpec) for item in items):
            return items
    raise ToolLoadError(f"plugin {source} gave {type(value).__name__}, expected ToolSpec(s)")


def _declared_on_path(group: str) -> bool:
    """Whether a distribution on ``sys.path`` may declare entry points of ``group``: a scan
    of the ``entry_points.txt`` files (a few ms), so that a run without plugins never imports
    :mod:`importlib.metadata` (tens of ms, with the email package it reads metadata with).
    A path entry that is a file (a zip archive) answers yes: only the full lookup reads it."""
    header = re.compile(rf"^\s*\[\s*{re.escape(group)}\s*\]", re.MULTILINE)
    for entry in sys.path:
        folder = entry or "."
        try:
            with os.scandir(folder) as found:
                infos = [e.path for e in found if e.name.endswith((".dist-info", ".egg-info"))]
        except NotADirectoryError:
            return True
        except OSError:
            continue
        for info in infos:
            try:
                text = Path(info, "entry_points.txt").read_text(encoding="utf-8",
                                                                 errors="replace")
            except OSError:
                continue
            if header.search(text):
                return True
    return False


def package_tools(packages: Iterable[str]) -> list[ToolSpec]:
    """The tools defined in the named packages and every module below them (configured with
    ``tool_packages``). A package that cannot be imported is a :class:`ToolLoadError`."""
    specs: list[ToolSpec] = []
    for name in packages:
        try:
            package = importlib.import_module(name)
            specs += specs_in(package)
            for info in pkgutil.walk_packages(getattr(package, "__path__", []), name + "."):
                specs += specs_in(importlib.import_module(info.name))
        except ImportError as err:
            raise ToolLoadError(f"tool package {name!r} cannot be imported: {err}") from err
    return specs


def plugin_tools() -> list[ToolSpec]:
    """Tools from installed distributions' ``fencecall.tools`` entry points.

    A broken plugin is reported as a warning and skipped: one bad package must not stop the
    agent from starting.
    """
    specs: list[ToolSpec] = []
    if not _declared_on_path(ENTRY_POINT_GROUP):
        return specs
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        source = f"{point.name} ({point.value})"
        try:
            specs.extend(_specs_from_object(point.load(), source))
        except Exception as err:
            warnings.warn(f"fencecall: skipping plugin {source}: {err}", stacklevel=2)
    return specs


def load_from_file(path: Path | str, *, root: Path | None = None) -> list[ToolSpec]:
    """Load the ToolSpecs a Python file defines.

    The file must exist and be a regular ``.py`` file once symlinks are resolved; with
    ``root``, it must also resolve to somewhere inside ``root``, so a link cannot smuggle in
    code from elsewhere. Each file gets its own module name (from its resolved path), so two
    files called ``tool.py`` never replace each other. Loading runs the file's code: only
    load files you trust.
    """
    given = Path(path).expanduser()
    if root is not None and not given.is_absolute():
        given = root / given
    if not given.exists():
        raise ToolLoadError(f"{path}: no such file")
    resolved = given.resolve()
    if root is not None and not resolved.is_relative_to(root.resolve()):
        raise ToolLoadError(f"{path}: resolves to {resolved}, outside {root.resolve()}")
    if not resolved.is_file():
        raise ToolLoadError(f"{path}: not a regular file")
    if resolved.suffix != ".py":
        raise ToolLoadError(f"{path}: not a .py file")
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:16]
    name = f"fencecall_file_tools.{resolved.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise ToolLoadError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        del sys.modules[name]
        raise ToolLoadError(f"{path}: failed to load: {type(err).__name__}: {err}") from err
    specs = specs_in(module)
    if not specs:
        raise ToolLoadError(f"{path}: defines no ToolSpec")
    return specs
