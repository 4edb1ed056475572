"""Helpers the test folders share, written once: the markdown fence, the marker for tests that
need bubblewrap, a session of named tools that says yes to every confirmation, an agent that
answers one prompt with scripted replies, and a time limit for parsers that must stay
linear."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypedDict, TypeVar, Unpack

import pytest

from fencecall.agent import Agent, AgentSettings, Conversation, Outcome
from fencecall.execution import Session, auto_yes
from fencecall.execution.permissions import Permissions
from fencecall.providers import ScriptedProvider, ScriptedReply
from fencecall.sandbox._bwrap import Sandbox, SandboxPolicy, sandbox_support
from fencecall.tools import ConfirmFunc, ResourceKey, Toolchain

F = "```"
"""A markdown fence, named so that replies written as f-strings stay readable."""

_SANDBOX = sandbox_support()
needs_bwrap = pytest.mark.skipif(not _SANDBOX.available,
                                 reason=f"bubblewrap sandbox unavailable: {_SANDBOX.reason}")
"""Skips a test (or a parameter) that runs commands in the bubblewrap sandbox where it cannot."""


class SessionOptions(TypedDict, total=False):
    """The :class:`Session` options tests set; those left out keep the session's defaults."""

    sandbox: Sandbox | SandboxPolicy | str
    network: bool
    extra_roots: Sequence[Path | str]
    secrets: Mapping[str, str] | None
    background_after: float | None
    max_jobs: int
    permissions: Permissions | None


def tool_session(workspace: Path, tools: Sequence[str] | None = None, *,
                 confirm: ConfirmFunc = auto_yes, **options: Unpack[SessionOptions]) -> Session:
    """A session of the built-in ``tools`` (all of them when None) in ``workspace``, confirming
    every call unless told otherwise, so a test runs tools without a prompt; use it in ``with``."""
    return Session(Toolchain.build(tools), workspace=workspace, confirm=confirm, **options)


R = TypeVar("R")


def made(session: Session, key: ResourceKey[R]) -> R:
    """The resource ``key`` the session's tools made already (the test fails where none was)."""
    def never() -> R:
        raise AssertionError(f"the session has no {key.name} yet")

    return session.resource(key, never)


def scripted_agent(session: Session, folder: Path, *replies: str,
                   settings: AgentSettings | None = None) -> tuple[Agent, Outcome]:
    """An agent whose model answers with ``replies`` in turn (a conversation logged in
    ``folder``), once it was sent one prompt; and how that ended."""
    provider = ScriptedProvider([ScriptedReply(text) for text in replies])
    agent = Agent(provider, "m", session, Conversation.create(folder, "scripted"), settings)
    return agent, agent.send("do it")


SECONDS_PER_MB = 150.0
"""How long one parse of hostile text may take a megabyte: twenty times the slowest measured
(the auto format on 20,000 fenced file blocks: 7.5 s/MB in plain Python on a busy two-core
machine), so that load never fails a test and a scan that is no longer linear does."""


@contextmanager
def in_linear_time(characters: int, what: str) -> Iterator[None]:
    """Fails when the body, reading ``characters`` of text, takes longer than a second plus
    :data:`SECONDS_PER_MB` a megabyte: a parser that is not linear in its input."""
    began = time.perf_counter()
    yield
    seconds = time.perf_counter() - began
    limit = 1.0 + SECONDS_PER_MB * characters / 1_000_000
    assert seconds < limit, f"{what}: {seconds:.1f} s for {characters:,} characters"
