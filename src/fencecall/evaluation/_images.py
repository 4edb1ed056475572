"""Task images, built once and kept: ``fencecall-task:<key>``.

The key hashes the build context (every file's path, executable bit and bytes) and the
image ID of each local base image its ``FROM`` lines name, so a changed file or a rebuilt
base makes a new image, and an unchanged task builds nothing on its next run (or in its
next trial). The cache asks the container CLI whether the tag exists, never whether an
image ID is new: a Dockerfile that is only a ``FROM`` builds to its base's own ID (the tag
is added to the base), and a local image tagged like a registry name (``python:3.12``)
satisfies a ``FROM`` of that name without a pull (the build never passes ``--pull``).

Trials of one task wait for one build, and so do other processes on the machine (Ray
workers, another evaluation: a lock file per image); at most ``max_builds`` builds run at
once on the machine (a lock file per slot); a failed build is remembered for the run, so
the task's other trials fail with it rather than build again (in every process of the run,
its shards on Ray too: a marker beside the image's lock names the run), and so is the image found or
built: the task's later trials in the run ask the CLI nothing (they all run the image its
first trial found). Each build's output is kept in ``builds/<key>.log``.
:meth:`ImageCache.halt` (an evaluation stopped) ends the builds under way and starts no
more.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from ..agent.offload import in_thread
from ..defaults import BUILDS_AT_ONCE
from ..environments import ContainerCli, ContainerError, ImageInfo
from ._task import EnvironmentSpec

TAG = "fencecall-task"
_IGNORED = frozenset({".git", "__pycache__", ".DS_Store"})
_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?",
                   re.IGNORECASE | re.MULTILINE)
LOCKS = Path(tempfile.gettempdir()) / f"fencecall-images-{os.getuid()}"
"""This machine's lock files: one per image (one build of it at a time, whichever process
asks) and one per build slot (``max_builds`` at once)."""
LOCK_POLL = 0.2
"""Seconds between tries of a held lock."""
LOG_TAIL = 3000
"""Characters of a failed build's output its error keeps."""


class BuildError(Exception):
    """An image could not be built (or pulled): the message ends with the output's tail."""


def _failure_of(marker: Path, run: str) -> str | None:
    """The error of the build that failed in run ``run``, as its marker keeps it; None
    where it did not fail in this run (no marker, or another run's)."""
    with contextlib.suppress(OSError):
        said_run, _, error = marker.read_text(encoding="utf-8").partition("\n")
        if said_run == run:
            return error
    return None


def _remember_failure(marker: Path, run: str, error: str) -> None:
    """Keep a failed build's error for the other processes of run ``run`` (the marker is
    read and written under the image's lock): they fail its trials with it rather than build
    again."""
    part = marker.with_name(f".{marker.name}.{os.getpid()}")
    with contextlib.suppress(OSError):
        part.write_text(f"{run}\n{error}", encoding="utf-8")
        os.replace(part, marker)


@dataclass(frozen=True, slots=True)
class Image:
    """The image a trial runs: its name, whether this trial built it, and how long that
    took (0 when it was there)."""

    name: str
    built: bool = False
    seconds: float = 0.0
    info: ImageInfo | None = None
    """Its ID, ``WORKDIR`` and ``USER``, which its container's start then need not ask."""


def context_key(cli: ContainerCli, dockerfile: Path) -> str:
    """The cache key of the build of ``dockerfile`` with its folder as the context."""
    context = dockerfile.parent
    digest = hashlib.sha256()
    for path in sorted(p for p in context.rglob("*") if p.is_file() and not p.is_symlink()
                       and not _IGNORED & set(p.relative_to(context).parts)):
        name = path.relative_to(context).as_posix().encode()
        executable = b"x" if os.access(path, os.X_OK) else b"-"
        digest.update(b"%d:%s%s%d:" % (len(name), name, executable, path.stat().st_size))
        with path.open("rb") as data:
            for chunk in iter(lambda: data.read(1 << 20), b""):
                digest.update(chunk)
    for base in _bases(dockerfile.read_text(encoding="utf-8", errors="replace")):
        done = cli.call("image", "inspect", "--format", "{{.Id}}", base, check=False)
        digest.update(f"FROM {base} {done.stdout.strip() if done.returncode == 0 else ''}\n"
                      .encode())
    return digest.hexdigest()[:32]


def _bases(dockerfile: str) -> list[str]:
    """The images a Dockerfile's ``FROM`` lines name, not counting its own stages."""
    stages: set[str] = set()
    bases: list[str] = []
    for match in _FROM.finditer(dockerfile):
        image, alias = match.group(1), match.group(2)
        if image.lower() not in stages and image not in bases:
            bases.append(image)
        if alias:
            stages.add(alias.lower())
    return bases


