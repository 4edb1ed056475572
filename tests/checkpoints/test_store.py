"""The checkpoint store: a workspace recorded and put back byte for byte, by descriptor."""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fencecall.checkpoints import Checkpoints, Scanner, Store, StoreError, TooManyFiles
from fencecall.checkpoints._restore import changes, restore

State = dict[str, tuple[str, int, bytes]]


def state(folder: Path) -> State:
    """Everything under ``folder``, links not followed: kind, permission bits, bytes."""
    found: State = {}
    for top, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            path = Path(top) / name
            info = path.lstat()
            relative = str(path.relative_to(folder))
            if stat.S_ISLNK(info.st_mode):
                found[relative] = ("l", 0, os.readlink(path).encode())
            elif stat.S_ISDIR(info.st_mode):
                found[relative] = ("d", 0, b"")
            else:
                found[relative] = ("f", stat.S_IMODE(info.st_mode), path.read_bytes())
    return found


def roundtrip(workspace: Path, store: Store, change: object) -> tuple[State, State]:
    """Record ``workspace``, let ``change`` change it, put it back: (before, after)."""
    scanner = Scanner(workspace, store)
    before_state = state(workspace)
    recorded = scanner.scan()
    change(workspace)  # type: ignore[operator]
    assert restore(workspace, store, scanner.scan(), recorded) == []
    return before_state, state(workspace)


