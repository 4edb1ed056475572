"""The simple commands of a shell line, for permission rules to judge one by one.

A line is split on ``;``, ``&&``, ``||``, ``|``, ``|&``, ``&`` and newlines; the commands
inside ``$(...)``, backticks, ``<(...)``, ``>(...)``, subshells ``( )`` and groups ``{ }``
count as commands of their own (and the command around a substitution keeps it in its text).
Anything this cannot read with confidence (unbalanced quotes or parentheses, a heredoc,
``$((``, ``case``, a ``(`` inside a command, a ``${...}`` holding more than a name) makes
:func:`split_commands` return None, so no allow rule can match the line.

Each command's text is as written, with leading reserved words (``if``, ``then``, ``do``,
``!``, ...) taken off and runs of whitespace outside quotes as one space. The ``>`` of an
output redirection to a file is marked, so that a wildcard cannot stand for it: ``echo *``
does not allow ``echo x > ~/.bashrc``. Redirections that write no file (``2>&1``, ``>&2``,
``> /dev/null``) are not marked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_RESERVED = frozenset({"!", "if", "then", "else", "elif", "while", "until", "do", "time", "{"})
_ENDS = frozenset({"fi", "done", "}", "then", "else", "do"})
_HARMLESS_TARGET = re.compile(r"(&[0-9]+|&-|\s*/dev/null)(?=$|[\s;&|)])")
_PLAIN_PARAMETER = re.compile(r"\{[#!]?[A-Za-z_0-9@*]+(?:[:%#/^,]?[-=+?]?[\w./ -]*)?\}")


class Unreadable(ValueError):
    """The line holds something the splitter does not read with confidence."""


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command: its text, and where in it an output redirection writes a file."""

    text: str
    guarded: frozenset[int] = frozenset()


@dataclass(slots=True)
class _Building:
    chars: list[str] = field(default_factory=list)
    guarded: set[int] = field(default_factory=set)

    def add(self, text: str, *, guard: bool = False) -> None:
        if guard:
            self.guarded.update(len(self.chars) + i for i, char in enumerate(text) if char == ">")
        self.chars.extend(text)

    def space(self) -> None:
        if self.chars and self.chars[-1] != " ":
            self.chars.append(" ")

    def at_word_start(self) -> bool:
        return not self.chars or self.chars[-1] == " "


def split_commands(line: str) -> list[Command] | None:
    """Every simple command of ``line`` (substitutions' and subshells' included), or None
    when the line cannot be split with confidence."""
    scanner = _Scanner(line)
    try:
        scanner.commands(closer=None)
    except Unreadable:
        return None
    return [command for command in scanner.found if command.text]


