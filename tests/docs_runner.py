"""Reading the documentation's examples out of Markdown, and running its command lines.

:func:`blocks` finds every fenced block of a Markdown file (CommonMark's rules: a fence is 3+
backticks or tildes, a backtick fence's info string holds no backtick, and only a bare fence
at least as long closes it), each with the reason given in a ``<!-- not run: REASON -->``
comment right before it, if any. :func:`commands` reads the ``$ COMMAND`` lines of a shell
block and the output shown under each; :func:`run_command` runs one; :func:`missing_output`
says which shown line the real output lacks.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_OPEN = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not run:\s*(?P<reason>.*?)\s*-->\s*$")
_RULE = re.compile(r"\s*─+$")
"""The rule rich draws after a tool's name fills the terminal's width: not compared."""


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block: where it is, its language (the info string's first word), its text,
    and why it is not run (``None``: it is)."""

    file: str
    line: int
    lang: str
    text: str
    not_run: str | None

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def blocks(path: Path, root: Path) -> list[Block]:
    """Every fenced block of the Markdown file ``path``, named relative to ``root``."""
    lines = path.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    index = 0
    while index < len(lines):
        match = _OPEN.match(lines[index])
        fence = match["fence"] if match else ""
        if match is None or (fence[0] == "`" and "`" in match["info"]):
            index += 1
            continue
        close = re.compile(rf"^ *{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        indent = len(match["indent"])
        end = index + 1
        while end < len(lines) and not close.match(lines[end]):
            end += 1
        body = [line[min(indent, len(line) - len(line.lstrip(" "))):]
                for line in lines[index + 1:end]]
        before = next((line for line in reversed(lines[:index]) if line.strip()), "")
        reason = _NOT_RUN.match(before)
        words = match["info"].split()
        found.append(Block(str(path.relative_to(root)), index + 1,
                           words[0].lower() if words else "", "\n".join(body) + "\n",
                           reason["reason"] if reason else None))
        index = end + 1
    return found


@dataclass(frozen=True, slots=True)
class Command:
    """A ``$ COMMAND`` line of a shell block and the output lines shown under it."""

    line: str
    shown: tuple[str, ...]


def commands(block: Block) -> list[Command]:
    found: list[Command] = []
    current: str | None = None
    shown: list[str] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            if current is not None:
                found.append(Command(current, tuple(shown)))
            current, shown = line[2:], []
        elif current is not None:
            shown.append(line)
    if current is not None:
        found.append(Command(current, tuple(shown)))
    return found


def argv_of(line: str, env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The program and arguments of a command line, and the ``NAME=VALUE`` assignments before
    it. ``fencecall`` is the one on ``env``'s PATH, ``python`` and ``python3`` this
    interpreter; any other program is refused (a docs example runs nothing else)."""
    words = shlex.split(line, comments=True)
    assigned: dict[str, str] = {}
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        assigned[name] = value
    if not words:
        raise ValueError(f"no command in {line!r}")
    program = words[0]
    if program in ("python", "python3"):
        words[0] = sys.executable
    elif program == "fencecall":
        found = shutil.which("fencecall", path=env.get("PATH"))
        if found is None:
            raise FileNotFoundError("fencecall is not on the PATH (pip install -e .)")
        words[0] = found
    else:
        raise ValueError(f"{line!r}: the docs' examples run fencecall and python only")
    return words, assigned


def run_command(line: str, *, cwd: Path, env: Mapping[str, str],
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
    argv, assigned = argv_of(line, env)
    return subprocess.run(argv, cwd=cwd, env={**env, **assigned}, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def normalized(line: str) -> str:
    return _RULE.sub("", line.rstrip())


def missing_output(shown: Sequence[str], actual: str,
                   volatile: Sequence[re.Pattern[str]] = ()) -> str | None:
    """The first line shown in the docs (blank ones and those matching a ``volatile``
    pattern left out) that the real output does not have in the same order, or ``None``."""
    have = [normalized(line) for line in actual.splitlines()]
    position = 0
    for line in shown:
        want = normalized(line)
        if not want or any(pattern.search(want) for pattern in volatile):
            continue
        try:
            position = have.index(want, position) + 1
        except ValueError:
            return want
    return None


