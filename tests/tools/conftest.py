"""A session with the built-in tools, working in a temporary workspace."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fencecall.execution import Session
from fencecall.message import Message

from ..support import tool_session

Run = Callable[[str], list[Message]]


@pytest.fixture
def session(workspace: Path) -> Iterator[Session]:
    with tool_session(workspace) as session:
        yield session


@pytest.fixture
def run(session: Session) -> Run:
    """Execute a model reply written in markdown; return the result messages."""
    return lambda reply: list(session.execute(reply))
