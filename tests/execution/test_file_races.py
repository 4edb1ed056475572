"""File tools against a symlink swap: a concurrent process never sends a read or a write
outside the roots.

The attack is real: a shell call of the session under attack starts ``swapper.py`` in the
background (inside the sandbox, or not), which exchanges a folder of the workspace with a
symlink to a folder outside, with ``renameat2(RENAME_EXCHANGE)``, as fast as it can. Meanwhile
the file tools are called on a path through that folder, over and over. Each call may fail
(honestly, with an error) but none may read, write or leave a file outside.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fencecall.execution import Session
from fencecall.message import Message, Status
from fencecall.sandbox._bwrap import SandboxPolicy

from ..support import F, needs_bwrap, tool_session

SWAP_SECONDS = 3.0
SWAPPER = Path(__file__).with_name("swapper.py")
INSIDE = "line\n"
OUTSIDE = "line\nSECRET-OUTSIDE\n"
CALLS = {
    "save": f"{F}save d/x.txt\nsaved\n{F}\n",
    "save-new": f"{F}save d/new/made.txt\nsaved\n{F}\n",
    "append": f"{F}append d/x.txt\nappended\n{F}\n",
    "patch": f"{F}patch d/x.txt\n<<<<<<< ORIGINAL\nline\n=======\npatched\n>>>>>>> UPDATED\n{F}\n",
    "read": f"{F}read d/x.txt\n{F}\n",
}
POLICIES = [
    pytest.param(SandboxPolicy.WORKSPACE_WRITE, marks=needs_bwrap, id="sandboxed"),
    pytest.param(SandboxPolicy.OFF, id="unsandboxed"),
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "x.txt").write_text(OUTSIDE)
    return folder


@pytest.fixture
def attacked(workspace: Path, outside: Path) -> Path:
    """A workspace with a folder ``d`` and a link ``l`` to the outside, ready to be swapped."""
    (workspace / "d").mkdir()
    (workspace / "d" / "x.txt").write_text(INSIDE)
    (workspace / "l").symlink_to(outside)
    # the model writes its swapper into the workspace: the sandbox sees nothing of tests/
    shutil.copy(SWAPPER, workspace / SWAPPER.name)
    return workspace


@pytest.fixture(params=POLICIES)
def session(request: pytest.FixtureRequest, attacked: Path) -> Iterator[Session]:
    tools = ["shell", "save", "append", "patch", "read"]
    with tool_session(attacked, tools, sandbox=request.param) as session:
        yield session


def under_swap(session: Session, workspace: Path, reply: str) -> list[Message]:
    """Run ``reply`` again and again while the swapper runs; every result."""
    report = workspace / "swaps"
    start = (f"{F}shell\ncd {workspace} && {sys.executable} {SWAPPER.name} d l {SWAP_SECONDS} "
             f"{report} >/dev/null 2>&1 &\n{F}\n")
    [started] = list(session.execute(start))
    assert started.status is None, started.content
    results: list[Message] = []
    deadline = time.monotonic() + SWAP_SECONDS + 30
    while not report.exists() and time.monotonic() < deadline:
        results.extend(session.execute(reply))
    assert report.exists(), "the swapper never finished"
    assert int(report.read_text()) > 1000, "the swap must really race the calls"
    return results


@pytest.mark.parametrize("tool", sorted(CALLS))
def test_a_swapped_folder_never_leads_a_file_tool_outside(tool: str, session: Session,
                                                         attacked: Path, outside: Path) -> None:
    results = under_swap(session, attacked, CALLS[tool])
    assert sorted(p.name for p in outside.iterdir()) == ["x.txt"], "a file was left outside"
    assert (outside / "x.txt").read_text() == OUTSIDE, "the outside file was changed"
    assert all("SECRET-OUTSIDE" not in r.content for r in results), "an outside file was read"
    assert (attacked / "d").is_dir() and not (attacked / "d").is_symlink()
    succeeded = [r for r in results if r.status is None]
    failed = [r for r in results if r.status is not None]
    assert all(r.status is Status.ERROR for r in failed), failed[0].content
    assert succeeded, "no call got through while the folder was in place"
    if tool == "read":
        assert all("line" in r.content for r in succeeded)
    elif tool == "save-new":
        assert (attacked / "d/new/made.txt").read_text() == "saved\n"
    else:
        assert (attacked / "d/x.txt").read_text() != INSIDE
