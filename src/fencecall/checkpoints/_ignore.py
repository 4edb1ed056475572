"""Which workspace paths a checkpoint leaves out: what the workspace's ``.gitignore`` files
ignore, as git reads them (a deeper file's rules win over its folder's parents', the last
matching line of a file wins, a folder that is ignored is not entered).

Only the ``.gitignore`` files in the workspace count: never the user's global excludes or a
repository's ``info/exclude``, which lie outside what the checkpoints record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

GITIGNORE = ".gitignore"


class Ignores:
    """The rules in force in one folder: each ``.gitignore`` from the workspace down to it,
    with the folder (relative, ``""`` or ending in ``/``) its patterns are relative to."""

    def __init__(self, rules: tuple[tuple[str, GitIgnoreSpec], ...] = ()) -> None:
        self._rules = rules

    def below(self, folder: str, text: str | None) -> Ignores:
        """The rules of ``folder`` (ending in ``/``, or ``""``), whose own ``.gitignore``
        holds ``text`` (None: it has none)."""
        if text is None:
            return self
        from pathspec import GitIgnoreSpec  # loaded by the first workspace that has rules

        spec = GitIgnoreSpec.from_lines(text.splitlines())
        return Ignores((*self._rules, (folder, spec)))

    def ignored(self, path: str, folder: bool) -> bool:
        """Whether ``path`` (relative to the workspace) is ignored; ``folder``: it is one."""
        for base, spec in reversed(self._rules):
            result = spec.check_file(path[len(base):] + ("/" if folder else ""))
            if result.include is not None:
                return bool(result.include)
        return False
