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
_READ_ONLY_REMOTE = frozenset({"-v", "--verbose", "get-url"})
"""``git remote`` alone lists names; ``show``, ``update`` and ``prune`` ask the server."""
_GIT_ELSEWHERE = ("-c", "-C", "--exec", "--git-dir", "--work-tree", "--namespace",
                  "--config-env", "--super-prefix")
"""git's own options (before the subcommand) that make it run programs or read another
repository's settings (the guard of unconfirmed runs lists the drivers of the working
directory's repository only)."""
_GIT_RUNS = ("-O", "--open-files-in-pager")
"""``git grep`` options that run a program."""
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
    if name == "find":
        return not any(arg in _FIND_ACTIONS for arg in args)
    if name == "git":
        return _read_only_git(args)
    return True


def _read_only_git(args: list[str]) -> bool:
    at = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    if at is None or args[at] not in READ_ONLY_GIT or \
            any(a.startswith(_GIT_ELSEWHERE) for a in args[:at]) or \
            any(a.startswith(_GIT_RUNS) for a in args[at:]):
        return False
    if args[at] == "remote":
        return all(a in _READ_ONLY_REMOTE for a in args[at + 1:at + 2])
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
