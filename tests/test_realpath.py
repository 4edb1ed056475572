"""``real_path`` answers as ``Path.resolve`` does, through links, for paths that exist and
paths that do not; ``inside`` and ``relative_text`` as ``Path.is_relative_to`` and
``relative_to`` do."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fencecall.realpath import inside, real_path, relative_text


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    (tmp_path / "relative").symlink_to("a/b")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    return tmp_path


@pytest.mark.parametrize("name", [
    "a", "a/b/file", "link", "link/b", "link/b/file", "relative", "relative/file", "a/../a/b",
    "missing", "link/missing/deeper", "dangling", "a/b/file/not-a-folder", "."])
def test_as_resolve_does(tree: Path, name: str) -> None:
    assert real_path(tree / name) == (tree / name).resolve()


def test_a_relative_path_is_made_absolute(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree / "link")
    assert real_path(Path("b")) == tree / "a" / "b"


def test_a_link_loop_is_what_resolve_makes_of_it(tree: Path) -> None:
    with pytest.raises((RuntimeError, OSError)):
        (tree / "loop").resolve(strict=True)
    try:
        expected: Path | type[BaseException] = (tree / "loop").resolve()
    except (RuntimeError, OSError) as err:
        expected = type(err)
    try:
        found: Path | type[BaseException] = real_path(tree / "loop")
    except (RuntimeError, OSError) as err:
        found = type(err)
    assert found == expected


def test_no_descriptor_is_left_open(tree: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        real_path(tree / "link" / "b")
        real_path(tree / "missing")
    assert len(os.listdir("/proc/self/fd")) == before


_PARTS = st.lists(st.sampled_from(["a", "b", "ab", "a.b", "..", "b-"]), max_size=4)


@given(_PARTS, _PARTS)
def test_inside_says_what_is_relative_to_says_for_normalised_paths(path: list[str],
                                                                   folder: list[str]) -> None:
    inner, outer = Path("/", *path), Path("/", *folder)
    assert inside(inner, outer) == inner.is_relative_to(outer)
    assert inside(inner, inner) and inside(inner, Path("/"))
    expected = str(inner.relative_to(outer)) if inner.is_relative_to(outer) else None
    assert relative_text(inner, outer) == expected