class ImageCache:
    """The images of one run's tasks (see the module)."""

    def __init__(self, cli: ContainerCli, logs: Path, max_builds: int = BUILDS_AT_ONCE,
                 run: str | None = None):
        self.cli, self.logs, self.max_builds = cli, logs, max(1, max_builds)
        self.run = run if run is not None else os.urandom(8).hex()
        """The evaluation this cache builds for: its processes (the shards of a run on Ray)
        share a failed build (see :meth:`_built_once`); a later run tries again."""
        self._builds = asyncio.Semaphore(self.max_builds)
        self._locks: dict[str, asyncio.Lock] = {}
        self._failed: dict[str, str] = {}
        self._ready: dict[Path | str, Image] = {}
        """Each task's image (by its Dockerfile or ``docker_image``) once found or built:
        the task's later trials run it without asking the CLI again."""
        self._running: set[subprocess.Popen[bytes]] = set()
        self._guard = threading.Lock()
        self._halted = False
        self.built = 0
        """Images this cache has built (not found)."""

    async def image(self, spec: EnvironmentSpec) -> Image:
        """The task's image, built if it is not there yet; :class:`BuildError` with the
        output's tail where the build fails."""
        if spec.dockerfile is None:
            assert spec.docker_image is not None
            return await self._pulled(spec.docker_image, spec.build_timeout)
        dockerfile = spec.dockerfile
        if dockerfile in self._ready:
            return self._ready[dockerfile]
        key = await in_thread(lambda: context_key(self.cli, dockerfile))
        name = f"{TAG}:{key}"
        async with self._locks.setdefault(key, asyncio.Lock()):
            if key in self._failed:
                raise BuildError(self._failed[key])
            if dockerfile in self._ready:  # a trial that started with this one found it
                return self._ready[dockerfile]
            if info := await in_thread(lambda: self.cli.image_info(name)):
                self._ready[dockerfile] = Image(name, info=info)
                return self._ready[dockerfile]
            async with self._builds:
                try:
                    image = await in_thread(lambda: self._built_once(dockerfile, name, key,
                                                                     spec.build_timeout))
                except BuildError as err:
                    self._failed[key] = str(err)
                    raise
                self.built += image.built
                self._ready[dockerfile] = Image(name, info=await in_thread(
                    lambda: self.cli.image_info(name)))
                return replace(image, info=self._ready[dockerfile].info)

    def _built_once(self, dockerfile: Path, name: str, key: str, timeout: float) -> Image:
        """The image built, unless another process of this machine (a Ray worker, another
        evaluation) built it while this one waited for the image's lock; its builds count
        against one machine-wide ``max_builds``."""
        with self._held([f"{self.cli.program}-{key}.lock"]):
            failed = LOCKS / f"{self.cli.program}-{key}.failed"
            if (said := _failure_of(failed, self.run)) is not None:
                raise BuildError(said)
            if self.cli.image_exists(name):
                return Image(name)
            with self._held([f"{self.cli.program}-build-{slot}.lock"
                             for slot in range(self.max_builds)]):
                clock = time.monotonic()
                try:
                    self._build(dockerfile, name, key, timeout)
                except BuildError as err:
                    _remember_failure(failed, self.run, str(err))
                    raise
                return Image(name, built=True, seconds=round(time.monotonic() - clock, 3))

    @contextlib.contextmanager
    def _held(self, names: list[str]) -> Iterator[None]:
        """One of the lock files ``names`` (in :data:`LOCKS`) held while in the block;
        waits while all are held elsewhere, until :meth:`halt`."""
        LOCKS.mkdir(parents=True, exist_ok=True)
        while True:
            for name in names:
                lock = os.open(LOCKS / name, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(lock)
                    continue
                try:
                    yield
                finally:
                    os.close(lock)
                return
            if self._halted:
                raise BuildError("the evaluation was stopped")
            time.sleep(LOCK_POLL)

    def _build(self, dockerfile: Path, name: str, key: str, timeout: float) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{key}.log"
        argv = self.cli.argv("build", "--tag", name, "--file", str(dockerfile),
                             str(dockerfile.parent))
        with log.open("w", encoding="utf-8") as out:
            failure = self._built(argv, out, timeout)
        if failure is not None:
            tail = log.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL:]
            raise BuildError(f"building {dockerfile} failed ({failure}; the whole log: "
                             f"{log}):\n{tail}")

    def _built(self, argv: list[str], out: IO[str], timeout: float) -> str | None:
        """Run the build ``argv`` (its output to ``out``); why it failed, or None. Its own
        session, so a terminal's Ctrl-C reaches fencecall, which ends it (:meth:`halt`)."""
        with self._guard:
            if self._halted:
                return "the evaluation was stopped"
            build = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
            self._running.add(build)
        try:
            code = build.wait(timeout)
        except subprocess.TimeoutExpired:
            build.kill()
            build.wait()
            return f"it took more than {timeout:g} s"
        finally:
            with self._guard:
                self._running.discard(build)
        return f"exit status {code}" if code else None

    def halt(self) -> None:
        """End the builds under way (SIGTERM: the CLI removes what it was building) and
        start no more."""
        with self._guard:
            self._halted = True
            for build in self._running:
                build.terminate()

    async def _pulled(self, image: str, timeout: float) -> Image:
        """A task's ready-made ``docker_image``: used where it is, else pulled once."""
        async with self._locks.setdefault(image, asyncio.Lock()):
            if image in self._failed:
                raise BuildError(self._failed[image])
            if image in self._ready:
                return self._ready[image]
            if info := await in_thread(lambda: self.cli.image_info(image)):
                self._ready[image] = Image(image, info=info)
                return self._ready[image]
            clock = time.monotonic()
            try:
                await in_thread(lambda: self.cli.call("pull", image, timeout=timeout))
            except ContainerError as err:
                self._failed[image] = f"pulling {image} failed: {str(err)[-LOG_TAIL:]}"
                raise BuildError(self._failed[image]) from None
            self._ready[image] = Image(image, info=await in_thread(
                lambda: self.cli.image_info(image)))
            return replace(self._ready[image], built=True,
                           seconds=round(time.monotonic() - clock, 3))
