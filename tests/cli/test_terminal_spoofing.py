"""A hostile model cannot hide what runs: the real CLI on a real terminal (tmux), its screen
read back with ``tmux capture-pane``.

Each reply holds a shell call whose escape sequences (carriage return, line erase, cursor up,
OSC title, bidi override, backspaces) would, if interpreted, make the confirmation show a
harmless ``echo harmless`` while ``touch pwned`` runs. The screen must show the real command
with the escapes made visible; declining must run nothing; confirming must run exactly what
was shown.
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
from dataclasses import dataclass
from pathlib import Path

import pytest

from fencecall.cli.visible import TABLE

from ..fakeserver import FakeModelServer, Reply
from .conftest import cli_env

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed: the terminal tests need it")

DEADLINE = 20.0
HOSTILE = Path(__file__).parent.parent / "fixtures" / "replies" / "hostile_line_erase.md"


class Screen:
    """One tmux server of its own (a private socket), one session, 200 by 50."""

    def __init__(self, folder: Path):
        # -L: a socket of its own in tmux's short socket folder (a socket path under a deep
        # tmp_path could pass the 108-byte limit of unix socket names)
        self.name = f"fencecall-test-{uuid.uuid4().hex[:12]}"
        self.folder = folder

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        return subprocess.run(["tmux", "-L", self.name, "-f", os.devnull, *args],
                              capture_output=True, text=True, timeout=10, env=env)

    def start(self, argv: list[str], env: dict[str, str]) -> None:
        script = self.folder / f"run-{uuid.uuid4().hex[:8]}.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items()
                          if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) and k != "TMUX")
        script.write_text(f"{exports}{shlex.join(argv)}\necho \"[exited $?]\"\nsleep 30\n")
        started = self.tmux("new-session", "-d", "-s", "spoof", "-x", "200", "-y", "50",
                            f"bash {shlex.quote(str(script))}")
        assert started.returncode == 0, started.stderr

    def capture(self) -> str:
        """The screen and its scrollback, wrapped lines joined."""
        return self.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "spoof").stdout

    def wait_for(self, pattern: str, after: int = 0) -> str:
        """Poll the screen until ``pattern`` (a regex) appears at or after character
        ``after``; the screen then."""
        deadline = time.monotonic() + DEADLINE
        while True:
            screen = self.capture()
            if re.search(pattern, screen[after:]):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"{pattern!r} did not appear within {DEADLINE:g} s; the screen:\n"
                            f"{screen}")
            time.sleep(0.1)

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "spoof", *keys)

    def close(self) -> None:
        socket = self.tmux("display-message", "-p", "#{socket_path}").stdout.strip()
        self.tmux("kill-server")
        if socket.endswith(self.name):  # tmux leaves the socket file behind
            Path(socket).unlink(missing_ok=True)


@contextmanager
def screen(folder: Path) -> Iterator[Screen]:
    tmux = Screen(folder)
    try:
        yield tmux
    finally:
        tmux.close()


_FROM_PICTURE = {shown: chr(cp) for cp, shown in TABLE.items()}


def unvisible(shown: str) -> str:
    """Undo visible(): what a shown line stands for."""
    return re.sub(r"<U\+[0-9A-F]{4,6}>|[\u2400-\u2421]",
                  lambda m: _FROM_PICTURE.get(m.group(), m.group()), shown)


def body_lines(screen_text: str) -> list[str]:
    """The numbered lines of the call's body on the screen (the gutter removed)."""
    return [m.group(1) for m in re.finditer(r"(?m)^ *\d+ (.*?) *$", screen_text)]


@dataclass(frozen=True)
class Hostile:
    name: str
    reply: str  # the reply file's text
    shown: tuple[str, ...]  # what the screen must show, escapes made visible
    fmt: str = "markdown"


def fenced(command: str) -> str:
    return f"I'll just say hello.\n\n```shell\n{command}\n```\n"


def tool_format(command: str) -> str:
    import json

    return "@shell(c1): " + json.dumps({"command": command}) + "\n"


VARIANTS = [
    Hostile("carriage return overwrite", tool_format("touch pwned;\r\x1b[2Kecho harmless"),
            ("touch pwned;␍␛[2Kecho harmless",), "tool"),
    Hostile("carriage return in a block", fenced("touch pwned;\r\x1b[2Kecho harmless"),
            ("touch pwned;", "␛[2Kecho harmless")),
    Hostile("line erase", fenced("touch pwned; #\x1b[2K\x1b[1Gecho harmless"),
            ("touch pwned; #␛[2K␛[1Gecho harmless",)),
    Hostile("cursor up", fenced("touch pwned\n\x1b[1A\x1b[2Kecho harmless"),
            ("touch pwned", "␛[1A␛[2Kecho harmless")),
    Hostile("bidi override", fenced("touch pwned #\u202e\u2066ssel\u2069mrah ohce"),
            ("touch pwned #<U+202E><U+2066>ssel<U+2069>mrah ohce",)),
    Hostile("osc title", fenced("touch pwned \x1b]0;echo harmless\x07"),
            ("touch pwned ␛]0;echo harmless␇",)),
    Hostile("backspaces", fenced("touch pwned;" + "\b" * 12 + "echo harmless"),
            ("touch pwned;" + "␈" * 12 + "echo harmless",)),
]


def run_argv(reply: Path, workspace: Path, fmt: str) -> list[str]:
    return [sys.executable, "-m", "fencecall.cli.main", "run", str(reply), "--workspace",
            str(workspace), "--format", fmt, "--tools", "shell,save"]


def env_for(tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path, "http://127.0.0.1:9/v1", PROMPT_TOOLKIT_NO_CPR="1")


