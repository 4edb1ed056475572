"""A container of an image as the place a conversation's tools run.

One container per conversation or task, started with an init and a command that waits, and
removed when the conversation ends (a crash's are removed by the next start: the sweep).
Its working folder is a host folder mounted there: filled, when it is empty, with what the
image holds at that folder (copied out once per image ID: :mod:`._image_folders`), so the
file tools work on the container's files by descriptor on the host, and what they save a
command sees at once. A second folder of fencecall's is mounted read-only at its own host
path, for the scripts the shell sources.

Each long-lived process (a shell, an interpreter) is ``exec``'d under the init that
``--init`` put in the container, run as a subreaper for it alone, and gets the descriptors
it needs by name through a third mounted folder (see :mod:`._handoff`): what it starts,
orphans included, stays below that init, so stopping the init (SIGSTOP) and then killing
everything below it by host pid stops all of it. Killing the CLI's ``exec`` client alone
would leave it all running. podman and docker take the same path.

The processes run as the image's USER, or, in a view of :meth:`ContainerEnvironment.as_user`,
as another user of the image's (a task's agent user): the scripts, the driver and the handed
descriptors are open to any user already, and nothing that user writes is read by name on the
host (the handoff folder and the working folder are only ever walked by descriptor).
"""

from __future__ import annotations

import copy
import os
import secrets
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..sandbox import make_scratch, start_process
from ._bounded import run_bounded
from ._container_cli import (
    ContainerCli,
    ContainerError,
    ContainerUnavailable,
    ImageInfo,
    choose_container_cli,
)
from ._environment import Stream
from ._handoff import Handoff
from ._image_folders import fill_from_image
from ._namespace import PidNamespace, parent, stop_and_kill

DEFAULT_WORKDIR = "/workspace"
"""The working folder of an image that sets none (its WORKDIR is ``/``, which is not copied
out)."""
_EXEC_MARK = "FENCECALL_EXEC"
_SUBREAPER = {"TINI_SUBREAPER": "1"}
"""Where the init is tini rather than catatonit (which is a subreaper whenever it is not
pid 1), this makes it one."""
_swept: set[str] = set()
_sweep_lock = threading.Lock()


def sweep_once(cli: ContainerCli) -> None:
    """Remove what crashed fencecall processes left (see :meth:`ContainerCli.sweep`), once
    per process and CLI."""
    with _sweep_lock:
        if cli.program in _swept:
            return
        _swept.add(cli.program)
    cli.sweep()


