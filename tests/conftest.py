"""Fixtures shared by every test folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from fencecall.tools import Toolchain

from .sample_tools import CATALOGUE


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty folder for tools to work in."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


@pytest.fixture
def toolchain() -> Toolchain:
    """The sample tools (echo, write, add, boom…), as a session would load them."""
    return Toolchain.build(catalogue=CATALOGUE)