def test_contents_modes_links_deletions_and_new_folders_come_back(tmp_path: Path,
                                                                  workspace: Path) -> None:
    (workspace / "src" / "deep").mkdir(parents=True)
    (workspace / "src" / "a.py").write_bytes(b"print(1)\r\nno newline")
    (workspace / "src" / "deep" / "bin.dat").write_bytes(bytes(range(256)) * 3)
    (workspace / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    (workspace / "run.sh").chmod(0o755)
    (workspace / "empty").mkdir()
    (workspace / "link").symlink_to("src/a.py")
    (workspace / "dangling").symlink_to("/nowhere/at/all")

    def change(ws: Path) -> None:
        (ws / "src" / "a.py").write_bytes(b"changed")
        (ws / "run.sh").chmod(0o644)
        shutil.rmtree(ws / "src" / "deep")
        (ws / "empty").rmdir()
        (ws / "link").unlink()
        (ws / "link").mkdir()
        (ws / "made" / "below").mkdir(parents=True)
        (ws / "made" / "below" / "new.txt").write_text("new")
        (ws / "dangling").unlink()
        (ws / "dangling").write_text("now a file")

    before, after = roundtrip(workspace, Store(tmp_path / "store"), change)
    assert after == before


def test_a_folder_swapped_for_a_link_outside_is_not_written_through(tmp_path: Path,
                                                                    workspace: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "sub").mkdir()
    (workspace / "sub" / "f.txt").write_text("inside")

    def plant(ws: Path) -> None:
        shutil.rmtree(ws / "sub")
        (ws / "sub").symlink_to(outside)

    before, after = roundtrip(workspace, Store(tmp_path / "store"), plant)
    assert after == before
    assert list(outside.iterdir()) == []


def test_git_folders_ignored_files_and_their_folders_are_left_alone(tmp_path: Path,
                                                                    workspace: Path) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (workspace / "vendor" / ".git").parent.mkdir()
    (workspace / "vendor" / ".git").write_text("gitdir: ../.git/modules/vendor\n")
    (workspace / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (workspace / "keep.log").write_text("kept")
    store = Store(tmp_path / "store")
    recorded = Scanner(workspace, store).scan()
    assert set(recorded.entries) == {".gitignore", "keep.log", "vendor"}

    (workspace / ".git" / "HEAD").write_text("changed by a checkout\n")
    (workspace / "build" / "out").mkdir(parents=True)
    (workspace / "build" / "out" / "x.o").write_bytes(b"\0")
    (workspace / "made").mkdir()
    (workspace / "made" / "debug.log").write_text("ignored, in a new folder")
    (workspace / "keep.log").write_text("edited")
    now = Scanner(workspace, store).scan()
    assert [str(c) for c in changes(now, recorded)] == ["changed keep.log", "removed made/"]
    problems = restore(workspace, store, now, recorded)
    assert problems == ["made: it holds files the checkpoint did not record"]
    assert (workspace / ".git" / "HEAD").read_text() == "changed by a checkout\n"
    assert (workspace / "build" / "out" / "x.o").exists()
    assert (workspace / "keep.log").read_text() == "kept"


def test_a_file_over_the_cap_is_not_kept_and_said(tmp_path: Path, workspace: Path) -> None:
    (workspace / "big.bin").write_bytes(b"x" * 2000)
    (workspace / "small.txt").write_text("small")
    store = Store(tmp_path / "store")
    recorded = Scanner(workspace, store, max_file=1000).scan()
    assert set(recorded.entries) == {"small.txt"}
    assert recorded.skipped == {"big.bin": "2000 bytes, over the 1000 bytes a file may have"}
    (workspace / "big.bin").write_bytes(b"y")
    (workspace / "small.txt").write_text("edited")
    now = Scanner(workspace, store, max_file=1000).scan()
    assert [str(c) for c in changes(now, recorded)] == ["changed small.txt"]
    restore(workspace, store, now, recorded)
    assert (workspace / "big.bin").read_bytes() == b"y"  # not kept: left as it is


def test_too_many_files_refuse_a_checkpoint(tmp_path: Path, workspace: Path) -> None:
    for index in range(5):
        (workspace / f"f{index}").write_text("")
    with pytest.raises(TooManyFiles, match="more than 4 files and folders"):
        Scanner(workspace, Store(tmp_path / "store"), max_entries=4).scan()


def test_a_changed_store_fails_the_restore(tmp_path: Path, workspace: Path) -> None:
    (workspace / "a.txt").write_text("recorded")
    store = Store(tmp_path / "store")
    recorded = Scanner(workspace, store).scan()
    blob = next((tmp_path / "store" / "objects").rglob("*"))
    for blob in (tmp_path / "store" / "objects").rglob("*"):
        if blob.is_file():
            blob.write_text("something else")
    (workspace / "a.txt").write_text("edited")
    problems = restore(workspace, store, Scanner(workspace, store).scan(), recorded)
    assert len(problems) == 1 and "holds other contents" in problems[0]
    assert (workspace / "a.txt").read_text() == "edited"
    with pytest.raises(StoreError):
        store.blob("0" * 64)


def test_an_edit_within_the_same_size_and_second_is_still_seen(tmp_path: Path,
                                                               workspace: Path) -> None:
    """The stat cache does not trust a file changed just before the scan that cached it."""
    path = workspace / "a.txt"
    path.write_text("one")
    store = Store(tmp_path / "store")
    scanner = Scanner(workspace, store)
    first = scanner.scan()
    info = path.stat()
    with path.open("r+") as handle:  # same inode, same size, the old mtime put back
        handle.write("two")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert scanner.scan().entries["a.txt"] != first.entries["a.txt"]


def test_a_checkpoint_of_ten_thousand_files_where_one_changed_takes_well_under_a_second(
        tmp_path: Path, workspace: Path) -> None:
    for folder in range(100):
        (workspace / f"d{folder}").mkdir()
        for index in range(100):
            (workspace / f"d{folder}" / f"f{index}.txt").write_text(f"{folder} {index}\n")
    time.sleep(0.2)  # older than the stat cache's racy window
    checkpoints = Checkpoints(tmp_path / "store", workspace)
    first = checkpoints.record((0, "turn"))
    (workspace / "d5" / "f5.txt").write_text("changed\n")
    started = time.perf_counter()
    second = checkpoints.record((0, "turn"))
    took = time.perf_counter() - started
    assert second != first
    assert len(checkpoints.store.load(second).entries) == 10_100
    assert took < 1.0, took  # 0.3 s on an idle machine


names = st.sampled_from(["a", "b", "c", "d.txt"])
paths = st.lists(names, min_size=1, max_size=3).map("/".join)
contents = st.binary(max_size=40)
operations = st.lists(st.tuples(st.sampled_from(["write", "remove", "link", "chmod"]),
                                paths, contents), max_size=8)


def apply(workspace: Path, operations: list[tuple[str, str, bytes]]) -> None:
    """Change ``workspace`` as ``operations`` say, skipping those its shape refuses."""
    for kind, relative, data in operations:
        path = workspace / relative
        try:
            if kind == "remove":
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() \
                    else path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            if kind == "write":
                path.write_bytes(data)
            elif kind == "link":
                path.symlink_to(data.hex() or "x")
            elif path.is_file() and not path.is_symlink():
                path.chmod(0o700 if data[:1] < b"\x80" else 0o640)
        except OSError:
            continue


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=operations, second=operations)
def test_any_changes_are_undone_exactly(tmp_path: Path, first: list[tuple[str, str, bytes]],
                                        second: list[tuple[str, str, bytes]]) -> None:
    root = Path(os.path.realpath(tmp_path))
    workspace, store_folder = root / "ws", root / "store"
    shutil.rmtree(workspace, ignore_errors=True)
    shutil.rmtree(store_folder, ignore_errors=True)
    workspace.mkdir()
    apply(workspace, first)
    before, after = roundtrip(workspace, Store(store_folder), lambda ws: apply(ws, second))
    assert after == before
