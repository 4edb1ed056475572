"""Fixtures shared by every test folder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty folder for tools to work in."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder
