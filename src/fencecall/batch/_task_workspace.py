"""A task's own workspace: made from its spec before the task, diffed after it.

Every task gets a fresh folder of its own (a copy, a clone, or files created), so two tasks
that write the same relative path never meet. The diff after the task runs git under the
task's sandbox: the model may have planted git configuration (an fsmonitor, a filter) that
runs commands, and they must not run with more rights than the model's own commands had.
git itself comes from the system's folders, never from a PATH entry inside the workspace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ..realpath import real_path
from ..sandbox import Sandbox, clean_path, host_program
from ..tools.runtime.file_io import atomic_write
from ..tools.workspace import locate
from ._tasks import WorkspaceSpec

GIT_TIMEOUT = 120.0
DIFF_LIMIT = 1_000_000
"""Characters of diff kept in a result; a longer one is cut, and says so."""
_SAFE_GIT = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
             "-c", "core.pager=cat", "-c", "diff.external=")


class WorkspaceError(Exception):
    """The workspace could not be made (a failed copy or clone); the task's result says so."""


def _git_env(cwd: Path) -> dict[str, str]:
    return {"PATH": clean_path(os.environ.get("PATH", os.defpath), [cwd]), "HOME": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_PAGER": "cat"}


def _git(argv: list[str], cwd: Path, sandbox: Sandbox | None = None) -> str:
    program = host_program("git", [cwd])
    if program is None:
        raise WorkspaceError("git is not installed (it is needed for git workspaces)")
    command = [program, *_SAFE_GIT, *argv]
    if sandbox is not None:
        command = sandbox.command(command, cwd=cwd)
    try:
        done = subprocess.run(command, cwd=cwd, env=_git_env(cwd), capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=GIT_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise WorkspaceError(f"git {argv[0]}: {err}") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise WorkspaceError(f"git {argv[0]} failed: {message[-1] if message else done.returncode}")
    return done.stdout.decode(errors="replace")


def prepare(spec: WorkspaceSpec, folder: Path) -> str | None:
    """Make ``folder`` (which must not exist) the task's workspace; returns the commit it
    starts from when it is a git repository with one, for the diff afterwards."""
    try:
        if spec.path is not None:
            shutil.copytree(spec.path, folder, symlinks=True)
        elif spec.git is not None:
            folder.parent.mkdir(parents=True, exist_ok=True)
            _git(["clone", "--quiet", "--no-checkout", "--", spec.git, str(folder)],
                 folder.parent)
            _git(["checkout", "--quiet", "--detach", spec.ref or "HEAD"], folder)
        else:
            folder.mkdir(parents=True)
        root = real_path(folder)
        for name, text in spec.files.items():  # a link the copy or clone holds stays inside
            with locate(name, [root]) as place:
                atomic_write(place, text)
    except (OSError, shutil.Error) as err:
        raise WorkspaceError(f"cannot make the workspace: {err}") from None
    if not (folder / ".git").exists():
        return None
    try:
        return _git(["rev-parse", "--verify", "--quiet", "HEAD"], folder).strip() or None
    except WorkspaceError:
        return None  # a repository without a commit yet: diffed against the empty tree


def diff(folder: Path, base: str | None, sandbox: Sandbox) -> str | None:
    """The changes in a repository workspace since ``base`` (new files included), or None
    when it is not a repository. Run in ``sandbox`` (writable: the workspace, for the index)."""
    if not (folder / ".git").exists():
        return None
    _git(["add", "--all", "--intent-to-add", "--", "."], folder, sandbox)
    if base is None:  # no commit to start from: every file is new
        base = _git(["hash-object", "-t", "tree", os.devnull], folder, sandbox).strip()
    text = _git(["diff", "--no-color", "--no-ext-diff", "--no-textconv", base], folder,
                sandbox)
    if len(text) > DIFF_LIMIT:
        text = text[:DIFF_LIMIT] + f"\n[diff cut at {DIFF_LIMIT} characters]\n"
    return text
