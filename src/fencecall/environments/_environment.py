"""What a place the tools run in must offer: the protocol the shell, the python tool and
the file tools use, so that another kind (a Kubernetes pod, a Modal sandbox) can be added
without touching them. The host and the bwrap sandbox are not environments: a session
without one runs its tools there, as it always has."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol

Stream = int | IO[bytes] | None


class Environment(Protocol):
    """Where a conversation's tools run, started before the session and stopped after it."""

    @property
    def workdir(self) -> str:
        """The folder the tools start in, as the processes there see it."""
        ...

    @property
    def files(self) -> Path:
        """The host folder that holds :attr:`workdir`'s files: the file tools read and
        write there, by descriptor, as in any workspace."""
        ...

    @property
    def scratch(self) -> Path:
        """A host folder the processes see read-only at the same path (the scripts the
        shell sources, the python driver)."""
        ...

    @property
    def owner(self) -> tuple[int, int] | None:
        """The uid and gid the new files and folders the file tools make get, where its
        processes run as a user other than the files' folder's (None: the folder's)."""
        ...

    def spawn(self, argv: Sequence[str], *, fds: Sequence[int] = (),
              env: Mapping[str, str] | None = None, stdin: Stream = None,
              stdout: Stream = None, stderr: Stream = None) -> subprocess.Popen[bytes]:
        """Start ``argv`` in the environment, in :attr:`workdir`, under an init of its own
        that adopts its orphans; ``fds`` are its descriptors 3, 4, … there: files, or
        pipes made by :meth:`pipe`. Returns once the process holds them."""
        ...

    def pipe(self) -> tuple[int, int]:
        """(read end, write end) of a new pipe whose ends :meth:`spawn` can pass (a pipe
        of ``os.pipe`` may have no way into the environment)."""
        ...

    def host_pids(self, pid: int) -> tuple[int, int] | None:
        """(host pid, host pid of its init) of the process that :meth:`spawn` started and
        that calls itself ``pid``; None where it is not found. Stopping that init first,
        then everything below it, stops all the process started."""
        ...

    def has_program(self, name: str) -> bool:
        """Whether ``name`` is on the environment's PATH."""
        ...

    def exec(self, argv: Sequence[str], timeout: float | None = None) -> tuple[int, str, str]:
        """Run ``argv`` to its end in :attr:`workdir`: (exit code, stdout, stderr), each
        stream's head and tail kept as it comes and the cut said in the text (a flood is
        never held whole); at the timeout it is killed with all it started (exit code
        124)."""
        ...

    def copy_in(self, host_path: Path, path: str) -> None: ...

    def copy_out(self, path: str, host_path: Path) -> None: ...

    def close(self) -> None:
        """Stop everything in it and remove it; safe to call twice."""
        ...
