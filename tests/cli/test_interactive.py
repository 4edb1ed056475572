"""The interactive chat, driven once in a real terminal (pexpect pty)."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect

from ..fakeserver import FakeModelServer, Reply
from ..support import F
from .conftest import cli_env


def chat(tmp_path: Path, url: str, *flags: str, timeout: float = 30) -> pexpect.spawn:
    """The interactive chat against the server at ``url``, in a 50x200 pty."""
    env = cli_env(tmp_path, url, TERM="xterm", COLUMNS="200", LINES="50", NO_COLOR="1",
                  PROMPT_TOOLKIT_NO_CPR="1")
    return pexpect.spawn(sys.executable, ["-m", "fencecall.cli.main", "--model", "local/m",
                                          *flags], env=env, encoding="utf-8", timeout=timeout,
                         dimensions=(50, 200))


def test_interactive_chat_with_confirmation_and_slash_commands(tmp_path: Path,
                                                               workspace: Path) -> None:
    replies = [Reply("I'll save it.\n\n```save note.txt\nhello from the chat\n```\n"),
               Reply("Saved the note."), Reply("Still here.")]
    with FakeModelServer(replies) as server:
        child = chat(tmp_path, server.openai_url, "--name", "chat1", "--workspace",
                     str(workspace))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("please write a note")
            child.expect(r"Run save\?.*\[t\]ell the model:")
            child.sendline("y")
            child.expect("Created note.txt")
            child.expect("Saved the note.")
            child.sendline("/tools")
            child.expect("ipython")
            child.sendline("/undo 2")
            child.expect("Nothing was undone: you asked to undo 2 turns, but there is only "
                         "1; /undo 1 undoes them all")
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
        child = chat(tmp_path, server.openai_url, "--workspace", str(workspace), "--mcp",
                     f"time={sys.executable} -m mcp_server_time --local-timezone UTC",
                     timeout=60)
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("/mcp")
            child.expect(r"mcp server time \(stdio: .*\): 2 tools \(listed from the server\)")
            child.sendline("/exit")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)


def test_compact_slash_command_replaces_older_exchanges_by_a_summary(
        tmp_path: Path, workspace: Path) -> None:
    replies = [Reply(f"{F}shell\necho one\n{F}\n"), Reply("First done."),
               Reply(f"{F}shell\necho two\n{F}\n"), Reply("Second done."),
               Reply("Summary: echoed one and two."), Reply("Third answer.")]
    with FakeModelServer(replies) as server:
        child = chat(tmp_path, server.openai_url, "--name", "long", "-y", "--workspace",
                     str(workspace))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("echo one")
            child.expect("First done.")
            child.sendline("echo two")
            child.expect("Second done.")
            child.sendline("/compact")
            child.expect(r"Compacted: \[Summary of \d+ earlier messages")
            child.sendline("and now?")
            child.expect("Third answer.")
            child.sendline("/exit")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
    summary_request, after = server.requests[4], server.requests[5]
    assert "will be replaced by your summary" in summary_request.body["messages"][-1]["content"]
    sent = [m["content"] for m in after.body["messages"]][1:]  # after the system prompt
    assert sent[0] == "echo one" and "Summary: echoed one and two." in sent[1]
    assert "echo one" not in "".join(sent[2:]) and sent[-1] == "and now?"


def test_always_allow_adds_the_narrowest_rules_and_the_same_call_is_not_asked_again(
        tmp_path: Path, workspace: Path) -> None:
    call = f"{F}shell\ntouch made && ls\n{F}\n"
    replies = [Reply(call), Reply(call), Reply(f"{F}shell\ntouch other\n{F}\n"),
               Reply("All ran.")]
    with FakeModelServer(replies) as server:
        child = chat(tmp_path, server.openai_url, "--sandbox", "off", "--workspace",
                     str(workspace))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("touch it twice")
            child.expect(r"always allow for this conversation: shell\(touch made\), "
                         r"shell\(ls\)")
            child.expect(r"Run shell\?.*\[a\]lways.*\[t\]ell the model:")
            child.sendline("a")
            child.expect(r"Allowed for the rest of this conversation: shell\(touch made\), "
                         r"shell\(ls\)")
            child.expect(r"Run shell\?.*\[t\]ell the model:")  # touch other: no rule for it
            asked_between = child.before
            child.sendline("t not that one")
            child.expect("All ran.")
            child.sendline("/exit")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
    assert "Run shell?" not in asked_between  # the second identical call ran unasked
    assert "Ran command: `touch made && ls`" in asked_between
    assert "shell(touch other)" in asked_between
    assert (workspace / "made").exists() and not (workspace / "other").exists()


def test_alt_enter_makes_a_new_line_and_tab_completes_slash_commands(
        tmp_path: Path, workspace: Path) -> None:
    with FakeModelServer([Reply("Two lines read.")]) as server:
        child = chat(tmp_path, server.openai_url, "--workspace", str(workspace))
        try:
            child.expect("Ctrl-D to leave")
            child.send("first line\x1b\rsecond line\r")
            child.expect("Two lines read.")
            child.send("/too\t")
            child.expect("/tools")
            child.send("\r")
            child.expect("ipython")
            child.send("/ex\t")
            child.expect("/exit")
            child.send("\r")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
    [request] = server.requests
    assert request.body["messages"][-1]["content"] == "first line\nsecond line"
