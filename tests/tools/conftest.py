"""The tool tests' runner of a reply, over the shared ``session`` fixture (all built-in tools,
in a temporary workspace)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fencecall.execution import Session
from fencecall.message import Message

Run = Callable[[str], list[Message]]


@pytest.fixture
def run(session: Session) -> Run:
    """Execute a model reply written in markdown; return the result messages."""
    return lambda reply: list(session.execute(reply))
