"""Starting the persistent shell and interpreter in an :class:`Environment` (a container).

They speak the same protocols as on the host: the files fencecall holds (the output, and the
shell's commands) reach them as descriptors 3, 4, … (``PATHS``), the shell's saved states
and the python driver are in the environment's scratch folder, which they see read-only at
its host path. What differs is how they are stopped: each runs under an init of its own,
found by host pid (:meth:`Environment.host_pids`), and the shell and interpreter stop that
init before killing what is below it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ...environments import Environment
from ...errors import ToolError
from ...sandbox import readable

PATHS = ("/dev/fd/3", "/dev/fd/4", "/dev/fd/5", "/dev/fd/6")
"""Where bash in an environment finds its stdout, stderr and state files, and its command."""
_PAGERS = {"PAGER": "cat", "GIT_PAGER": "cat"}


def variables(passed: Mapping[str, str] | None) -> dict[str, str]:
    """What the tools' processes get besides the image's own environment: the variables
    the user passes (``pass_env``), pagers that do not wait, a dumb terminal."""
    return {**_PAGERS, **(passed or {}), "TERM": "dumb"}


_STARTS_WITHIN = 60.0
"""Seconds a process in the environment has to say its pid."""
_SAY_PID = 'echo "$$"; exec "$@"'


def scratch_folder(environment: Environment, kind: str) -> Path:
    """A new folder in the environment's scratch folder (which its processes see
    read-only), for one shell's saved states: whoever the image's user is may enter it, and
    nobody but fencecall may list it."""
    folder = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=environment.scratch))
    folder.chmod(0o711)
    return folder


def spawn_bash(environment: Environment, fds: Sequence[int],
               passed: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """bash in ``environment``, its commands on stdin, with the variables ``passed``; it
    first prints its pid there."""
    return environment.spawn(["sh", "-c", _SAY_PID, "sh", "bash", "--noprofile", "--norc"],
                             fds=fds, env=variables(passed), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def init_of_bash(environment: Environment, proc: subprocess.Popen[bytes]) -> int:
    """The host pid of the init that the bash of ``proc`` runs under, from the pid it
    printed first."""
    assert proc.stdout is not None
    line = b""
    deadline = time.monotonic() + _STARTS_WITHIN
    while not line.endswith(b"\n") and (left := deadline - time.monotonic()) > 0:
        if readable(proc.stdout.fileno(), left):
            chunk = os.read(proc.stdout.fileno(), 1)
            if not chunk:
                break
            line += chunk
    if not line.strip().isdigit():
        if not environment.has_program("bash"):
            raise ToolError("shell: the environment has no bash, which the shell tool needs")
        raise ToolError("shell: bash did not start in the environment")
    return _init(environment, int(line))


def driver_path(environment: Environment, driver: Path) -> str:
    """The python driver's path in ``environment`` (copied to its scratch folder once)."""
    target = environment.scratch / driver.name
    if not target.exists():
        shutil.copyfile(driver, target)
        target.chmod(0o644)
    return str(target)


def spawn_python(environment: Environment, command: Sequence[str], fds: Sequence[int],
                 passed: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """The interpreter ``command`` (its pipes' numbers 3 and 4) in ``environment``, with
    its stdout and stderr the files ``fds[2:]`` (descriptors 5 and 6 there) and the
    variables ``passed``."""
    if not environment.has_program("python3"):
        raise ToolError("python: the environment has no python3, which the python tool "
                        "needs; use the shell tool, or an image with python3")
    return environment.spawn(["sh", "-c", 'exec "$@" >&5 2>&6 5>&- 6>&-', "sh", *command],
                             fds=fds, env=variables(passed), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _init(environment: Environment, pid: int) -> int:
    found = environment.host_pids(pid)
    if found is None:
        raise ToolError("shell: bash's process could not be found from the host, so it "
                        "could not be stopped; nothing runs in this environment")
    return found[1]
