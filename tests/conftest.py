"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fencecall.execution import Session
from fencecall.tools import Toolchain

from .sample_tools import CATALOGUE
from .support import tool_session


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "session(tools, **options): the tools and options of the test's "
        "``session`` fixture (see tests.support.tool_session)")


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


@pytest.fixture
def session(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Session]:
    """A session in ``workspace`` of the built-in tools a ``session`` mark names, with its
    options (``pytestmark = pytest.mark.session(["shell"], sandbox="off")``); all the
    built-in tools, with the session's defaults, without one. It confirms every call."""
    mark = request.node.get_closest_marker("session")
    args, options = (mark.args, mark.kwargs) if mark is not None else ((), {})
    with tool_session(workspace, *args, **options) as made:
        yield made
