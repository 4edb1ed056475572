"""Whether the parsing core runs compiled, and never a stale build of it.

Where a C compiler was present at install, ``setup.py`` compiles the hot parsing modules
with mypyc into extensions that sit beside their sources, and records the hash of each
source it compiled (``compiled_from.json``). Python imports an extension before a source of
the same name, so after a source is edited (an editable install) the extension would run
code that no longer exists. :func:`prefer_current_sources` prevents that: where a source
differs from the one compiled, or ``FENCECALL_PURE_PYTHON`` is set, every compiled module is
imported from its source instead. It runs before the package imports any of them.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

_FOLDER = Path(__file__).parent
_RECORD = _FOLDER / "compiled_from.json"
_PACKAGE = __name__.rpartition(".")[0]


class _FromSource(importlib.abc.MetaPathFinder):
    """Imports the named modules from their ``.py`` sources, ahead of their extensions."""

    def __init__(self, sources: dict[str, Path]):
        self.sources = sources

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        source = self.sources.get(fullname)
        return None if source is None else importlib.util.spec_from_file_location(
            fullname, source)


def _built_modules() -> dict[str, Path]:
    """The modules of this package that have an extension beside their source."""
    built: dict[str, Path] = {}
    for source in _FOLDER.glob("*.py"):
        if any(source.with_suffix(suffix).exists()
               for suffix in importlib.machinery.EXTENSION_SUFFIXES):
            built[f"{_PACKAGE}.{source.stem}"] = source
    return built


def _stale(built: dict[str, Path]) -> list[str]:
    """The built modules whose source is not the one compiled (all of them without a
    record: the build that left them is unknown)."""
    try:
        record: dict[str, str] = json.loads(_RECORD.read_text())
    except (OSError, ValueError):
        return sorted(built)
    return sorted(name for name, source in built.items()
                  if record.get(name) != hashlib.sha256(source.read_bytes()).hexdigest())


def prefer_current_sources() -> None:
    """Import the compiled modules from their sources where the build is stale (with a
    warning that says how to rebuild) or ``FENCECALL_PURE_PYTHON`` asks for it.

    All of them or none: compiled modules call one another directly, so one compiled
    module beside a stale one would still run the stale code.
    """
    built = _built_modules()
    if not built or any(name in sys.modules for name in built):
        return
    stale = _stale(built)
    asked = bool(os.environ.get("FENCECALL_PURE_PYTHON"))
    if stale and not asked:
        warnings.warn(f"fencecall's compiled parser was built from other sources than "
                      f"{', '.join(stale)} now hold; running them as plain Python "
                      f"(rebuild with `pip install -e .`)", RuntimeWarning, stacklevel=2)
    if stale or asked:
        sys.meta_path.insert(0, _FromSource(built))


def active() -> bool:
    """Whether the parsing core in use is the compiled one (all its modules are, or none)."""
    from .strings import COMPILED

    return COMPILED
