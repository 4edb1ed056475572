"""Every package's face: each name it lists resolves to the object its home module defines,
also in a new interpreter whose first import is that face (a lazy face must not depend on
what else was imported before it), and a lazy face loads the names its typed imports say."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import fencecall

PACKAGE = Path(fencecall.__file__).parent
FACES = sorted(".".join(path.parent.relative_to(PACKAGE.parent).parts)
               for path in PACKAGE.rglob("__init__.py"))


def _source(face: str) -> str:
    return (PACKAGE.parent / face.replace(".", "/") / "__init__.py").read_text()


LAZY_FACES = [face for face in FACES if "lazy_names(" in _source(face)]


def typed_imports(face: str) -> dict[str, tuple[str, str]]:
    """The names ``face`` imports under ``if TYPE_CHECKING:``, each with its module and its
    name there."""
    found = {}
    for node in ast.parse(_source(face)).body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            continue
        for line in node.body:
            if isinstance(line, ast.ImportFrom) and line.level:
                module = importlib.util.resolve_name("." * line.level + (line.module or ""),
                                                     face)
                for alias in line.names:
                    found[alias.asname or alias.name] = (module, alias.name)
    return found


@pytest.mark.parametrize("face", FACES)
def test_every_listed_name_resolves_to_its_home_modules_object(face: str) -> None:
    package = importlib.import_module(face)
    for name in getattr(package, "__all__", ()):
        getattr(package, name)  # raises AttributeError if the face lists a name it lacks
    assert set(getattr(package, "__all__", ())) <= set(dir(package))
    for name, (module, original) in typed_imports(face).items():
        home = getattr(importlib.import_module(module), original)
        assert getattr(package, name) is home, (face, name)


def test_the_lazy_faces_are_found() -> None:
    assert {"fencecall.accounting", "fencecall.sandbox", "fencecall.tools"} <= set(LAZY_FACES)


_FIRST_IMPORT = """
import importlib, json, sys
face = importlib.import_module(sys.argv[1])
lazy = sorted(set(dir(face)) - set(vars(face)))
exec(f"from {sys.argv[1]} import *")
print(json.dumps({"lazy": lazy, "all": list(face.__all__)}))
"""


@pytest.mark.parametrize("face", LAZY_FACES)
def test_a_lazy_face_loads_what_its_typed_imports_name(face: str) -> None:
    done = subprocess.run([sys.executable, "-c", _FIRST_IMPORT, face], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert sorted(found["lazy"]) == sorted(typed_imports(face))
    assert set(found["lazy"]) <= set(found["all"])
