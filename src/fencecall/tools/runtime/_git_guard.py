"""git with the repository's programs off, for runs nobody confirmed.

``git status``, ``diff``, ``log`` and ``show`` are read-only to the classifier, but a
repository's own ``.git/config`` can make them run any program: ``core.fsmonitor`` (status),
``diff.external``, a diff driver's ``command`` or ``textconv``, a filter's ``clean`` (status
and diff hash the work tree through it), ``log.showSignature`` with ``gpg.program``, hooks.
A hostile checkout plus an innocent model would be code execution nobody was asked about. So
a run nobody confirmed starts with :data:`GUARD`, which turns all of these off for every git
it starts, however spelled (``git``, ``/usr/bin/git``, ``xargs git``):

- every ``GIT_*`` variable the shell exported is dropped (``GIT_CONFIG``, ``GIT_DIR``,
  ``GIT_EXTERNAL_DIFF``...), and the system and global files are not read
  (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL``);
- fixed settings go in ``GIT_CONFIG_PARAMETERS``, the variable of ``git -c``, which git
  keeps for the processes it starts in submodules too;
- ``diff.external`` and drivers, whose names the repository chooses, are listed by ``git
  config`` (which runs no program) and emptied through ``GIT_CONFIG_COUNT`` where the
  repository sets them (git 2.39 takes an empty ``diff.external`` for a command, so it is
  not emptied where nothing set it): an empty filter is no filter, a ``textconv`` of ``cat``
  shows the file as it is, an emptied diff ``command`` fails with git's own "cannot run"
  rather than run anything;
- submodules are compared by commit only (``diff.ignoreSubmodules``, and each submodule of
  ``.gitmodules`` with ``ignore = dirty``, which outranks its own setting there), so no git
  runs inside one under that submodule's own settings.

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
    "diff.ignoreSubmodules": "dirty",
    "diff.submodule": "short",
    "status.submoduleSummary": "false",
    "submodule.recurse": "false",
    "log.showSignature": "false",
    "gpg.program": "gpg",
    "gpg.ssh.program": "ssh-keygen",
    "gpg.x509.program": "gpgsm",
    "credential.helper": "",
    "protocol.allow": "never",
}
"""Settings that would run a program, each set to git's own default or to nothing."""

_PROGRAMS = (r"^(diff\.external|(filter|diff|merge)\..+\.(clean|smudge|process|textconv|command"
             r"|driver))$")
_SUBMODULES = r"^submodule\..+\.path$"

GUARD = f"""\
for fencecall_name in $(compgen -e GIT_); do unset "$fencecall_name"; done
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_COUNT=0
export GIT_CONFIG_PARAMETERS={shlex.quote(" ".join(
    f"'{key}={value}'" for key, value in SETTINGS.items()))}
fencecall_off() {{
    export "GIT_CONFIG_KEY_$GIT_CONFIG_COUNT=$1" "GIT_CONFIG_VALUE_$GIT_CONFIG_COUNT=$2"
    GIT_CONFIG_COUNT=$((GIT_CONFIG_COUNT + 1))
}}
while IFS= read -r fencecall_name; do
    case $fencecall_name in *.textconv) fencecall_off "$fencecall_name" cat ;;
        *) fencecall_off "$fencecall_name" "" ;; esac
done < <(command git config --name-only --get-regexp {shlex.quote(_PROGRAMS)} 2>/dev/null)
[[ -e .gitmodules ]] && while IFS= read -r fencecall_name; do
    fencecall_name=${{fencecall_name%.path}}
    fencecall_off "$fencecall_name.ignore" dirty
done < <(command git config --file .gitmodules --name-only --get-regexp {shlex.quote(_SUBMODULES)} \
         2>/dev/null)
unset -f fencecall_off
unset fencecall_name
"""
"""Bash that sets up the environment of a run nobody confirmed (see the module's docstring).
It lists the drivers of the repository of the run's working directory: a ``git -C``, a
``--git-dir`` or a ``cd`` elsewhere is not read-only to the classifier. Without a
``.gitmodules`` there (the ``git config --file`` would read nothing) no git is started for
submodules: every read-only run pays for this script."""
