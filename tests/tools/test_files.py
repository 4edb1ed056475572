"""save, append and read, with the workspace boundary."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fencecall.execution import Session
from fencecall.message import Status
from fencecall.tools import Block, ConfirmRequest
from fencecall.tools.hook_points import FILE_POST_SAVE, FILE_PRE_SAVE, FileSave
from fencecall.tools.runtime import file_io
from fencecall.tools.workspace import locate

from ..support import F, tool_session
from .conftest import Run


def test_save_creates_parents_and_ends_with_newline(run: Run, workspace: Path) -> None:
    [result] = run(f"{F}save src/pkg/app.py\nprint('hi')\n{F}\n")
    assert result.content == "Created src/pkg/app.py (1 lines)."
    assert (workspace / "src/pkg/app.py").read_text() == "print('hi')\n"
    [again] = run(f"{F}save src/pkg/app.py\nprint('bye')\n{F}\n")
    assert again.content == "Saved src/pkg/app.py (1 lines)."


def test_save_path_with_spaces_and_content_with_fences(run: Run, workspace: Path) -> None:
    run(f"````save my notes.md\n# Notes\n{F}shell\nls\n{F}\n````\n")
    assert (workspace / "my notes.md").read_text() == f"# Notes\n{F}shell\nls\n{F}\n"


def test_save_is_atomic(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = workspace / "data.txt"
    target.write_text("original\n")
    os.chmod(target, 0o640)

    def crash(src: str, dst: str, **dir_fds: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", crash)
    with pytest.raises(OSError), locate("data.txt", [workspace]) as place:
        file_io.atomic_write(place, "new\n")
    assert target.read_text() == "original\n"
    assert [p.name for p in workspace.iterdir()] == ["data.txt"]
    monkeypatch.undo()
    with locate("data.txt", [workspace]) as place:
        file_io.atomic_write(place, "new\n")
    assert target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o640


def test_append(run: Run, workspace: Path) -> None:
    (workspace / "log.txt").write_text("one")
    [result] = run(f"{F}append log.txt\ntwo\n{F}\n")
    assert result.content == "Appended 1 line(s) to log.txt."
    assert (workspace / "log.txt").read_text() == "one\ntwo\n"


def test_confirmation_shows_a_diff(workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    requests: list[ConfirmRequest] = []

    def confirm(request: ConfirmRequest) -> bool:
        requests.append(request)
        return False

    with tool_session(workspace, ["save"], confirm=confirm) as session:
        [result] = list(session.execute(f"{F}save a.py\nx = 2\n{F}\n"))
    assert "not confirmed" in result.content
    assert requests[0].preview == "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    assert (workspace / "a.py").read_text() == "x = 1\n"


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/fencecall-test", "sub/../../x"])
def test_paths_outside_the_workspace_are_refused(run: Run, workspace: Path, path: str) -> None:
    [result] = run(f"{F}save {path}\nx\n{F}\n")
    assert "outside the workspace" in result.content
    assert result.failed
    assert not (workspace.parent / "escape.txt").exists()


def test_symlink_pointing_outside_is_refused(run: Run, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    [result] = run(f"{F}save link/x.txt\nx\n{F}\n")
    assert "outside the workspace" in result.content
    assert not (outside / "x.txt").exists()
    (outside / "secret.txt").write_text("s")
    [read] = run(f"{F}read link/secret.txt\n{F}\n")
    assert "outside the workspace" in read.content


def test_links_that_stay_inside_keep_working(workspace: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (workspace / "real").mkdir()
    (workspace / "relative").symlink_to("real")
    (workspace / "absolute").symlink_to(workspace / "real")
    (workspace / "chain").symlink_to("relative")
    (workspace / "real" / "up").symlink_to("..")
    (workspace / "to-extra").symlink_to(extra)
    (workspace / "dangling").symlink_to("real/later.txt")
    with tool_session(workspace, ["save", "read"], extra_roots=[extra]) as session:
        for path in ("relative/a.txt", "absolute/b.txt", "chain/c.txt",
                     "real/up/real/d.txt", "to-extra/e.txt", "dangling"):
            [result] = list(session.execute(f"{F}save {path}\n{path}\n{F}\n"))
            assert result.status is None, result.content
            [read] = list(session.execute(f"{F}read {path}\n{F}\n"))
            assert f"1  {path}" in read.content, read.content
    assert sorted(p.name for p in (workspace / "real").iterdir()) == [
        "a.txt", "b.txt", "c.txt", "d.txt", "later.txt", "up"]
    assert (extra / "e.txt").read_text() == "to-extra/e.txt\n"
    assert (workspace / "dangling").is_symlink()


def test_a_link_loop_or_a_file_as_folder_is_an_error_not_a_hang(run: Run,
                                                                workspace: Path) -> None:
    (workspace / "loop").symlink_to("loop")
    (workspace / "file").write_text("x\n")
    for path in ("loop/x.txt", "loop", "file/x.txt"):
        [result] = run(f"{F}save {path}\nx\n{F}\n")
        assert result.status is Status.ERROR, (path, result.content)
    assert sorted(p.name for p in workspace.iterdir()) == ["file", "loop"]
    [undone] = run(f"{F}save new/../x.txt\nx\n{F}\n")  # a missing name is no link
    assert undone.content == "Created x.txt (1 lines).", undone.content


def test_widened_root_allows_more(workspace: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    with tool_session(workspace, ["save"], extra_roots=[extra]) as session:
        [result] = list(session.execute(f"{F}save {extra}/x.txt\nok\n{F}\n"))
    assert not result.failed, result.content
    assert (extra / "x.txt").read_text() == "ok\n"


def test_file_hooks_can_block_and_observe(session: Session, workspace: Path) -> None:
    seen: list[tuple[str, str | None]] = []

    def guard(data: FileSave) -> Block | None:
        return Block("no .env files") if data.path.name == ".env" else None

    session.hooks.add(FILE_PRE_SAVE, guard)
    session.hooks.add(FILE_POST_SAVE, lambda d: seen.append((d.path.name, d.previous)))
    [blocked] = list(session.execute(f"{F}save .env\nKEY=1\n{F}\n"))
    assert blocked.content == "Not written: no .env files" and blocked.failed
    assert not (workspace / ".env").exists()
    list(session.execute(f"{F}save ok.txt\nfine\n{F}\n"))
    assert seen == [("ok.txt", None)]


def test_read_with_line_numbers_and_ranges(run: Run, workspace: Path) -> None:
    (workspace / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 13)))
    [whole] = run(f"{F}read f.txt\n{F}\n")
    assert whole.content.startswith("f.txt (lines 1-12 of 12):\n 1  line 1\n")
    [part] = run(f"{F}read f.txt 10 11\n{F}\n")
    assert part.content == "f.txt (lines 10-11 of 12):\n10  line 10\n11  line 11"
    [beyond] = run(f"{F}read f.txt 50\n{F}\n")
    assert "has 12 lines" in beyond.content


def test_read_binary_missing_and_limits(run: Run, workspace: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    [binary] = run(f"{F}read blob.bin\n{F}\n")
    assert "binary file (3 bytes)" in binary.content
    [missing] = run(f"{F}read nope.txt\n{F}\n")
    assert "does not exist" in missing.content
    from fencecall.tools.builtin import read

    monkeypatch.setattr(read, "MAX_LINES", 5)
    (workspace / "long.txt").write_text("x\n" * 20)
    [long] = run(f"{F}read long.txt\n{F}\n")
    assert "(lines 1-5 of 20)" in long.content
    assert long.content.endswith(f"[15 more lines; read on with:]\n{F}read long.txt 6\n\n{F}")
    monkeypatch.setattr(read, "MAX_BYTES", 10)
    [huge] = run(f"{F}read long.txt\n{F}\n")
    assert "over the 10-byte limit" in huge.content


def _numbered(workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("".join(f"b{i}\n" for i in range(1, 6)))


def test_read_takes_one_path_per_line_in_the_block(run: Run, workspace: Path) -> None:
    _numbered(workspace)
    [langtag] = run(f"{F}read a.txt b.txt\n{F}\n")
    [lines] = run(f"{F}read\na.txt\n\n  b.txt  \n{F}\n")
    assert lines.status is None and lines.content == langtag.content
    assert lines.content.startswith("a.txt (lines 1-1 of 1):\n1  alpha\n\nb.txt (lines 1-5 of 5)")


def test_each_line_of_the_block_takes_its_own_range(run: Run, workspace: Path) -> None:
    _numbered(workspace)
    (workspace / "my notes.md").write_text("note\n")
    [result] = run(f"{F}read\nb.txt 2 3\nmy notes.md\na.txt\n{F}\n")
    assert result.content == ("b.txt (lines 2-3 of 5):\n2  b2\n3  b3\n\n"
                              "my notes.md (lines 1-1 of 1):\n1  note\n\n"
                              "a.txt (lines 1-1 of 1):\n1  alpha")


def test_the_langtag_path_is_read_before_the_blocks_lines(run: Run, workspace: Path) -> None:
    _numbered(workspace)
    [result] = run(f"{F}read b.txt 4\na.txt\n{F}\n")
    assert result.content == ("b.txt (lines 4-5 of 5):\n4  b4\n5  b5\n\n"
                              "a.txt (lines 1-1 of 1):\n1  alpha")


def test_a_missing_path_in_the_block_hides_no_other(run: Run, workspace: Path) -> None:
    _numbered(workspace)
    [result] = run(f"{F}read\na.txt\nnope.txt\nb.txt 1 1\n{F}\n")
    assert result.status is None
    assert result.content == ("a.txt (lines 1-1 of 1):\n1  alpha\n\n"
                              "read: nope.txt does not exist.\n\n"
                              "b.txt (lines 1-1 of 5):\n1  b1")
    [empty] = run(f"{F}read\n\n{F}\n")
    assert empty.status is Status.ERROR and "no path given" in empty.content


def test_a_json_path_holding_lines_is_read_line_by_line(session: Session,
                                                        workspace: Path) -> None:
    _numbered(workspace)
    [result] = session.execute('@read(c1): {"path": "b.txt 2 3\\na.txt"}', "tool")
    assert result.content == ("b.txt (lines 2-3 of 5):\n2  b2\n3  b3\n\n"
                              "a.txt (lines 1-1 of 1):\n1  alpha")


def test_a_path_naming_the_workspace_itself_leaves_nothing_beside_it(
        workspace: Path, run: Run) -> None:
    (workspace / "here").symlink_to(".")
    before = sorted(workspace.parent.iterdir())
    with locate("here", [workspace]) as place, pytest.raises(IsADirectoryError):
        file_io.atomic_write(place, "x\n")
    [result] = run(f"{F}save here\nx\n{F}\n")
    assert result.status is Status.ERROR
    assert sorted(workspace.parent.iterdir()) == before


def test_a_long_file_name_is_saved(run: Run, workspace: Path) -> None:
    name = "n" * 250 + ".txt"
    [result] = run(f"{F}save {name}\nlong\n{F}\n")
    assert result.status is None, result.content
    assert (workspace / name).read_text() == "long\n"
