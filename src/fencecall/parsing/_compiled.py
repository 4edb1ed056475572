"""Whether the parsing core runs compiled, and never a stale build of it.

Where a C compiler was present at install, ``setup.py`` compiles the hot parsing modules
with mypyc into extensions that sit beside their sources, and records the hash of each
source it compiled (``compiled_from.json``). Python imports an extension before a source of
the same name, so after a source is edited (an editable install) the extension would run
code that no longer exists. :func:`prefer_current_sources` prevents that: where a source
differs from the one compiled, or ``FENCECALL_PURE_PYTHON`` is set, every compiled module is
imported from its source instead. The package calls it before it imports any of them.

The sources are read and hashed at the first import of a compiled module, not at the
package's: a command that needs no parser (``fencecall --help``) pays nothing for the check.
This module imports only ``os`` and ``sys`` at its top for the same reason.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

_FOLDER = os.path.dirname(os.path.abspath(__file__))
_RECORD = os.path.join(_FOLDER, "compiled_from.json")
_PACKAGE = __name__.rpartition(".")[0]
_PREFIX = _PACKAGE + "."


class _Guard:
    """A finder at the head of ``sys.meta_path`` (``find_spec`` is all a meta path finder
    needs) that, at the first import of one of the package's modules built as an extension,
    decides once whether the build runs: if it is stale, or plain Python is asked for, it
    imports every built module from its ``.py`` source, ahead of its extension; otherwise it
    lets the extensions load, and is a no-op from then on."""

    def __init__(self, asked: bool):
        self.asked = asked
        self.sources: dict[str, str] | None = None
        """The modules to import from source, by name; None until decided."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if self.sources is None:
            stem = fullname[len(_PREFIX):]
            if not fullname.startswith(_PREFIX) or "." in stem or not _has_extension(stem):
                return None
            self.sources = _decide(self.asked)
        source = self.sources.get(fullname)
        if source is None:
            return None
        from importlib.util import spec_from_file_location

        return spec_from_file_location(fullname, source)


def _extension_suffixes() -> list[str]:
    from importlib.machinery import EXTENSION_SUFFIXES

    return EXTENSION_SUFFIXES


def _has_extension(stem: str) -> bool:
    base = os.path.join(_FOLDER, stem)
    return os.path.exists(base + ".py") and any(
        os.path.exists(base + suffix) for suffix in _extension_suffixes())


def _built_modules() -> dict[str, str]:
    """The modules of this package that have an extension beside their source, with the
    path of that source."""
    return {f"{_PREFIX}{name[:-3]}": os.path.join(_FOLDER, name)
            for name in sorted(os.listdir(_FOLDER))
            if name.endswith(".py") and _has_extension(name[:-3])}


def _stale(built: dict[str, str]) -> list[str]:
    """The built modules whose source is not the one compiled (all of them without a
    record: the build that left them is unknown)."""
    import hashlib
    import json

    try:
        with open(_RECORD, encoding="utf-8") as file:
            record: dict[str, str] = json.load(file)
    except (OSError, ValueError):
        return sorted(built)
    stale = []
    for name, source in built.items():
        with open(source, "rb") as file:
            if record.get(name) != hashlib.sha256(file.read()).hexdigest():
                stale.append(name)
    return sorted(stale)


def _decide(asked: bool) -> dict[str, str]:
    """The built modules to import from source: all of them where the build is stale (with
    a warning that says how to rebuild) or plain Python is asked for, else none.

    All of them or none: compiled modules call one another directly, so one compiled
    module beside a stale one would still run the stale code.
    """
    built = _built_modules()
    if not built or any(name in sys.modules for name in built):
        return {}
    stale = _stale(built)
    if stale and not asked:
        import warnings

        warnings.warn(f"fencecall's compiled parser was built from other sources than "
                      f"{', '.join(stale)} now hold; running them as plain Python "
                      f"(rebuild with `pip install -e .`)", RuntimeWarning,
                      stacklevel=_importer_level())
    return built if stale or asked else {}


def _importer_level() -> int:
    """The ``stacklevel`` that makes a warning issued in :func:`_decide` point at the import
    that got there: past this module and the import machinery (whose frames ``warnings``
    does not count)."""
    level, frame = 1, sys._getframe(1)  # 1 is _decide
    while frame.f_back is not None:
        frame = frame.f_back
        name = frame.f_code.co_filename
        if "importlib" in name and "_bootstrap" in name:
            continue
        level += 1
        if name != __file__:
            break
    return level


def prefer_current_sources() -> None:
    """Make the compiled modules import from their sources where the build is stale (with a
    warning that says how to rebuild) or ``FENCECALL_PURE_PYTHON`` asks for it; decided at
    the first import of one of them (see :class:`_Guard`)."""
    if not any(isinstance(finder, _Guard) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Guard(bool(os.environ.get("FENCECALL_PURE_PYTHON"))))


def active() -> bool:
    """Whether the parsing core in use is the compiled one (all its modules are, or none)."""
    from ._strings import COMPILED

    return COMPILED
