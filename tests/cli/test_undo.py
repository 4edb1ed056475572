"""Undo and rewind in a real terminal (pexpect pty) and on the command line, against the
local scripted model server: files come back byte for byte, and a hand edit is asked about
(the chat) or refused (the command line)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pexpect
from rich.console import Console

from fencecall.agent import Agent, AgentSettings, Conversation
from fencecall.cli.display import Display
from fencecall.cli.slash import run_slash
from fencecall.providers import ScriptedProvider
from fencecall.providers._scripted import ScriptedReply

from ..fakeserver import FakeModelServer, Reply
from ..support import F, tool_session
from .conftest import cli_env
from .test_interactive import chat

B_BEFORE = b"alpha\r\nbeta \xff\n\tno newline at the end"
A_BEFORE = b"original a\n"


def replies_of_a_turn() -> list[Reply]:
    """A save of a.txt, then a ``sed -i`` of b.txt, then the answer."""
    return [Reply(f"{F}save a.txt\nwritten by the model\n{F}\n"),
            Reply(f"{F}shell\nsed -i 's/beta/BETA/' b.txt && chmod +x b.txt\n{F}\n"),
            Reply("Both changed.")]


def prepare(workspace: Path) -> None:
    (workspace / "a.txt").write_bytes(A_BEFORE)
    (workspace / "b.txt").write_bytes(B_BEFORE)
    (workspace / "b.txt").chmod(0o640)


def test_undo_in_the_chat_puts_back_a_save_and_a_sed_byte_for_byte(tmp_path: Path,
                                                                   workspace: Path) -> None:
    prepare(workspace)
    with FakeModelServer([*replies_of_a_turn(), Reply("Still here.")]) as server:
        child = chat(tmp_path, server.openai_url, "--name", "undoing", "-y", "--workspace",
                     str(workspace))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("change both files")
            child.expect("Both changed.")
            assert (workspace / "b.txt").read_bytes() != B_BEFORE
            child.sendline("/undo")
            child.expect("Went back to before turn 1: removed 6 messages.")
            child.expect("Files put back as they were:")
            child.expect(r"changed a\.txt\s+changed b\.txt")
            child.sendline("/undo")
            child.expect("Nothing was undone: you asked to undo 1 turn, but there are none yet")
            child.sendline("/exit")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
    assert (workspace / "a.txt").read_bytes() == A_BEFORE
    assert (workspace / "b.txt").read_bytes() == B_BEFORE
    assert (workspace / "b.txt").stat().st_mode & 0o777 == 0o640


def test_rewind_in_the_chat_asks_before_overwriting_a_hand_edit(tmp_path: Path,
                                                                workspace: Path) -> None:
    prepare(workspace)
    with FakeModelServer([*replies_of_a_turn()]) as server:
        child = chat(tmp_path, server.openai_url, "-y", "--workspace", str(workspace))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("change both files")
            child.expect("Both changed.")
            child.sendline("/help")  # answered once the turn has ended and was recorded
            child.expect(r"/rewind\s+list the turns and go back to before one")
            (workspace / "a.txt").write_text("edited by hand\n")
            child.sendline("/rewind")
            child.expect(r"1\. change both files  \(files recorded\)")
            child.expect(r"Go back to before which turn\? \(1-1, Enter: none\)")
            child.sendline("1")
            child.expect(r"a\.txt changed since fencecall recorded it .*\[y/N\]")
            child.sendline("n")
            child.expect("Nothing was changed: a.txt changed since fencecall recorded them.")
            child.sendline("/rewind 1")
            child.expect(r"\[y/N\]")
            child.sendline("y")
            child.expect(r"changed a\.txt\s+changed b\.txt")
            child.sendline("/exit")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
    assert (workspace / "a.txt").read_bytes() == A_BEFORE
    assert (workspace / "b.txt").read_bytes() == B_BEFORE


def test_fencecall_rewind_lists_refuses_a_hand_edit_and_forces(tmp_path: Path,
                                                               workspace: Path) -> None:
    prepare(workspace)
    with FakeModelServer(replies_of_a_turn()) as server:
        env = cli_env(tmp_path, server.openai_url)

        def fencecall(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "fencecall.cli.main", *args],
                                  env=env, capture_output=True, text=True, timeout=120)

        ran = fencecall("--model", "local/m", "--name", "done", "-y", "--workspace",
                        str(workspace), "change both")
        assert ran.returncode == 0, ran.stderr
    listed = fencecall("rewind", "done")
    assert listed.stdout.splitlines() == ["  1. change both  (files recorded)"]
    (workspace / "b.txt").write_bytes(b"by hand")
    refused = fencecall("rewind", "done", "1")
    assert refused.returncode == 2
    assert "not rewound: b.txt changed since fencecall recorded them" in refused.stderr
    assert (workspace / "b.txt").read_bytes() == b"by hand"
    forced = fencecall("rewind", "done", "1", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "changed a.txt" in forced.stdout and "changed b.txt" in forced.stdout
    assert (workspace / "a.txt").read_bytes() == A_BEFORE
    assert (workspace / "b.txt").read_bytes() == B_BEFORE
    assert "has no turns" in fencecall("rewind", "done").stdout


def test_without_a_terminal_nothing_is_asked_and_a_hand_edit_is_kept(
        tmp_path: Path, workspace: Path) -> None:
    """As in an editor's session, whose input is the protocol: /rewind lists the turns and
    says how to choose one, and a file changed by hand is not overwritten."""
    prepare(workspace)
    with tool_session(workspace, ["save", "shell"], sandbox="off") as session:
        provider = ScriptedProvider([ScriptedReply(reply.text) for reply in replies_of_a_turn()])
        agent = Agent(provider, "m", session, Conversation.create(tmp_path / "home", "ed"),
                      AgentSettings(checkpoints=True))
        agent.send("change both files")
        (workspace / "a.txt").write_text("edited by hand\n")
        output = io.StringIO()
        display = Display(Console(file=output, width=100, color_system=None))
        run_slash("/rewind", agent, display)
        run_slash("/undo", agent, display)
    assert output.getvalue().splitlines() == [
        "  1. change both files  (files recorded)",
        "/rewind TURN goes back to before that turn.",
        "Nothing was changed: a.txt changed since fencecall recorded them."]
    assert (workspace / "a.txt").read_text() == "edited by hand\n"
