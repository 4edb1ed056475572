"""What an image holds at a folder, copied out of it once and kept on the host.

Copying a folder out of an image takes three CLI calls (``create``, ``cp``, ``rm``: about
half a container's start), and every trial of a task's image used to pay them again. The
first start of an image ID and folder copies the folder out into this machine's cache
(:data:`FOLDERS`, one per user, as the CLI's images are); later starts copy the cached tree
with ``cp -a``, which keeps what ``cp`` out of the CLI kept: modes, symlinks, hard links,
special files, and the owner the copier is (root keeps root's). A folder the image lacks
is cached as an empty one, which fills nothing, as before.

The key is the image's ID, never its tag: a rebuilt tag is another ID, so another entry.
An entry is written in a temporary folder beside it and renamed into place, so trials that
start together never see half of one (the second rename finds it there, and its copy goes).
The cache is pruned at the first new entry of each process: the entries of images the CLI
no longer has go (a rebuilt tag is a new ID, and its old entry would stay for ever).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from ._container_cli import ContainerCli, ContainerError

FOLDERS = Path(tempfile.gettempdir()) / f"fencecall-image-folders-{os.getuid()}"
"""This user's cache of image folders: an entry per CLI, image ID and folder."""


def fill_from_image(cli: ContainerCli, image_id: str, folder: str, target: Path,
                    cache: Path | None = None) -> None:
    """Copy what image ``image_id`` holds at ``folder`` into the host folder ``target``
    (its own mode and owner untouched, as ``cp`` out of the CLI left them), through
    ``cache`` (None: :data:`FOLDERS`)."""
    entry = cached_folder(cli, image_id, folder, cache)
    names = sorted(os.listdir(entry))
    if not names:
        return
    done = subprocess.run(["cp", "-a", "--", *(str(entry / name) for name in names),
                           f"{target}/"], capture_output=True, text=True, errors="replace",
                          stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise ContainerError(f"copying {entry} into {target} failed: "
                             f"{done.stderr.strip()[-2000:]}")


def cached_folder(cli: ContainerCli, image_id: str, folder: str, cache: Path | None = None
                  ) -> Path:
    """The cache's copy of ``folder`` of image ``image_id``, copied out first where the
    cache (None: :data:`FOLDERS`) has none."""
    cache = FOLDERS if cache is None else cache
    digest = hashlib.sha256(f"{cli.program}\0{image_id}\0{folder}".encode()).hexdigest()
    entry = cache / digest[:40]
    if entry.is_dir():
        return entry
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    prune_once(cli, cache)
    part = Path(tempfile.mkdtemp(prefix=PART, dir=cache))
    try:
        try:
            cli.copy_out_of_image(image_id, folder, part)
        except ContainerError as err:
            if "no such file" not in str(err).lower():
                raise
        # whose entry it is, before the entry is there: an entry without it is stale
        entry.with_suffix(IMAGE).write_text(f"{cli.program}\n{_bare(image_id)}\n")
        with contextlib.suppress(OSError):  # another start put the same entry there first
            part.rename(entry)
    finally:
        shutil.rmtree(part, ignore_errors=True)
    return entry


PART = ".part-"
IMAGE = ".image"
"""Beside each entry, a file naming its CLI and image ID."""
STALE_PART = 3600.0
"""Seconds after which a half-made entry is one a crash left."""
_pruned: set[tuple[str, Path]] = set()


def prune_once(cli: ContainerCli, cache: Path) -> None:
    """:func:`prune`, once per process, CLI and cache: at the first entry it makes (an image
    new to the cache, perhaps the rebuild of one whose entries are now stale)."""
    if (cli.program, cache) not in _pruned:
        _pruned.add((cli.program, cache))
        prune(cli, cache)


def prune(cli: ContainerCli, cache: Path) -> list[Path]:
    """Remove the entries of ``cache`` whose image ``cli`` no longer has (removed, or a tag
    rebuilt and the old image pruned), those of no known image, and the half-made entries a
    crash left; returns them. Nothing is removed where the CLI cannot list its images."""
    done = cli.call("images", "--quiet", "--no-trunc", check=False)
    if done.returncode != 0:
        return []
    present = {_bare(word) for word in done.stdout.split()}
    removed = []
    for path in cache.iterdir():
        if path.name.startswith(PART):
            stale = _age(path) > STALE_PART
        elif path.suffix == IMAGE or not path.is_dir() or path.is_symlink():
            continue
        else:
            program, image = [*_read(path.with_suffix(IMAGE)).split("\n"), "", ""][:2]
            stale = (program == cli.program and image not in present) or not program
        if stale:
            shutil.rmtree(path, ignore_errors=True)
            path.with_suffix(IMAGE).unlink(missing_ok=True)
            removed.append(path)
    return removed


def _bare(image_id: str) -> str:
    """An image ID without its ``sha256:`` (docker writes it, podman's inspect does not)."""
    return image_id.strip().removeprefix("sha256:")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _age(path: Path) -> float:
    try:
        return time.time() - path.lstat().st_mtime
    except OSError:
        return 0.0

