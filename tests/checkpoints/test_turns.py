"""Checkpoints around an agent's turns: recorded before writing calls and at each turn's end,
and a turn gone back to, with and without the sandbox."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fencecall.agent import Agent, AgentSettings, Conversation
from fencecall.checkpoints import Checkpoints, recorded_workspace
from fencecall.execution import Session
from fencecall.providers import ScriptedProvider
from fencecall.providers._scripted import ScriptedReply

from ..support import F, needs_bwrap, tool_session

SANDBOXES = [pytest.param("off"), pytest.param("workspace-write", marks=needs_bwrap)]


def agent(session: Session, home: Path, *replies: str) -> Agent:
    provider = ScriptedProvider([ScriptedReply(text) for text in replies])
    return Agent(provider, "m", session, Conversation.create(home, "talk"),
                 AgentSettings(checkpoints=True))


def kept(session: Session) -> Checkpoints:
    assert session.checkpoints is not None
    return session.checkpoints


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_save_and_a_sed_are_undone_with_the_turns_messages(tmp_path: Path, workspace: Path,
                                                             sandbox: str) -> None:
    (workspace / "b.txt").write_bytes(b"old line\r\nkept\n")
    replies = [f"{F}save a.txt\nfirst\n{F}\n", f"{F}shell\nsed -i 's/old/new/' b.txt\n{F}\n",
               "Done.", f"{F}save a.txt\nsecond\n{F}\n", "Again."]
    with tool_session(workspace, ["save", "shell"], sandbox=sandbox) as session:
        talk = agent(session, tmp_path / "home", *replies)
        talk.send("one")
        assert (workspace / "b.txt").read_bytes() == b"new line\r\nkept\n"
        talk.send("two")
        checkpoints = kept(session)
        first, second = checkpoints.turns(talk.conversation.messages)
        assert first.before is not None and first.after is not None
        assert second.before == first.after  # nothing changed between them

        plan = checkpoints.plan(talk.conversation.messages, 1)
        assert [str(change) for change in plan.changes] == ["removed a.txt", "changed b.txt"]
        assert plan.edited == [] and plan.messages == len(talk.conversation.messages)
        assert checkpoints.apply(plan) == []
    assert sorted(path.name for path in workspace.iterdir()) == ["b.txt"]
    assert (workspace / "b.txt").read_bytes() == b"old line\r\nkept\n"


def test_a_read_only_call_records_nothing(tmp_path: Path, workspace: Path) -> None:
    with tool_session(workspace, ["read"], sandbox="off") as session:
        talk = agent(session, tmp_path / "home", f"{F}read x.txt\n{F}\n", "No file.")
        talk.send("read it")
        [turn] = kept(session).turns(talk.conversation.messages)
    assert turn.before is None and not (tmp_path / "home" / "conversations" / "talk"
                                        / "checkpoints" / "turns.jsonl").exists()


def test_a_hand_edit_since_the_turn_is_found_and_one_between_turns_too(
        tmp_path: Path, workspace: Path) -> None:
    replies = [f"{F}save a.txt\nby the model\n{F}\n", "Done.",
               f"{F}save b.txt\nby the model\n{F}\n", "Done."]
    with tool_session(workspace, ["save"], sandbox="off") as session:
        talk = agent(session, tmp_path / "home", *replies)
        talk.send("one")
        (workspace / "a.txt").write_text("by hand, between the turns")
        talk.send("two")
        (workspace / "b.txt").write_text("by hand, after the turn")
        checkpoints = kept(session)
        assert checkpoints.plan(talk.conversation.messages, 2).edited == ["b.txt"]
        assert checkpoints.plan(talk.conversation.messages, 1).edited == ["a.txt", "b.txt"]


def test_a_git_checkout_by_the_model_is_undone_and_git_is_not_touched(
        tmp_path: Path, workspace: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                       cwd=workspace, check=True, capture_output=True)

    (workspace / "f.txt").write_text("committed\n")
    git("init", "-q")
    git("add", "f.txt")
    git("commit", "-qm", "one")
    (workspace / "f.txt").write_text("work in progress\n")
    replies = [f"{F}shell\ngit checkout -- f.txt\n{F}\n", "Reverted."]
    with tool_session(workspace, ["shell"], sandbox="off") as session:
        talk = agent(session, tmp_path / "home", *replies)
        talk.send("throw my change away")
        assert (workspace / "f.txt").read_text() == "committed\n"
        git_files = {p: p.read_bytes() for p in (workspace / ".git").rglob("*") if p.is_file()}
        checkpoints = kept(session)
        plan = checkpoints.plan(talk.conversation.messages, 1)
        assert [str(change) for change in plan.changes] == ["changed f.txt"]
        checkpoints.apply(plan)
    assert (workspace / "f.txt").read_text() == "work in progress\n"
    assert {p: p.read_bytes() for p in (workspace / ".git").rglob("*") if p.is_file()} \
        == git_files


def test_a_file_not_kept_is_said_once_and_left_by_the_rewind(tmp_path: Path,
                                                             workspace: Path) -> None:
    (workspace / "big.bin").write_bytes(b"x" * 300)
    replies = [f"{F}shell\necho y > big.bin && echo new > small.txt\n{F}\n",
               f"{F}shell\ntrue\n{F}\n", "Done."]
    with tool_session(workspace, ["shell"], sandbox="off") as session:
        session.checkpoints = Checkpoints(tmp_path / "kept", workspace, max_file=200)
        session.checkpoints.install(session.hooks)
        talk = agent(session, tmp_path / "home", *replies)
        talk.send("change them")
        notes = [m.content for m in talk.conversation.messages if m.content.startswith("Not")]
        assert notes == ["Not kept in the workspace's checkpoint, so an undo leaves them as "
                         "they are: big.bin (300 bytes, over the 200 bytes a file may have)."]
        plan = session.checkpoints.plan(talk.conversation.messages, 1)
        assert plan.not_kept == {"big.bin": "300 bytes, over the 200 bytes a file may have"}
        assert [str(change) for change in plan.changes] == ["removed small.txt"]
        session.checkpoints.apply(plan)
    assert (workspace / "big.bin").read_bytes() == b"y\n"
    assert not (workspace / "small.txt").exists()


def test_a_workspace_too_big_gets_no_checkpoints_and_says_so(tmp_path: Path,
                                                             workspace: Path) -> None:
    for index in range(5):
        (workspace / f"f{index}").write_text("")
    with tool_session(workspace, ["shell"], sandbox="off") as session:
        session.checkpoints = Checkpoints(tmp_path / "kept", workspace, max_entries=3)
        session.checkpoints.install(session.hooks)
        talk = agent(session, tmp_path / "home", f"{F}shell\ntouch g\n{F}\n",
                     f"{F}shell\ntouch h\n{F}\n", "Done.")
        talk.send("touch")
        said = [m.content for m in talk.conversation.messages if "checkpoints" in m.content]
        [turn] = session.checkpoints.turns(talk.conversation.messages)
    assert said == [f"No checkpoints of the workspace are kept from now on ({workspace} "
                    "holds more than 3 files and folders (not ignored)); /undo and /rewind "
                    "will not restore files."]
    assert turn.before is None and (workspace / "h").exists()


def test_checkpoints_of_another_workspace_are_never_put_back(tmp_path: Path,
                                                             workspace: Path) -> None:
    """A conversation resumed in another folder: the turns recorded in the first are not
    restored into it, where they would remove everything they did not record."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("not the first workspace's")
    with tool_session(workspace, ["save"], sandbox="off") as session:
        talk = agent(session, tmp_path / "home", f"{F}save a.txt\nx\n{F}\n", "Done.")
        talk.send("save")
        folder = kept(session).folder
    assert recorded_workspace(folder) == workspace.resolve()
    [turn] = Checkpoints(folder, elsewhere).turns(talk.conversation.messages)
    assert turn.before is None
    plan = Checkpoints(folder, elsewhere).plan(talk.conversation.messages, 1)
    assert plan.changes == [] and (elsewhere / "precious.txt").exists()
