"""The chat's confirmation in a real terminal (pexpect pty): typed-ahead input cannot answer
it, and its answers (view, tell the model, a plain no that ends the turn)."""

from __future__ import annotations

from pathlib import Path

import pexpect

from ..fakeserver import FakeModelServer, Reply
from ..support import F
from .test_interactive import chat

QUESTION = r"Run shell\? \[y\]es \[n\]o( \[a\]lways)? \[v\]iew \[t\]ell the model:"


def leave(child: pexpect.spawn) -> None:
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_a_line_typed_while_the_model_writes_does_not_answer_the_question(
        tmp_path: Path, workspace: Path) -> None:
    prose = "Thinking it over: " + " ".join(f"step {i} of {i * 7}," for i in range(40))
    slow = Reply(f"{prose}\n\n{F}shell\ntouch made\n{F}\n", chunk_size=4, delay=0.03)
    with FakeModelServer([slow, Reply("Done.")]) as server:
        child = chat(tmp_path, server.openai_url, "--sandbox", "off", "--workspace",
                     str(workspace))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("make a file")
            child.expect("Thinking it over")  # the reply is still streaming
            child.sendline("y")
            child.expect(r"What was typed before this question was discarded")
            child.expect(QUESTION)
            assert not (workspace / "made").exists()  # waiting for a fresh answer
            child.sendline("y")
            child.expect("Done.")
            leave(child)
        finally:
            child.close(force=True)
    assert (workspace / "made").exists()


def test_view_shows_the_whole_call_and_tell_gives_the_model_the_reason(
        tmp_path: Path, workspace: Path) -> None:
    body = "\n".join(f"echo line {i}" for i in range(1, 101))
    replies = [Reply(f"{F}shell\n{body}\n{F}\n"), Reply("Understood, not echoing.")]
    with FakeModelServer(replies) as server:
        child = chat(tmp_path, server.openai_url, "--sandbox", "off", "--workspace",
                     str(workspace))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("echo a lot")
            child.expect(QUESTION)
            assert "lines not shown" in child.before  # the call was cut
            child.sendline("v")
            child.expect("echo line 50")  # the whole call, shown again
            child.expect(QUESTION)
            child.sendline("t")
            child.expect("Tell the model:")
            child.sendline("too many lines, just say hi")
            child.expect("Understood, not echoing.")
            leave(child)
        finally:
            child.close(force=True)
    told = server.requests[1].body["messages"][-1]["content"]
    assert "They said: too many lines, just say hi" in told


def test_a_plain_no_ends_the_turn_and_the_user_says_what_to_do_instead(
        tmp_path: Path, workspace: Path) -> None:
    replies = [Reply(f"{F}shell\ntouch made\n{F}\n"), Reply("Fine, I will list instead.")]
    with FakeModelServer(replies) as server:
        child = chat(tmp_path, server.openai_url, "--sandbox", "off", "--workspace",
                     str(workspace))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("make a file")
            child.expect(QUESTION)
            child.sendline("n")
            child.expect("Not run. The turn ends here: say what to do instead.")
            child.expect(">")  # back at the chat prompt
            assert len(server.requests) == 1  # the model was not asked again at once
            child.sendline("list the files instead")
            child.expect("Fine, I will list instead.")
            leave(child)
        finally:
            child.close(force=True)
    sent = server.requests[1].body["messages"]
    assert "The turn ends here: they will say what to do instead." in sent[-2]["content"]
    assert sent[-1]["content"] == "list the files instead"
    assert not (workspace / "made").exists()
