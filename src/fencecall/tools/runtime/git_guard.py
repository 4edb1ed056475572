"""git with the repository's programs off, for runs nobody confirmed.

``git status``, ``diff``, ``log`` and ``show`` are read-only to the classifier, but a
repository's own ``.git/config`` can make them run any program: ``core.fsmonitor`` (status),
``diff.external``, a diff driver's ``command`` or ``textconv``, a filter's ``clean`` (status
and diff hash the work tree through it), ``log.showSignature`` with ``gpg.program``, hooks.
A hostile checkout plus an innocent model would be code execution nobody was asked about. So
a run nobody confirmed starts with :data:`GUARD`, which turns all of these off for every git
it starts, however spelled (``git``, ``/usr/bin/git``, ``xargs git``):

- the system and global files are not read (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL``);
- fixed settings go in ``GIT_CONFIG_PARAMETERS``, the variable of ``git -c``, which git
  keeps for the processes it starts in submodules too;
- drivers, whose names the repository chooses, are listed by ``git config`` (which runs no
  program) and emptied through ``GIT_CONFIG_COUNT``: an empty filter is no filter, a
  ``textconv`` of ``cat`` shows the file as it is, an emptied diff ``command`` fails with
  git's own "cannot run" rather than run anything;
- submodules are compared by commit only (``diff.ignoreSubmodules=dirty``), so no git runs
  inside one under that submodule's own settings.

The run is in the read-only sandbox too, without network: this keeps what the repository
wrote from running at all, not just from writing.
"""

from __future__ import annotations

import shlex

SETTINGS = {
    "core.fsmonitor": "false",
    "core.hooksPath": "/dev/null",
    "core.pager": "cat",
    "core.sshCommand": "ssh",
    "core.gitProxy": "",
    "core.askPass": "",
    "diff.external": "",
    "diff.ignoreSubmodules": "dirty",
    "log.showSignature": "false",
    "gpg.program": "gpg",
    "gpg.ssh.program": "ssh-keygen",
    "gpg.x509.program": "gpgsm",
    "credential.helper": "",
    "protocol.allow": "never",
    "uploadpack.packObjectsHook": "",
}
"""Settings that would run a program, each set to git's own default or to nothing."""

_DRIVERS = r"^(filter|diff|merge)\..+\.(clean|smudge|process|textconv|command|driver)$"

GUARD = f"""\
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_COUNT=0
export GIT_CONFIG_PARAMETERS={shlex.quote(" ".join(
    f"'{key}={value}'" for key, value in SETTINGS.items()))}
while IFS= read -r fencecall_key; do
    case $fencecall_key in *.textconv) fencecall_value=cat ;; *) fencecall_value= ;; esac
    export "GIT_CONFIG_KEY_$GIT_CONFIG_COUNT=$fencecall_key" \\
        "GIT_CONFIG_VALUE_$GIT_CONFIG_COUNT=$fencecall_value"
    GIT_CONFIG_COUNT=$((GIT_CONFIG_COUNT + 1))
done < <(command git config --name-only --get-regexp {shlex.quote(_DRIVERS)} 2>/dev/null)
unset fencecall_key fencecall_value
"""
"""Bash that sets up the environment of a run nobody confirmed (see the module's docstring).
It lists the drivers of the repository of the run's working directory: a ``git -C`` or a
``cd`` elsewhere is not read-only to the classifier."""
