"""Builds fencecall's parsing core with mypyc, the compiler of mypy's own type checker, and
on Linux the reaper every unsandboxed shell runs under as a small C program
(``src/fencecall/sandbox/_reaper.c``), so that a shell does not start a Python interpreter.

The compiled modules are the same typed Python sources, turned into C extensions: nothing
else changes, and nothing is needed at run time. They are built where a C compiler is
present; elsewhere, or with ``FENCECALL_PURE_PYTHON=1`` set, the same modules run as plain
Python, and the reaper as the Python script it is a copy of. Each build records the hash of
every source it compiled (``src/fencecall/parsing/compiled_from.json``), so a source edited
after the build (an editable install) runs as Python instead of as a stale extension (see
``fencecall.parsing._compiled``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

PARSING = Path("src/fencecall/parsing")
COMPILED = ("_strings", "model", "_jsonscan", "_syntax", "xmlcalls", "_fences", "_needles",
            "_kept", "_state", "_fast", "_regions", "_scanner")
"""The hot modules, in the order they import one another."""
RECORD = PARSING / "compiled_from.json"


def _extensions() -> list[Extension]:
    RECORD.unlink(missing_ok=True)
    if os.environ.get("FENCECALL_PURE_PYTHON"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # built without isolation, where mypy is not installed
        return []

    sources = [PARSING / f"{name}.py" for name in COMPILED]
    # The build environment holds mypy alone: the modules the package's public face names
    # for type checkers (providers, MCP, OpenTelemetry...) are read for their types, but
    # what they import is not there, and only the compiled modules' own errors count.
    flags = ["--follow-imports=silent", "--ignore-missing-imports", "--no-warn-unused-ignores"]
    extensions: list[Extension] = mypycify(
        [*flags, *(str(path) for path in sources)], opt_level="3",
        group_name="fencecall_parsing")
    for extension in extensions:
        extension.optional = True  # no compiler: the sources run as Python
    RECORD.write_text(json.dumps({
        f"fencecall.parsing.{path.stem}": hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sources}, indent=2) + "\n")
    return extensions


SANDBOX = Path("src/fencecall/sandbox")
REAPER = "fencecall-reaper"


class BuildWithReaper(build_ext):  # type: ignore[misc]  # setuptools has no types here
    """The extensions, then the reaper's executable beside ``reaper.py`` (in the source tree
    for an in-place or editable build); a failed compile leaves the Python reaper in use."""

    def run(self) -> None:
        super().run()
        if not sys.platform.startswith("linux"):
            return
        folder = SANDBOX if self.inplace else Path(self.build_lib) / "fencecall" / "sandbox"
        try:
            objects = self.compiler.compile([str(SANDBOX / "_reaper.c")],
                                            output_dir=self.build_temp,
                                            extra_postargs=["-O2"])
            self.compiler.link_executable(objects, REAPER, output_dir=str(folder))
        except Exception as error:  # any failure (no compiler, no linker): the script stands in
            print(f"warning: the reaper was not compiled ({error}); the Python one is used")


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildWithReaper})
