"""The real podman: a container's working folder filled from the host's cache of what its
image holds there, as a copy straight out of the image fills it, and the image copied out
once per image ID (a rebuilt tag is copied out again), trials that start together
included."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fencecall.environments import ContainerCli, ContainerEnvironment, _image_folders
from fencecall.environments._image_folders import cached_folder

from ..containers import base_image, cli_calls, container_cli

__all__ = ["base_image"]

PROBE = "fencecall-test-folders"


def build(cli: ContainerCli, base: str, context: Path, word: str) -> str:
    """The probe image (its ``/w``: modes, owners, links, a FIFO, a closed folder, and
    ``word``); its ID."""
    context.mkdir(parents=True, exist_ok=True)
    (context / "Dockerfile").write_text(
        f"FROM {base}\n"
        "RUN mkdir -p /w/sub && chmod 0750 /w && echo hi > /w/f && chown 1234:2345 /w/f "
        "&& chmod 0604 /w/f && ln -s f /w/link && ln /w/f /w/hard && chmod 0700 /w/sub "
        f"&& echo {word} > /w/sub/x && chmod 0755 /w/sub/x && mkfifo /w/fifo\n"
        "WORKDIR /w\n")
    subprocess.run(cli.argv("build", "--quiet", "--tag", PROBE, str(context)), check=True,
                   capture_output=True, timeout=600)
    info = cli.image_info(PROBE)
    assert info is not None
    return info.id


def tree(folder: Path) -> dict[str, Any]:
    """Each path's kind, mode, owner, link target and text; hard links as one inode."""
    inodes: dict[int, str] = {}
    found: dict[str, Any] = {".": oct(folder.stat().st_mode)}
    for path in sorted(folder.rglob("*")):
        stat = path.lstat()
        name = str(path.relative_to(folder))
        same = inodes.setdefault(stat.st_ino, name)
        text = path.read_text() if path.is_file() and not path.is_symlink() else None
        found[name] = (oct(stat.st_mode), stat.st_uid, stat.st_gid, same,
                       os.readlink(path) if path.is_symlink() else None, text)
    return found


def entries(cache: Path) -> list[str]:
    """The cache's entries (and half-made ones), without the files naming their images."""
    return sorted(p.name for p in cache.iterdir() if p.suffix != _image_folders.IMAGE)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[str]]:
    """The cache in ``tmp_path``; the CLI's subcommands called meanwhile."""
    monkeypatch.setattr(_image_folders, "FOLDERS", tmp_path / "cache")
    yield cli_calls(monkeypatch)


def test_a_folder_filled_from_the_cache_is_the_folder_copied_out_of_the_image(
        base_image: str, tmp_path: Path, calls: list[str]) -> None:
    cli = container_cli()
    first_id = build(cli, base_image, tmp_path / "context", "one")
    copied = tmp_path / "copied"
    copied.mkdir()
    cli.copy_out_of_image(PROBE, "/w", copied)
    calls.clear()
    for n in range(2):
        with ContainerEnvironment.start(PROBE, tmp_path / f"files-{n}", cli=cli) as place:
            assert tree(place.files) == tree(copied)
            assert place.exec(["cat", "sub/x"], 60)[1] == "one\n"
        if n == 0:
            assert {"create", "cp"} <= set(calls)
            calls.clear()
    assert "create" not in calls and "cp" not in calls  # the second came from the cache
    assert entries(tmp_path / "cache") == [cached_folder(cli, first_id, "/w").name]
    second_id = build(cli, base_image, tmp_path / "context", "two")  # the tag rebuilt
    assert second_id != first_id
    with ContainerEnvironment.start(PROBE, tmp_path / "files-new", cli=cli) as place:
        assert (place.files / "sub" / "x").read_text() == "two\n"
    assert len(entries(tmp_path / "cache")) == 2


def test_a_folder_the_image_lacks_is_cached_empty_and_starts_together_share_one_entry(
        base_image: str, tmp_path: Path, calls: list[str]) -> None:
    cli = container_cli()
    image = build(cli, base_image, tmp_path / "context", "one")
    found: list[Path] = []
    errors: list[BaseException] = []

    def one(folder: str) -> None:
        try:
            found.append(cached_folder(cli, image, folder))
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=one, args=(folder,))
               for folder in ("/w", "/w", "/w", "/nowhere", "/nowhere")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(set(found)) == 2
    assert entries(tmp_path / "cache") == sorted({e.name for e in found})  # none half-made
    calls.clear()
    with ContainerEnvironment.start(PROBE, tmp_path / "files", cli=cli,
                                    workdir="/nowhere") as place:
        assert list(place.files.iterdir()) == []
        assert place.exec(["pwd"], 60)[1] == "/nowhere\n"
    assert "create" not in calls and "cp" not in calls


def test_entries_of_images_gone_and_pieces_a_crash_left_are_pruned(
        base_image: str, tmp_path: Path, calls: list[str]) -> None:
    cli = container_cli()
    image = build(cli, base_image, tmp_path / "context", "one")
    cache = tmp_path / "cache"
    live = cached_folder(cli, image, "/w")
    gone = cache / ("0" * 40)  # an image removed since
    gone.mkdir()
    (gone / "f").write_text("x")
    gone.with_suffix(_image_folders.IMAGE).write_text(f"{cli.program}\n{'1' * 64}\n")
    other = cache / ("2" * 40)  # another CLI's: not this one's to judge
    other.mkdir()
    other.with_suffix(_image_folders.IMAGE).write_text(f"docker\n{'3' * 64}\n")
    unnamed = cache / ("4" * 40)  # made before entries were named
    unnamed.mkdir()
    old_part, new_part = cache / ".part-old", cache / ".part-new"
    old_part.mkdir()
    new_part.mkdir()
    os.utime(old_part, (0, 0))
    assert sorted(p.name for p in _image_folders.prune(cli, cache)) == sorted(
        [gone.name, unnamed.name, old_part.name])
    assert entries(cache) == sorted([".part-new", live.name, other.name])
    assert not gone.with_suffix(_image_folders.IMAGE).exists()


def test_the_first_new_entry_of_a_process_prunes_the_cache(
        base_image: str, tmp_path: Path, calls: list[str]) -> None:
    cli = container_cli()
    image = build(cli, base_image, tmp_path / "context", "one")
    stale = tmp_path / "cache" / ("0" * 40)
    stale.mkdir(parents=True)
    cached_folder(cli, image, "/w")
    cached_folder(cli, image, "/nowhere")
    assert not stale.exists()
    assert calls.count("images") == 1
