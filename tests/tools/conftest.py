"""A session with the built-in tools, working in a temporary workspace."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fencecall.execution import Session, auto_yes
from fencecall.message import Message
from fencecall.tools import Toolchain

Run = Callable[[str], list[Message]]


@pytest.fixture
def session(workspace: Path) -> Iterator[Session]:
    with Session(Toolchain.build(), workspace=workspace, confirm=auto_yes) as session:
        yield session


@pytest.fixture
def run(session: Session) -> Run:
    """Execute a model reply written in markdown; return the result messages."""
    return lambda reply: list(session.execute(reply))
