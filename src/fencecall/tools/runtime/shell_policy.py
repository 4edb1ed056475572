"""Which shell commands are read-only enough to run without asking."""

from __future__ import annotations

import shlex

READ_ONLY_COMMANDS = frozenset({
    "ls", "cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "pwd", "echo", "wc", "which",
    "file", "stat", "du", "df", "tree", "sort", "uniq", "cut", "tr", "date", "whoami", "uname",
    "printenv", "basename", "dirname", "realpath", "readlink", "true", "false", "diff", "cmp",
    "find", "git", "nl", "md5sum", "sha256sum", "id", "hostname",
})
READ_ONLY_GIT = frozenset({"status", "log", "diff", "show", "branch", "ls-files", "rev-parse",
                           "blame", "describe", "remote", "shortlog", "grep"})
_GIT_GLOBAL = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs",
                         "--no-replace-objects"})
"""The only options of git's own (before the subcommand) a read-only call may give: the
others read another repository (``-C``, ``--git-dir``, ``--bare``), set what runs (``-c``,
``--exec-path``, ``--config-env``) or change what counts as the repository."""
_GIT_RUNS = (("--open-files-in-pager", 4), ("--ext-diff", 4), ("--recurse-submodules", 4),
             ("--ignore-submodules", 4))
"""Subcommand options (with the shortest abbreviation git takes) that run a program or go
into a submodule under its own settings."""
_OTHERS_RUN = {"sort": (("--compress-program", 4),), "rg": (("--pre", 5),)}
"""Options of read-only commands that run a program of the caller's choosing."""
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint",
                           "-fprint0", "-fprintf", "-fls"})
_SEPARATORS = frozenset({";", "&&", "||", "|", "&"})
_WRITE_OPTIONS = frozenset({"-o", "--output"})


def _simple_commands(line: str) -> list[list[str]] | None:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token in _SEPARATORS:
            commands.append([])
        elif set(token) <= set("();<>|&"):
            return None  # redirection, subshell or grouping
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _read_only(words: list[str]) -> bool:
    name, args = words[0], words[1:]
    if name not in READ_ONLY_COMMANDS or "=" in name:
        return False
    if any(arg in _WRITE_OPTIONS or arg.startswith("--output=") for arg in args):
        return False
    if any(_abbreviates(arg, option, shortest) for arg in args
           for option, shortest in _OTHERS_RUN.get(name, ())):
        return False
    if name == "find":
        return not any(arg in _FIND_ACTIONS for arg in args)
    if name == "git":
        return _read_only_git(args)
    return True


def _abbreviates(arg: str, option: str, shortest: int) -> bool:
    """Whether ``arg`` is ``option`` or an abbreviation of it at least ``shortest`` long
    (GNU and git take any unambiguous prefix of a long option), with or without a value."""
    given = arg.split("=", 1)[0]
    return len(given) >= min(shortest, len(option)) and option.startswith(given)


def _read_only_git(args: list[str]) -> bool:
    at = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    if at is None or args[at] not in READ_ONLY_GIT or \
            any(a not in _GIT_GLOBAL for a in args[:at]):
        return False
    rest = args[at + 1:]
    if any(_abbreviates(a, option, shortest) for a in rest for option, shortest in _GIT_RUNS):
        return False
    if any(a.startswith("--submodule=") and a != "--submodule=short" for a in rest):
        return False
    if args[at] == "grep" and any(a.startswith("-") and not a.startswith("--") and "O" in a
                                  for a in rest):
        return False  # -O, alone or in a bundle (-iO): open the matches in a program
    if args[at] == "remote":
        while rest[:1] in (["-v"], ["--verbose"]):
            rest = rest[1:]
        return not rest or rest[0] == "get-url"
    return True


def is_read_only(command: str) -> bool:
    """True when every command on every line is on the read-only list.

    Anything clever (redirections, substitutions, subshells, variable assignments) is not
    read-only, so the user is asked; a false "no" costs a prompt, a false "yes" could cost data.
    """
    if "`" in command or "$(" in command or "<(" in command or ">(" in command:
        return False
    lines = [line for line in command.replace("\\\n", " ").splitlines() if line.strip()]
    if not lines:
        return False
    for line in lines:
        commands = _simple_commands(line)
        if not commands or not all(_read_only(words) for words in commands):
            return False
    return True
