"""The interactive chat, driven once in a real terminal (pexpect pty)."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect

from ..fakeserver import FakeModelServer, Reply
from .conftest import cli_env


def test_interactive_chat_with_confirmation_and_slash_commands(tmp_path: Path,
                                                               workspace: Path) -> None:
    replies = [Reply("I'll save it.\n\n```save note.txt\nhello from the chat\n```\n"),
               Reply("Saved the note."), Reply("Still here.")]
    with FakeModelServer(replies) as server:
        env = cli_env(tmp_path, server.openai_url, TERM="xterm", COLUMNS="200", LINES="50",
                      NO_COLOR="1", PROMPT_TOOLKIT_NO_CPR="1")
        child = pexpect.spawn(sys.executable, ["-m", "fencecall.cli.main", "--model", "local/m",
                                               "--name", "chat1", "--workspace", str(workspace)],
                              env=env, encoding="utf-8", timeout=30, dimensions=(50, 200))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("please write a note")
            child.expect(r"Run save\?.*\[y/N\]")
            child.sendline("y")
            child.expect("Created note.txt")
            child.expect("Saved the note.")
            child.sendline("/tools")
            child.expect("ipython")
            child.sendline("/undo 2")
            child.expect("Removed 2 message")
            child.sendline("/nosuch")
            child.expect("Unknown command /nosuch")
            child.sendline("/exit")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
    assert (workspace / "note.txt").read_text() == "hello from the chat\n"
    history = (tmp_path / "home" / "history").read_text()
    assert "please write a note" in history


def test_mcp_slash_command_shows_the_servers(tmp_path: Path, workspace: Path) -> None:
    with FakeModelServer([Reply("Hello.")]) as server:
        env = cli_env(tmp_path, server.openai_url, TERM="xterm", COLUMNS="200", LINES="50",
                      NO_COLOR="1", PROMPT_TOOLKIT_NO_CPR="1")
        child = pexpect.spawn(
            sys.executable, ["-m", "fencecall.cli.main", "--model", "local/m", "--workspace",
                             str(workspace), "--mcp",
                             f"time={sys.executable} -m mcp_server_time --local-timezone UTC"],
            env=env, encoding="utf-8", timeout=60, dimensions=(50, 200))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("/mcp")
            child.expect(r"mcp server time \(stdio: .*\): 2 tools \(listed from the server\)")
            child.sendline("/exit")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