class _Scanner:
    """One pass over a line; nested lists (substitutions, subshells) recurse."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.found: list[Command] = []

    def peek(self, count: int = 1) -> str:
        return self.text[self.at:self.at + count]

    def commands(self, closer: str | None) -> None:
        """Commands up to ``closer`` (``)``, consumed) or the end of the text."""
        while True:
            building = _Building()
            ended = self._command(building, closer)
            self._keep(building)
            if ended == "closer":
                return
            if ended == "end":
                if closer is not None:
                    raise Unreadable(f"{closer!r} is missing")
                return

    def _keep(self, building: _Building) -> None:
        text = "".join(building.chars)
        start = len(text) - len(text.lstrip())
        text = text.strip()
        while True:  # reserved words are the shell's, not the command's
            word, space, rest = text.partition(" ")
            if not (space and word in _RESERVED):
                break
            start += len(word) + 1
            text = rest
        if text in _ENDS:
            return
        if text.split(" ", 1)[0] in ("case", "select", "function", "coproc"):
            raise Unreadable("compound command")
        end = start + len(text)
        guarded = frozenset(i - start for i in building.guarded if start <= i < end)
        self.found.append(Command(text, guarded))

    def _command(self, building: _Building, closer: str | None) -> str:
        """Read one command into ``building``; how it ended: ``sep``, ``closer``, ``end``."""
        while self.at < len(self.text):
            char = self.text[self.at]
            if char in " \t":
                building.space()
                self.at += 1
            elif char in "\n;&|":
                if self._separator(building):
                    return "sep"
            elif char == ")":
                if closer != ")":
                    raise Unreadable("')' closes nothing")
                self.at += 1
                return "closer"
            elif char == "(":
                self._subshell(building)
            elif char == "#" and building.at_word_start():
                newline = self.text.find("\n", self.at)
                self.at = len(self.text) if newline < 0 else newline
            else:
                self._word_part(building)
        return "end"

    def _separator(self, building: _Building) -> bool:
        """Read ``;``, ``&&``, ``||``, ``|``, ``|&``, ``&`` or a newline (True), or a
        redirection that starts with ``&`` (False: it goes on)."""
        two = self.peek(2)
        if two == ";;" or two == ";&":
            raise Unreadable("a case clause")
        if two == "&>":
            self._redirection(building)
            return False
        self.at += 2 if two in ("&&", "||", "|&") else 1
        return True

    def _subshell(self, building: _Building) -> None:
        if "".join(building.chars).strip():
            raise Unreadable("'(' inside a command (a function, an array)")
        self.at += 1
        self.commands(closer=")")

    def _word_part(self, building: _Building) -> None:
        """Read one piece of a word: a quoted string, an escape, an expansion, a
        redirection or a plain character."""
        char = self.text[self.at]
        if char == "\\":
            self._escape(building)
        elif char == "'":
            self._single_quoted(building)
        elif char == '"':
            self._double_quoted(building)
        elif char == "$":
            self._dollar(building)
        elif char == "`":
            self._backticks(building)
        elif char in "<>":
            self._redirection(building)
        else:
            building.add(char)
            self.at += 1

    def _escape(self, building: _Building) -> None:
        following = self.peek(2)[1:]
        if not following:
            raise Unreadable("a lone backslash at the end")
        if following == "\n":  # a continued line
            building.space()
        else:
            building.add("\\" + following)
        self.at += 2

    def _single_quoted(self, building: _Building) -> None:
        end = self.text.find("'", self.at + 1)
        if end < 0:
            raise Unreadable("unbalanced single quote")
        building.add(self.text[self.at:end + 1])
        self.at = end + 1

    def _double_quoted(self, building: _Building) -> None:
        building.add('"')
        self.at += 1
        while self.at < len(self.text):
            char = self.text[self.at]
            if char == '"':
                building.add('"')
                self.at += 1
                return
            if char == "\\":
                building.add(self.peek(2))
                self.at += 2
            elif char == "$":
                self._dollar(building)
            elif char == "`":
                self._backticks(building)
            else:
                building.add(char)
                self.at += 1
        raise Unreadable("unbalanced double quote")

    def _dollar(self, building: _Building) -> None:
        two = self.peek(2)
        if two == "$(":
            if self.peek(3) == "$((":
                raise Unreadable("arithmetic expansion")
            self._nested(building, 2)
        elif two == "${":
            found = _PLAIN_PARAMETER.match(self.text, self.at + 1)
            if found is None:
                raise Unreadable("a ${...} expansion that holds more than a name")
            building.add("$" + found.group())
            self.at = found.end()
        elif two == "$'":
            self._ansi_quoted(building)
        else:
            building.add("$")
            self.at += 1

    def _nested(self, building: _Building, opener: int) -> None:
        """``$(``, ``<(`` or ``>(``: the commands inside count, and stay in this one."""
        start = self.at
        self.at += opener
        self.commands(closer=")")
        building.add(self.text[start:self.at])

    def _ansi_quoted(self, building: _Building) -> None:
        at = self.at + 2
        while at < len(self.text):
            if self.text[at] == "\\":
                at += 2
            elif self.text[at] == "'":
                building.add(self.text[self.at:at + 1])
                self.at = at + 1
                return
            else:
                at += 1
        raise Unreadable("unbalanced $'...' quote")

    def _backticks(self, building: _Building) -> None:
        end = self.text.find("`", self.at + 1)
        inner = self.text[self.at + 1:end]
        if end < 0 or "\\" in inner:
            raise Unreadable("backticks not closed, or holding an escape")
        nested = _Scanner(inner)
        nested.commands(closer=None)
        self.found.extend(nested.found)
        building.add(self.text[self.at:end + 1])
        self.at = end + 1

    def _redirection(self, building: _Building) -> None:
        """``<``, ``>``, ``>>``, ``>|``, ``&>``, ``<>``, ``>&N``, ``<<<``; a heredoc
        cannot be read, a process substitution's commands count."""
        rest = self.text[self.at:]
        if rest.startswith(("<(", ">(")):
            self._nested(building, 2)
            return
        if rest.startswith("<<<"):
            building.add("<<<")
            self.at += 3
            return
        if rest.startswith("<<"):
            raise Unreadable("a heredoc")
        operator = re.match(r"&>>?|>>|>\||<>|>&|<&|>|<", rest)
        assert operator is not None  # called at '<', '>' or '&>'
        text = operator.group()
        self.at += len(text)
        writes = ">" in text and _HARMLESS_TARGET.match(self.text, self.at - (
            1 if text.endswith("&") else 0)) is None
        building.add(text, guard=writes)