class ContainerEnvironment:
    """A running container (an :class:`~._environment.Environment`); :meth:`start` makes
    one, :meth:`close` removes it."""

    def __init__(self, cli: ContainerCli, container: str, workdir: str, files: Path,
                 scratch: Path, handoff: Handoff):
        self.cli = cli
        self.container = container
        self.workdir = workdir
        self.files = files
        self.scratch = scratch
        self._handoff = handoff
        init = cli.init_pid(container)
        self._namespace = PidNamespace(init)
        self._init = cli.init_argv(f"/proc/{init}/root")
        self._programs: dict[str, bool] = {}
        self._closed = False
        self._user: str | None = None
        """Who its processes run as (None: the image's USER); see :meth:`as_user`."""
        self._view = False
        self.owner: tuple[int, int] | None = None
        """The uid and gid that new files the file tools make get: those of
        :meth:`as_user`'s user; None: their folder's."""

    @classmethod
    def start(cls, image: str, files: Path, *, cli: ContainerCli | None = None,
              workdir: str | None = None, network: bool = False, cpus: float | None = None,
              memory_mb: int | None = None, env: Mapping[str, str] | None = None,
              info: ImageInfo | None = None, mounts: Sequence[tuple[Path, str]] = ()
              ) -> ContainerEnvironment:
        """A container of ``image`` whose working folder (``workdir``, else the image's
        WORKDIR) is the host folder ``files``, first filled from the image where it is
        empty. No network unless ``network``. ``env`` is the container's environment (a
        task's), which every process run in it starts with. ``info`` is the image's where
        the caller has it (an evaluation's trials of one image), else looked up.
        ``mounts`` are more host folders, each mounted writable at a container path."""
        cli = cli or choose_container_cli()
        sweep_once(cli)
        info = info or cli.image_info(image)
        if info is None:
            raise ContainerUnavailable(f"there is no image {image!r} here: pull or build it "
                                       f"first ({cli.program} pull, {cli.program} build)")
        workdir, fresh = _working_folder(cli, info, files, workdir)
        scratch, handoff = make_scratch("container"), make_scratch("handoff")
        scratch.chmod(0o711)
        handoff.chmod(0o711)
        try:
            container = cli.start(image, network=network, workdir=workdir, cpus=cpus,
                                  memory_mb=memory_mb, env=env,
                                  mounts=[(files, workdir, False), (scratch, str(scratch), True),
                                          (handoff, str(handoff), False),
                                          *((host, inside, False) for host, inside in mounts)])
            try:
                made = cls(cli, container, workdir, files, scratch, Handoff(handoff))
                if fresh and info.user.partition(":")[0] not in ("", "root", "0"):
                    made._give_files_to_user()
                return made
            except BaseException:
                cli.remove(container)
                raise
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            shutil.rmtree(handoff, ignore_errors=True)
            raise

    def spawn(self, argv: Sequence[str], *, fds: Sequence[int] = (),
              env: Mapping[str, str] | None = None, stdin: Stream = None,
              stdout: Stream = None, stderr: Stream = None) -> subprocess.Popen[bytes]:
        """See :meth:`~._environment.Environment.spawn`: ``fds`` (files, or pipes made by
        :meth:`pipe`) reach the process by name (see :mod:`._handoff`)."""
        def run(wrapper: list[str]) -> subprocess.Popen[bytes]:
            inner = self.cli.exec_argv(self.container, [*self._init, *wrapper, *argv],
                                       interactive=stdin is not None, workdir=self.workdir,
                                       env={**_SUBREAPER, **(env or {})}, user=self._user)
            return start_process(inner, stdin=stdin, stdout=stdout, stderr=stderr,
                                 start_new_session=True)
        return self._handoff.start(fds, run)

    def pipe(self) -> tuple[int, int]:
        return self._handoff.pipe()

    def as_user(self, user: str) -> ContainerEnvironment:
        """This container with its processes run as ``user`` (a name or a uid, as ``exec
        --user`` takes it), as a task's agent runs as a user of its own; the new files the
        file tools make are that user's (:attr:`owner`), so both sides write them. Its
        :meth:`close` leaves the container to this one. ContainerError where the
        container has no such user."""
        view = copy.copy(self)
        view._user, view._programs, view._view = user, {}, True
        view.owner = view._ids()
        return view

    def _ids(self) -> tuple[int, int]:
        """The uid and gid its processes run as, as ``id`` says there: only numbers are
        taken, whatever the image's ``id`` prints."""
        code, out, err = self.exec(["sh", "-c", "id -u; id -g"], 60)
        ids = out.split()
        if code != 0 or len(ids) != 2 or not all(part.isdigit() for part in ids):
            who = "the image's user" if self._user is None else f"the user {self._user!r}"
            raise ContainerError(f"{who} has no id in the container: {err.strip()[-200:]}")
        return int(ids[0]), int(ids[1])

    def _give_files_to_user(self) -> None:
        """Make the image's user (not root) the owner of the working folder fencecall made
        for it, so the user can write there as in the image; what the file tools then
        write keeps the owner of what it replaces, or takes its folder's. Only root can
        give files away: elsewhere (a rootless podman maps the user to another id) they
        stay fencecall's."""
        uid, gid = self._ids()
        if os.geteuid() != 0:
            return
        os.chown(self.files, uid, gid)
        for _, names, others, folder in os.fwalk(self.files):
            for name in (*names, *others):
                os.chown(name, uid, gid, dir_fd=folder, follow_symlinks=False)

    def host_pids(self, pid: int) -> tuple[int, int] | None:
        found = self._namespace.host_pid(pid)
        init = None if found is None else parent(found)
        return None if found is None or init is None else (found, init)

    def has_program(self, name: str) -> bool:
        if name not in self._programs:
            code, _, _ = self.exec(["sh", "-c", f'command -v "{name}" >/dev/null'], 60)
            self._programs[name] = code == 0
        return self._programs[name]

    def exec(self, argv: Sequence[str], timeout: float | None = None) -> tuple[int, str, str]:
        """See :meth:`~._environment.Environment.exec`; of its output, each stream's head
        and tail within :data:`~._bounded.OUTPUT_LIMIT`, read as it comes."""
        mark = f"{_EXEC_MARK}={secrets.token_hex(8)}"
        name, _, value = mark.partition("=")
        command = self.cli.exec_argv(self.container, [*self._init, *argv],
                                     workdir=self.workdir, env={**_SUBREAPER, name: value},
                                     user=self._user)
        done = run_bounded(command, timeout, on_timeout=lambda: stop_and_kill(
            self._namespace.carrying(mark.encode())))
        return 124 if done.returncode is None else done.returncode, done.stdout, done.stderr

    def copy_in(self, host_path: Path, path: str) -> None:
        self.cli.copy_in(self.container, host_path, path)

    def copy_out(self, path: str, host_path: Path) -> None:
        self.cli.copy_out(self.container, path, host_path)

    def close(self) -> None:
        """Remove the container (a view of :meth:`as_user` leaves it to its own)."""
        if self._closed or self._view:
            return
        self._closed = True
        self.cli.remove(self.container)
        shutil.rmtree(self.scratch, ignore_errors=True)
        self._handoff.close()

    def __enter__(self) -> ContainerEnvironment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _working_folder(cli: ContainerCli, image: ImageInfo, files: Path, workdir: str | None
                    ) -> tuple[str, bool]:
    """(the working folder, whether ``files`` was empty): the folder ``workdir``, else the
    image's; ``files`` filled from the image (through the host's cache of its folders)
    where it was empty."""
    chosen = workdir or image.workdir
    if chosen == "/":
        chosen = DEFAULT_WORKDIR
    files.mkdir(parents=True, exist_ok=True)
    fresh = not any(files.iterdir())
    if fresh and (workdir or chosen != DEFAULT_WORKDIR):
        fill_from_image(cli, image.id, chosen, files)
    return chosen, fresh
