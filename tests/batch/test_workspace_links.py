"""A task's ``files`` never follow a link out of its workspace.

The workspace comes from a copy or a clone the task author may not control (a repository
with a committed symlink to ``/``, say); the files are written by descriptor, so a link that
leads outside refuses the file while one that stays inside is followed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fencecall.batch._task_workspace import WorkspaceError, prepare
from fencecall.batch._tasks import WorkspaceSpec


def git(*argv: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv], cwd=cwd,
                   check=True, capture_output=True)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@pytest.fixture
def linked(tmp_path: Path, outside: Path) -> Path:
    """A repository (also a folder to copy) with a link out and a link in, committed."""
    source = tmp_path / "source"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "keep.txt").write_text("kept\n")
    (source / "out").symlink_to(outside)
    (source / "in").symlink_to("sub")
    git("init", "-q", cwd=source)
    git("add", "-A", cwd=source)
    git("commit", "-qm", "links", cwd=source)
    return source


def spec(kind: str, source: Path, files: dict[str, str]) -> WorkspaceSpec:
    if kind == "git":
        return WorkspaceSpec(git=str(source), files=files)
    return WorkspaceSpec(path=source, files=files)


@pytest.mark.parametrize("kind", ["git", "path"])
def test_task_files_never_follow_a_link_outside(kind: str, linked: Path, outside: Path,
                                                tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        prepare(spec(kind, linked, {"out/x.txt": "pwned\n"}), tmp_path / "task")
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("kind", ["git", "path"])
def test_task_files_follow_a_link_that_stays_inside(kind: str, linked: Path,
                                                    tmp_path: Path) -> None:
    folder = tmp_path / "task"
    prepare(spec(kind, linked, {"in/y.txt": "given\n"}), folder)
    assert (folder / "sub" / "y.txt").read_text() == "given\n"
    assert (folder / "in").is_symlink()
