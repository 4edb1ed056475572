"""The launcher: one small C program (``_launch.c``, built by ``setup.py`` beside this module
as ``fencecall-launch``) that starts a limited or sandboxed program in one exec, and makes a
conversation's network namespace as it starts the first.

Every limited or sandboxed process starts through it, so its cost is paid per shell and per
run: without it, ``sh`` joins the control groups, then ``prlimit`` sets the rlimits, then
``nsenter`` enters the conversation's network, three programs to load before bwrap (several
times the CPU of the launcher), and the conversation's namespaces come from setpriv, a bwrap
(with a mount namespace of its own) and cat, started for them alone, where the launcher
makes them as it starts the conversation's first sandbox. Where it was not built (no C
compiler), those programs are used as before: see :func:`~._resource_limits.limited` and
:mod:`._netns`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PROGRAM: Path | None = Path(__file__).with_name("fencecall-launch")
"""The compiled launcher; None (or a path that is not there) keeps sh, prlimit, nsenter and
the bwrap holder."""


def launcher() -> str | None:
    """:data:`PROGRAM` when it can run here (Linux, built, executable)."""
    if PROGRAM is None or not sys.platform.startswith("linux") or \
            not os.access(PROGRAM, os.X_OK):
        return None
    return str(PROGRAM)
