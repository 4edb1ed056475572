"""Autonomous runs in-process (scripted provider): a reply that is neither a call nor an
answer (``TH``, a ``THOUGHT:`` cut short) gets a reminder instead of ending the task, and
only a call of the complete tool ends it done."""

from __future__ import annotations

from pathlib import Path

import pytest

from fencecall.agent import Agent, AgentSettings, Conversation, Outcome, RunResult
from fencecall.agent.stats import collect
from fencecall.execution import Session, auto_no
from fencecall.message import CannotRun, Message, Nudge
from fencecall.providers import NativeCall, ScriptedProvider, ScriptedReply
from fencecall.tools import Toolchain

from ..support import F

NON_ANSWERS = ("TH", "THOUGHT: `")
SHELL = f"{F}shell\necho hello\n{F}\n"
COMPLETE = f"{F}complete\nPrinted hello with the shell.\n{F}\n"

pytestmark = pytest.mark.session(["shell", "complete"], sandbox="off")


def run(session: Session, tmp_path: Path, *replies: str | ScriptedReply,
        **options: object) -> tuple[RunResult, ScriptedProvider, Agent]:
    provider = ScriptedProvider(list(replies))
    agent = Agent(provider, "m", session, Conversation.create(tmp_path, "auto"),
                  AgentSettings(**options))  # type: ignore[arg-type]
    return agent.run("say hello with the shell"), provider, agent


def reminders(messages: tuple[Message, ...] | list[Message]) -> list[Message]:
    return [m for m in messages if m.note is Nudge.REMINDER]


def test_non_answers_get_reminders_and_complete_ends_the_run(session: Session,
                                                             tmp_path: Path) -> None:
    result, provider, _ = run(session, tmp_path, *NON_ANSWERS, SHELL, COMPLETE,
                              autonomous=True)
    assert result.outcome is Outcome.DONE
    assert result.answer == "Printed hello with the shell."
    assert len(provider.requests) == 4
    said = reminders(result.messages)
    assert len(said) == 2
    assert all(m.role == "system" and m.status is None and m.call is None for m in said)
    assert "did not call complete" in said[0].content
    assert f"{F}complete\nA short summary of what was done.\n{F}" in said[0].content
    shell_result = next(m for m in result.messages if m.tool == "shell")
    assert "hello" in shell_result.content
    last = result.messages[-1]
    assert (last.tool, last.completes, last.content) == (
        "complete", True, "Printed hello with the shell.")


def test_without_the_mode_the_first_non_answer_ends_the_run(session: Session,
                                                            tmp_path: Path) -> None:
    """The same replies: ``TH`` is taken as the answer, nothing after it is asked for."""
    plain, asked, _ = run(session, tmp_path, *NON_ANSWERS, SHELL, COMPLETE)
    assert (plain.outcome, plain.answer, len(asked.requests)) == (Outcome.DONE, "TH", 1)
    assert reminders(plain.messages) == []
    autonomous, asked, _ = run(session, tmp_path / "again", *NON_ANSWERS, SHELL, COMPLETE,
                               autonomous=True)
    assert (autonomous.outcome, autonomous.answer, len(asked.requests)) == (
        Outcome.DONE, "Printed hello with the shell.", 4)


def test_reminders_are_capped_by_the_feedback_limit(session: Session, tmp_path: Path) -> None:
    result, provider, _ = run(session, tmp_path, *(["TH"] * 6), autonomous=True,
                              feedback_limit=3)
    assert result.outcome is Outcome.GAVE_UP
    assert len(provider.requests) == 3
    assert len(reminders(result.messages)) == 3
    last = result.messages[-1]
    assert last.ending is Outcome.GAVE_UP
    assert "3 replies in a row ran no tool and did not call complete" in last.content
    assert result.answer == "TH"


def test_a_call_in_between_resets_the_count(session: Session, tmp_path: Path) -> None:
    result, _, _ = run(session, tmp_path, "TH", "TH", SHELL, "TH", "TH", COMPLETE,
                       autonomous=True, feedback_limit=3)
    assert result.outcome is Outcome.DONE
    assert len(reminders(result.messages)) == 4


def test_with_reminders_off_a_non_answer_gives_up(session: Session, tmp_path: Path) -> None:
    result, provider, _ = run(session, tmp_path, "TH", COMPLETE, autonomous=True,
                              feedback_limit=0)
    assert (result.outcome, len(provider.requests)) == (Outcome.GAVE_UP, 1)
    assert reminders(result.messages) == []
    assert "reminders are off" in result.messages[-1].content


