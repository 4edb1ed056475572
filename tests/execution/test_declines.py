"""A "no" that says more than False: a reason the model is told, and a no that ends the turn
(the later calls of the reply are not run, and the agent does not ask the model again)."""

from __future__ import annotations

from pathlib import Path

from fencecall.agent import Outcome
from fencecall.execution import Session
from fencecall.message import Status
from fencecall.tools import ConfirmFunc, ConfirmRequest, Decline, Toolchain

from ..support import F, scripted_agent

TWO_WRITES = f"{F}write a.txt\none\n{F}\n{F}write b.txt\ntwo\n{F}\n"


def answering(*answers: bool | Decline) -> tuple[list[str], ConfirmFunc]:
    """A confirm function giving ``answers`` in turn, and the tools it was asked about."""
    asked: list[str] = []
    given = list(answers)

    def confirm(request: ConfirmRequest) -> bool | Decline:
        asked.append(request.call.argline)
        return given.pop(0)

    return asked, confirm


def test_a_decline_is_falsy_as_every_no() -> None:
    assert not Decline() and not Decline("why", ends_turn=True)


def test_the_reason_of_a_decline_reaches_the_model_and_the_next_call_is_still_asked(
        toolchain: Toolchain, tmp_path: Path) -> None:
    asked, confirm = answering(Decline("use b.txt only"), True)
    session = Session(toolchain, workspace=tmp_path, confirm=confirm)
    first, second = session.execute(TWO_WRITES, "markdown")
    assert first.content == ("The user declined the write call, so it did not run. They "
                             "said: use b.txt only")
    assert first.status is Status.DECLINED and first.ending is None
    assert second.content == "wrote b.txt" and asked == ["a.txt", "b.txt"]


def test_a_no_that_ends_the_turn_answers_the_later_calls_unasked(
        toolchain: Toolchain, tmp_path: Path) -> None:
    asked, confirm = answering(Decline(ends_turn=True))
    session = Session(toolchain, workspace=tmp_path, confirm=confirm)
    first, second = session.execute(TWO_WRITES, "markdown")
    assert first.content == ("The user declined the write call, so it did not run. The turn "
                             "ends here: they will say what to do instead.")
    assert first.status is Status.DECLINED and first.ending is Outcome.INTERRUPTED
    assert second.content == "Not run: the user declined an earlier call and ended the turn."
    assert second.status is Status.DECLINED and asked == ["a.txt"]
    assert not (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()


def test_a_plain_false_keeps_its_result(toolchain: Toolchain, tmp_path: Path) -> None:
    _, confirm = answering(False, False)
    session = Session(toolchain, workspace=tmp_path, confirm=confirm)
    results = session.execute(TWO_WRITES, "markdown")
    assert [m.content for m in results] == [
        "The write call was not confirmed, so it did not run."] * 2
    assert all(m.ending is None for m in results)


def test_the_agent_stops_after_a_no_that_ends_the_turn(tmp_path: Path) -> None:
    _, confirm = answering(Decline(ends_turn=True))
    with Session(Toolchain.build(["save"]), workspace=tmp_path / "ws",
                 confirm=confirm) as session:
        agent, outcome = scripted_agent(session, tmp_path / "logs",
                                        f"{F}save a.txt\none\n{F}\n", "Asked again at once.")
    assert outcome is Outcome.INTERRUPTED
    last = agent.conversation.messages[-1]
    assert last.status is Status.DECLINED and last.ending is Outcome.INTERRUPTED
    assert all(m.content != "Asked again at once." for m in agent.conversation.messages)


def test_the_agent_goes_on_after_a_no_with_a_reason(tmp_path: Path) -> None:
    _, confirm = answering(Decline("name it b.txt"), True)
    with Session(Toolchain.build(["save"]), workspace=tmp_path / "ws",
                 confirm=confirm) as session:
        agent, outcome = scripted_agent(session, tmp_path / "logs",
                                        f"{F}save a.txt\none\n{F}\n",
                                        f"{F}save b.txt\none\n{F}\n", "Saved b.txt.")
    assert outcome is Outcome.DONE
    assert (tmp_path / "ws" / "b.txt").exists() and not (tmp_path / "ws" / "a.txt").exists()
    said = [m.content for m in agent.conversation.messages if m.status is Status.DECLINED]
    assert said == ["The user declined the save call, so it did not run. They said: name it "
                    "b.txt"]
