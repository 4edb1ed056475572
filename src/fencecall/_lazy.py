"""Package faces whose names load on their first use (PEP 562).

A face lists its public names twice: once as imports under ``TYPE_CHECKING``, which type
checkers read, and once here, by home module, which the interpreter reads. Importing the
package then costs only what a program touches: the command line's ``run`` never loads the
container, MCP or billing code it does not use. ``tests/test_public_face.py`` checks that the
two lists agree.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module

Getattr = Callable[[str], object]
Dir = Callable[[], list[str]]


def lazy_names(package: str, homes: Mapping[str, tuple[str, ...]]) -> tuple[Getattr, Dir]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose names ``homes`` gives by
    their module (relative: ``"._billing"``). A name is imported from its module when first
    asked for, then kept in the package, so later lookups are plain attribute reads."""
    module_of = {name: module for module, names in homes.items() for name in names}
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> object:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *module_of})

    return __getattr__, __dir__