def assert_honest(screen_text: str, variant: Hostile) -> None:
    for shown in variant.shown:
        assert shown in screen_text, f"{variant.name}: {shown!r} not on the screen:\n{screen_text}"
    lines = [line.strip() for line in screen_text.splitlines()]
    assert not any(re.fullmatch(r"(\d+ )?echo harmless", line) for line in lines), screen_text
    assert "touch pwned" in screen_text


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.name for v in VARIANTS])
def test_declined_hostile_call_shows_the_real_command_and_runs_nothing(
        tmp_path: Path, workspace: Path, variant: Hostile) -> None:
    reply = tmp_path / "reply.md"
    reply.write_text(variant.reply)
    with screen(tmp_path) as tmux:
        tmux.start(run_argv(reply, workspace, variant.fmt), env_for(tmp_path))
        shown = tmux.wait_for(r"Run shell\?.*\[t\]ell the model:")
        assert_honest(shown, variant)
        tmux.send("n", "Enter")
        after = tmux.wait_for(r"\[exited \d+\]")
    assert "declined the shell call" in after
    assert list(workspace.iterdir()) == []


def test_confirmed_hostile_call_runs_exactly_what_was_shown(tmp_path: Path,
                                                           workspace: Path) -> None:
    command = "touch pwned;\r\x1b[2Kecho harmless"
    reply = tmp_path / "reply.txt"
    reply.write_text(tool_format(command))
    with screen(tmp_path) as tmux:
        tmux.start(run_argv(reply, workspace, "tool"), env_for(tmp_path))
        shown = tmux.wait_for(r"Run shell\?.*\[t\]ell the model:")
        preview = shown[shown.index("preview:"):]
        assert [unvisible(line.rstrip()) for line in preview.splitlines()[1:2]] == [command]
        tmux.send("y", "Enter")
        after = tmux.wait_for(r"\[exited \d+\]")
    assert (workspace / "pwned").exists()
    # bash ran the second part as written, escapes and all (bash quotes it as $'\r\E[2Kecho')
    assert "\\r\\E[2Kecho': command not found" in after.replace("\n", "")


def test_confirmed_save_writes_exactly_the_body_shown(tmp_path: Path, workspace: Path) -> None:
    with screen(tmp_path) as tmux:
        tmux.start(run_argv(HOSTILE, workspace, "markdown"), env_for(tmp_path))
        shown = tmux.wait_for(r"Run save\?.*\[t\]ell the model:")
        assert "```save notes.txt" in shown
        body = "\n".join(unvisible(line) for line in body_lines(shown))
        tmux.send("y", "Enter")
        tmux.wait_for(r"\[exited \d+\]")
    written = (workspace / "notes.txt").read_text()
    assert written == body + "\n"
    assert "\x1b[2K" in written and "\u202e" in written  # the escapes were there, and shown


def test_huge_call_is_cut_and_v_shows_all_of_it(tmp_path: Path, workspace: Path) -> None:
    lines = [f"echo line {i}" for i in range(1, 301)] + ["touch pwned"]
    reply = tmp_path / "reply.md"
    reply.write_text(fenced("\n".join(lines)))
    with screen(tmp_path) as tmux:
        tmux.start(run_argv(reply, workspace, "markdown"), env_for(tmp_path))
        first = tmux.wait_for(r"Run shell\? \[y\]es .*\[t\]ell the model:")
        assert re.search(r"\[… \d+ lines not shown .*answer v to view the whole call …\]", first)
        assert "touch pwned" in first and "echo line 150" not in first
        mark = len(first)
        tmux.send("v", "Enter")
        second = tmux.wait_for(r"Run shell\? \[y\]es", after=mark)
        assert "echo line 150" in second[mark:]
        tmux.send("n", "Enter")
        tmux.wait_for(r"\[exited \d+\]")
    assert list(workspace.iterdir()) == []


def test_streamed_reply_shows_its_escapes(tmp_path: Path, workspace: Path) -> None:
    prose = ("All good.\r\x1b[2KNothing to see \u202eereh\u202c.\x1b]0;pwned-title\x07 "
             "Also \x1b[31mred\x1b[0m and [bold]markup[/bold].\n\n")
    replies = [Reply(prose + "```shell\ntouch pwned\x1b[1A\x1b[2K\n```\n", chunk_size=5),
               Reply("Understood, \x1b[2Kskipping."), Reply("bye")]
    with FakeModelServer(replies) as server, screen(tmp_path) as tmux:
        env = cli_env(tmp_path, server.openai_url, PROMPT_TOOLKIT_NO_CPR="1")
        tmux.start([sys.executable, "-m", "fencecall.cli.main", "--model", "local/m", "--name",
                    "spoof", "--workspace", str(workspace), "--tools", "shell"], env)
        tmux.wait_for("Ctrl-D to leave")
        tmux.send("hello", "Enter")
        shown = tmux.wait_for(r"Run shell\?.*\[t\]ell the model:")
        for visible_part in ("All good.␍␛[2KNothing to see <U+202E>ereh<U+202C>.",
                             "␛]0;pwned-title␇", "␛[31mred␛[0m", "[bold]markup[/bold]",
                             "touch pwned␛[1A␛[2K"):
            assert visible_part in shown, f"{visible_part!r} not on the screen:\n{shown}"
        tmux.send("t skip it", "Enter")  # no, and tell the model why: it answers at once
        after = tmux.wait_for("Understood, ␛\\[2Kskipping.")
        assert "They said: skip it" in after
        tmux.send("/exit", "Enter")
        tmux.wait_for(r"\[exited 0\]")
    assert list(workspace.iterdir()) == []