def test_a_near_miss_gets_its_feedback_not_a_reminder(session: Session,
                                                      tmp_path: Path) -> None:
    result, _, _ = run(session, tmp_path, f"{F}bash-session\necho hi\n{F}\n", COMPLETE,
                       autonomous=True)
    assert result.outcome is Outcome.DONE
    assert reminders(result.messages) == []
    assert any(isinstance(m.note, CannotRun) and m.note.near_misses
               for m in result.messages)


def test_the_step_limit_still_ends_an_autonomous_run(session: Session, tmp_path: Path) -> None:
    result, _, _ = run(session, tmp_path, SHELL, SHELL, SHELL, autonomous=True, max_steps=2)
    assert result.outcome is Outcome.STEP_LIMIT


def test_the_prompt_teaches_complete_only_in_the_mode(session: Session,
                                                      tmp_path: Path) -> None:
    _, autonomous, _ = run(session, tmp_path, COMPLETE, autonomous=True)
    _, plain, _ = run(session, tmp_path / "plain", "Hello.")
    prompt = autonomous.requests[0].system
    assert "does not end the task" in prompt and f"{F}complete\n" in prompt
    assert "answer without a tool call" not in prompt
    assert "answer without a tool call" in plain.requests[0].system
    assert "does not end the task" not in plain.requests[0].system


def test_in_xml_the_reminder_shows_the_xml_form(workspace: Path, tmp_path: Path) -> None:
    with Session(Toolchain.build(["shell", "complete"]), workspace=workspace,
                 confirm=auto_no, sandbox="off") as session:
        result, _, _ = run(session, tmp_path, "TH",
                           "<tool-use><complete>Nothing to do.</complete></tool-use>",
                           autonomous=True, fmt="xml")
    [said] = reminders(result.messages)
    assert "<complete>\nA short summary of what was done.\n</complete>" in said.content
    assert (result.outcome, result.answer) == (Outcome.DONE, "Nothing to do.")


def test_native_function_calling_a_reply_without_a_call_is_a_non_answer(
        session: Session, tmp_path: Path) -> None:
    done = ScriptedReply("", calls=(NativeCall("c1", "complete", '{"summary": "Said hi."}'),))
    result, provider, _ = run(session, tmp_path, "TH", done, autonomous=True, fmt="tool")
    assert (result.outcome, result.answer, len(provider.requests)) == (
        Outcome.DONE, "Said hi.", 2)
    [said] = reminders(result.messages)
    assert "call the complete function" in said.content
    assert any(tool["name"] == "complete" for tool in provider.requests[0].tools)


def test_complete_runs_without_asking(workspace: Path, tmp_path: Path) -> None:
    """Nobody is asked (``auto_no`` declines whatever needs a yes): complete still runs."""
    with Session(Toolchain.build(["shell", "complete"]), workspace=workspace,
                 confirm=auto_no, sandbox="off") as session:
        result, _, _ = run(session, tmp_path, f"{F}complete\n{F}\n", autonomous=True)
    assert result.outcome is Outcome.DONE
    assert result.answer == "The task is complete (no summary was given)."


def test_complete_named_in_the_tools_ends_a_plain_run_too(session: Session,
                                                          tmp_path: Path) -> None:
    result, provider, _ = run(session, tmp_path, SHELL, COMPLETE, "never asked for")
    assert (result.outcome, result.answer, len(provider.requests)) == (
        Outcome.DONE, "Printed hello with the shell.", 2)


def test_an_autonomous_agent_needs_the_complete_tool(workspace: Path, tmp_path: Path) -> None:
    with Session(Toolchain.build(["shell"]), workspace=workspace, sandbox="off") as session, \
            pytest.raises(ValueError, match="complete"):
        Agent(ScriptedProvider([]), "m", session, settings=AgentSettings(autonomous=True))


def test_complete_is_off_by_default_and_loads_when_named() -> None:
    assert "complete" not in Toolchain.build().names()
    assert "complete" not in Toolchain.build(["*"]).names()
    assert Toolchain.build(["shell", "complete"]).names() == ["shell", "jobs", "complete"]


def test_reminders_are_not_counted_as_tool_calls(session: Session, tmp_path: Path) -> None:
    result, _, _ = run(session, tmp_path, "TH", SHELL, COMPLETE, autonomous=True)
    stats = collect([result.messages])
    assert {name: entry.calls for name, entry in stats.tools.items()} == {
        "shell": 1, "complete": 1}
