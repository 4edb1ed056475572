"""The chat shows it is alive and shows a reply once: the real CLI in a real terminal (tmux),
its screen and scrollback read back with ``tmux capture-pane``.

A status line (spinner, seconds) shows while the model thinks and goes when the reply
streams; a dim line after each reply gives its tokens; a long streamed reply leaves each of
its lines once in the scrollback, however short the terminal; Ctrl-C leaves the partial reply
once, marked as cut.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fencecall.cli.display import settled

from ..fakeserver import FakeModelServer, Reply
from ..support import F
from .conftest import cli_env

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed: the terminal tests need it")

SRC = str(Path(__file__).resolve().parents[2] / "src")


class Pane:
    """One tmux server of its own (a private socket) running the chat in one pane."""

    def __init__(self, folder: Path, width: int, height: int):
        self.name = f"fencecall-life-{uuid.uuid4().hex[:12]}"
        self.folder, self.width, self.height = folder, width, height

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        return subprocess.run(["tmux", "-L", self.name, "-f", os.devnull, *args],
                              capture_output=True, text=True, timeout=10, env=env)

    def start(self, url: str, home: Path, *flags: str) -> None:
        env = cli_env(home, url, TERM="xterm-256color", NO_COLOR="1", PROMPT_TOOLKIT_NO_CPR="1",
                      PYTHONPATH=SRC)
        argv = [sys.executable, "-m", "fencecall.cli.main", "--model", "local/m", *flags]
        script = self.folder / f"run-{uuid.uuid4().hex[:8]}.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items()
                          if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k))
        script.write_text(f"{exports}{shlex.join(argv)}\necho \"[exited $?]\"\nsleep 30\n")
        started = self.tmux("new-session", "-d", "-s", "life", "-x", str(self.width), "-y",
                            str(self.height), f"bash {shlex.quote(str(script))}")
        assert started.returncode == 0, started.stderr

    def screen(self) -> str:
        """What the pane shows now."""
        return self.tmux("capture-pane", "-p", "-t", "life").stdout

    def scrollback(self) -> str:
        """The scrollback and the screen, wrapped lines joined."""
        return self.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "life").stdout

    def wait_for(self, pattern: str, *, within: float = 20, whole: bool = True) -> str:
        """Poll until ``pattern`` (a regex) shows (in the scrollback, or on the screen)."""
        deadline = time.monotonic() + within
        while True:
            shown = self.scrollback() if whole else self.screen()
            if re.search(pattern, shown):
                return shown
            if time.monotonic() > deadline:
                pytest.fail(f"{pattern!r} did not show within {within:g} s:\n{shown}")
            time.sleep(0.05)

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "life", *keys)

    def close(self) -> None:
        socket = self.tmux("display-message", "-p", "#{socket_path}").stdout.strip()
        self.tmux("kill-server")
        if socket.endswith(self.name):
            Path(socket).unlink(missing_ok=True)


@contextmanager
def pane(folder: Path, width: int = 100, height: int = 24) -> Iterator[Pane]:
    tmux = Pane(folder, width, height)
    try:
        yield tmux
    finally:
        tmux.close()


def test_a_status_line_shows_while_the_model_thinks_then_the_reply_and_its_tokens(
        tmp_path: Path, workspace: Path) -> None:
    reply = Reply("The answer is forty-two.", latency=3, usage=(1234, 56))
    config = tmp_path / "config" / "fencecall" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[models."local/m"]\nprice = {input = 1000, output = 2000}\n')
    with FakeModelServer([reply]) as server, pane(tmp_path) as tmux:
        tmux.start(server.openai_url, tmp_path, "-w", str(workspace))
        tmux.wait_for("Ctrl-D to leave")
        tmux.send("what is the answer?", "Enter")
        thinking = tmux.wait_for(r"Thinking… [12] s", whole=False, within=3)
        assert "forty-two" not in thinking
        after = tmux.wait_for(r"1,234 in · 56 out tokens · \$1\.3460")  # priced as configured
        tmux.send("/exit", "Enter")
        tmux.wait_for(r"\[exited 0\]")
        final = tmux.scrollback()
    assert "The answer is forty-two." in after
    assert "Thinking" not in final  # gone once the reply came, not left in the scrollback
    assert final.index("forty-two") < final.index("1,234 in")


def test_the_status_line_shows_while_a_call_runs(tmp_path: Path, workspace: Path) -> None:
    replies = [Reply(f"Waiting.\n{F}shell\nsleep 3; echo $((40000 + 2345))\n{F}\n"), Reply("Done.")]
    with FakeModelServer(replies) as server, pane(tmp_path) as tmux:
        tmux.start(server.openai_url, tmp_path, "-y", "--sandbox", "off", "-w", str(workspace))
        tmux.wait_for("Ctrl-D to leave")
        tmux.send("sleep a bit", "Enter")
        running = tmux.wait_for(r"Running shell… [12] s", whole=False)
        assert "42345" not in running
        tmux.wait_for("Done.")
        tmux.send("/exit", "Enter")
        tmux.wait_for(r"\[exited 0\]")
        final = tmux.scrollback()
    assert "Running shell" not in final and "42345" in final


def long_reply() -> str:
    """A heading, then 120 numbered lines: paragraphs, a tight list, a code block."""
    paragraphs = [f"Paragraph line {n:03d}." for n in range(1, 41)]
    items = [f"- list line {n:03d}" for n in range(41, 81)]
    code = [f"code line {n:03d}" for n in range(81, 121)]
    return ("# The Heading Of The Reply\n\n" + "\n\n".join(paragraphs) + "\n\n"
            + "\n".join(items) + "\n\n```\n" + "\n".join(code) + "\n```\n\nThe end.\n")


def test_a_long_streamed_reply_leaves_each_line_once_in_the_scrollback(
        tmp_path: Path, workspace: Path) -> None:
    reply = Reply(long_reply(), chunk_size=9, delay=0.003)
    with FakeModelServer([reply]) as server, pane(tmp_path, height=24) as tmux:
        tmux.start(server.openai_url, tmp_path, "-w", str(workspace))
        tmux.wait_for("Ctrl-D to leave")
        tmux.send("write a lot", "Enter")
        tmux.wait_for(r"The end\.", within=60)
        tmux.send("/exit", "Enter")
        tmux.wait_for(r"\[exited 0\]")
        shown = tmux.scrollback()
    assert shown.count("The Heading Of The Reply") == 1, shown
    for n in range(1, 121):
        assert len(re.findall(rf"line {n:03d}\b", shown)) == 1, (n, shown)
    assert shown.count("The end.") == 1
    assert shown.index("line 001") < shown.index("line 060") < shown.index("line 120")


def test_ctrl_c_leaves_the_partial_reply_once_marked_as_cut(tmp_path: Path,
                                                            workspace: Path) -> None:
    text = "First line of a slow reply.\n\nThen a second paragraph that goes on" + " and on" * 40
    reply = Reply(text, chunk_size=3, delay=0.15)
    with FakeModelServer([reply, Reply("Fine.")]) as server, pane(tmp_path) as tmux:
        tmux.start(server.openai_url, tmp_path, "-w", str(workspace))
        tmux.wait_for("Ctrl-D to leave")
        tmux.send("go slowly", "Enter")
        tmux.wait_for(r"second paragraph that")
        tmux.send("C-c")
        tmux.wait_for(r"\[interrupted by the user\]")
        tmux.send("and now?", "Enter")
        tmux.wait_for("Fine.")
        tmux.send("/exit", "Enter")
        tmux.wait_for(r"\[exited 0\]")
        shown = tmux.scrollback()
    assert shown.count("First line of a slow reply.") == 1, shown
    assert shown.count("Then a second paragraph") == 1, shown  # the live end, erased once
    cut = shown.index("[interrupted by the user]")
    assert shown.index("second paragraph that") < cut < shown.index("Fine.")
    assert server.requests[1].body["messages"][-2]["content"].endswith(
        "[interrupted by the user]")


def test_only_blocks_a_blank_line_ends_outside_a_code_fence_are_settled() -> None:
    assert settled("# Head\n\nPara") == len("# Head\n\n")
    assert settled("one\ntwo") == 0
    fenced = "Intro.\n\n```py\na = 1\n\nb = 2\n"
    assert settled(fenced) == len("Intro.\n\n")  # the blank line inside the fence is not
    closed = fenced + "```\n\nAfter"
    assert settled(closed) == len(closed) - len("After")
    assert settled("~~~~\nx\n~~~\n\ny\n~~~~\n\nz") == len("~~~~\nx\n~~~\n\ny\n~~~~\n\n")


def test_ctrl_c_while_the_model_thinks_ends_the_status_line_with_the_mark(
        tmp_path: Path, workspace: Path) -> None:
    with FakeModelServer([Reply("Too late.", latency=20), Reply("Fine.")]) as server, \
            pane(tmp_path) as tmux:
        tmux.start(server.openai_url, tmp_path, "-w", str(workspace))
        tmux.wait_for("Ctrl-D to leave")
        tmux.send("think hard", "Enter")
        tmux.wait_for(r"Thinking… \d+ s", whole=False)
        tmux.send("C-c")
        tmux.wait_for(r"\[interrupted by the user\]")
        tmux.send("and now?", "Enter")
        tmux.wait_for("Fine.")
        tmux.send("/exit", "Enter")
        tmux.wait_for(r"\[exited 0\]")
        shown = tmux.scrollback()
    assert "Thinking" not in shown and "Too late." not in shown
