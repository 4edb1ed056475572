"""Builds fencecall's parsing core with mypyc, the compiler of mypy's own type checker, and
on Linux two small C programs: the reaper every unsandboxed shell runs under
(``src/fencecall/sandbox/_reaper.c``), so that a shell does not start a Python interpreter,
and the launcher (``_launch.c``) that joins a process's control groups, sets its rlimits and
enters its network namespace in one exec, instead of sh, prlimit and nsenter.

The compiled modules are the same typed Python sources, turned into C extensions: nothing
else changes, and nothing is needed at run time. They are built where a C compiler is
present; elsewhere, or with ``FENCECALL_PURE_PYTHON=1`` set, the same modules run as plain
Python, the reaper as the Python script it is a copy of, and sh, prlimit and nsenter stand in
for the launcher. Each build records the hash of every source it compiled
(``src/fencecall/parsing/compiled_from.json``), so a source edited after the build (an
editable install) runs as Python instead of as a stale extension (see
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
PROGRAMS = {"_reaper.c": ("fencecall-reaper", "the Python reaper", False),
            "_launch.c": ("fencecall-launch", "sh, prlimit and nsenter", True)}
"""The C programs, by source: the executable built from it, what runs without it, and
whether it is built without the C library (on system calls alone, see ``_launch.c``)."""
FREESTANDING = (["-ffreestanding", "-fno-stack-protector"], ["-nostdlib", "-static", "-no-pie"])
"""Compile and link flags of a program built without the C library: no start-up code, no
stack protector's guard to read from the library, and a static executable the kernel loads
as it is (a static-pie would relocate itself with the library's code)."""


class BuildWithReaper(build_ext):  # type: ignore[misc]  # setuptools has no types here
    """The extensions, then the reaper's and the launcher's executables beside ``reaper.py``
    (in the source tree for an in-place or editable build); a failed compile leaves the
    Python reaper, or sh, prlimit and nsenter, in use."""

    def run(self) -> None:
        super().run()
        if not sys.platform.startswith("linux"):
            return
        folder = SANDBOX if self.inplace else Path(self.build_lib) / "fencecall" / "sandbox"
        for source, (program, fallback, freestanding) in PROGRAMS.items():
            try:
                objects = self.compiler.compile(
                    [str(SANDBOX / source)], output_dir=self.build_temp,
                    extra_postargs=["-O2", *(FREESTANDING[0] if freestanding else ())])
                if freestanding:
                    self.compiler.link_executable(objects, program, output_dir=str(folder),
                                                  extra_postargs=FREESTANDING[1])
                else:
                    self._link(objects, program, str(folder))
            except Exception as error:  # no compiler, no linker: the fallback stands in
                print(f"warning: {program} was not compiled ({error}); {fallback} stand in")

    def _link(self, objects: list[str], program: str, folder: str) -> None:
        """Statically where the C library allows it: a static program starts without the
        dynamic loader, which costs about a third of a millisecond of CPU per process."""
        try:
            self.compiler.link_executable(objects, program, output_dir=folder,
                                          extra_postargs=["-static"])
        except Exception:  # no static C library (libc.a): linked dynamically
            self.compiler.link_executable(objects, program, output_dir=folder)


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildWithReaper})
