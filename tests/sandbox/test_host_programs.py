"""Host programs are never found in a folder the model can write."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fencecall.sandbox.host_programs import SYSTEM_PATH, host_program


def plant(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text("#!/bin/sh\ntouch planted-ran\n")
    program.chmod(0o755)
    return program


def test_a_planted_program_on_path_is_never_the_host_program(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plant(workspace / ".venv" / "bin", "bash")
    plant(workspace, "only-planted")
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("PATH", os.pathsep.join([".", "", str(workspace / ".venv" / "bin"),
                                                "/usr/bin", "/bin"]))
    assert host_program("bash", [workspace]) == shutil.which("bash", path=SYSTEM_PATH)
    assert host_program("only-planted", [workspace]) is None
    assert host_program("only-planted") is None  # relative entries never count
    mine = plant(tmp_path / "tools", "my-tool")  # the user's own folder, outside the roots
    monkeypatch.setenv("PATH", f"{mine.parent}:/usr/bin")
    assert host_program("my-tool", [workspace]) == str(mine)
