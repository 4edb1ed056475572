"""The globs of permission rules, each matched against the whole of its subject.

In every kind a backslash takes the next character as it is.

- tool names: ``*`` any text (dots included), ``?`` one character;
- text (code, a command): ``*`` any text, spaces and newlines included, ``?`` one character;
  for a command a wildcard never stands for a marked ``>`` (an output redirection to a
  file), and a pattern ending in `` *`` (or ``:*``) also matches its prefix alone: ``git
  status *`` matches ``git status`` and ``git status -s``, not ``git statusx``;
- paths: ``**`` any text, folders included (``**/`` also none: ``**/.env`` matches ``.env``),
  ``*`` and ``?`` never cross a ``/``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ._shell_split import Command

MARK = "\ue000"
"""Stands for a marked ``>`` in the text a command pattern is matched against."""


def _pieces(pattern: str) -> list[tuple[bool, str]]:
    """(is a wildcard, text) in order: ``*``, ``**``, ``?`` or one literal character."""
    pieces: list[tuple[bool, str]] = []
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\" and at + 1 < len(pattern):
            pieces.append((False, pattern[at + 1]))
            at += 2
        elif pattern.startswith("**", at):
            pieces.append((True, "**"))
            at += 2
        else:
            pieces.append((char in "*?", char))
            at += 1
    return pieces


@lru_cache(maxsize=512)
def _compiled(pattern: str, kind: str) -> re.Pattern[str]:
    any_text, one = {"name": (".*", "."), "text": (".*", "."),
                     "command": (f"[^{MARK}]*", f"[^{MARK}]"), "path": ("[^/]*", "[^/]")}[kind]
    words = ""
    if kind == "command" and pattern.endswith((" *", ":*")) and not pattern.endswith("\\ *"):
        pattern, words = pattern[:-2].rstrip(), f"(?: {any_text})?"
    regex: list[str] = []
    pieces = _pieces(pattern)
    skip = False
    for index, (wild, text) in enumerate(pieces):
        if skip:
            skip = False
            continue
        if wild and text == "**" and kind == "path":
            skip = pieces[index + 1:index + 2] == [(False, "/")]
            regex.append("(?:.*/)?" if skip else ".*")  # the "/" after it: taken here
        elif wild and text in ("*", "**"):
            regex.append(any_text)
        elif wild and text == "?":
            regex.append(one)
        elif kind == "command" and text == ">":
            regex.append(f"[>{MARK}]")
        else:
            regex.append(re.escape(text))
    return re.compile("".join(regex) + words, re.DOTALL)


def name_matches(glob: str, name: str) -> bool:
    return _compiled(glob, "name").fullmatch(name) is not None


def text_matches(pattern: str, text: str) -> bool:
    return _compiled(pattern, "text").fullmatch(text) is not None


def path_matches(pattern: str, path: str) -> bool:
    """(A leading ``./`` of the pattern says nothing: paths are relative to the workspace.)"""
    return _compiled(pattern.removeprefix("./"), "path").fullmatch(path) is not None


def command_matches(pattern: str, command: Command) -> bool:
    marked = "".join(MARK if i in command.guarded else char
                     for i, char in enumerate(command.text))
    return _compiled(pattern, "command").fullmatch(marked) is not None
