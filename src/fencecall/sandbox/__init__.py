"""The operating-system sandbox: what confines, limits and ends the processes fencecall starts.

The tools' own checks are advice for an honest model; this package is what the kernel
enforces, whatever the model writes. It knows nothing of tools, sessions or formats (it sits
below :mod:`fencecall.tools`, which runs its shells and interpreters through it):

- :mod:`._bwrap`: the bubblewrap sandbox (:class:`Sandbox`, :class:`SandboxPolicy`), its
  probe and choice (:func:`sandbox_support`, :func:`choose_sandbox`), and a conversation's
  shared loopback (:func:`share_network`);
- :mod:`._netns`: that loopback, one private network namespace (:class:`SharedNetwork`);
- :mod:`._seccomp`: the filter of runs nobody confirmed (:func:`unconfirmed_filter`);
- :mod:`._resource_limits`: rlimits and control groups (:class:`ResourceLimits`);
- :mod:`._launch`: the small C program that joins a process's groups, sets its rlimits and
  enters its network in one exec, and holds a conversation's network namespace;
- :mod:`._processes`: starting sandboxed processes so that they die with fencecall, and
  finding and stopping them (:func:`start_process`, :class:`StartGate`);
- :mod:`.reaper`: the subreaper bash runs under, and killing process trees
  (:func:`reaped`, :func:`kill_tree`, :func:`freeze_and_kill`);
- :mod:`.scratch`: private folders that name their process, so a killed fencecall's are
  removed by the next one (:func:`make_scratch`);
- :mod:`.host_programs`: the programs fencecall starts on the host (bwrap, git, an MCP
  server), found where nothing the model wrote is (:func:`host_program`,
  :func:`clean_path`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._bwrap import (
        Sandbox,
        SandboxPolicy,
        SandboxSupport,
        choose_sandbox,
        sandbox_support,
        share_network,
    )
    from ._netns import SharedNetwork
    from ._processes import (
        ProcessInfo,
        SessionAborted,
        StartGate,
        kill_group,
        live_processes,
        readable,
        sandboxed_pid,
        start_process,
    )
    from ._resource_limits import GiB, MiB, ResourceLimits, sweep_groups_once
    from ._seccomp import unconfirmed_filter
    from .host_programs import clean_path, host_program
    from .reaper import freeze_and_kill, kill_tree, lone_child, reaped, tree
    from .scratch import make_scratch, remove_stale_once
else:
    __getattr__, __dir__ = lazy_names(__name__, {
        "._bwrap": ("Sandbox", "SandboxPolicy", "SandboxSupport", "choose_sandbox",
                    "sandbox_support", "share_network"),
        "._netns": ("SharedNetwork",),
        "._processes": ("ProcessInfo", "SessionAborted", "StartGate", "kill_group",
                        "live_processes", "readable", "sandboxed_pid", "start_process"),
        "._resource_limits": ("GiB", "MiB", "ResourceLimits", "sweep_groups_once"),
        "._seccomp": ("unconfirmed_filter",),
        ".host_programs": ("clean_path", "host_program"),
        ".reaper": ("freeze_and_kill", "kill_tree", "lone_child", "reaped", "tree"),
        ".scratch": ("make_scratch", "remove_stale_once"),
    })

__all__ = [
    "GiB",
    "MiB",
    "ProcessInfo",
    "ResourceLimits",
    "Sandbox",
    "SandboxPolicy",
    "SandboxSupport",
    "SessionAborted",
    "SharedNetwork",
    "StartGate",
    "choose_sandbox",
    "clean_path",
    "freeze_and_kill",
    "host_program",
    "kill_group",
    "kill_tree",
    "live_processes",
    "lone_child",
    "make_scratch",
    "readable",
    "reaped",
    "remove_stale_once",
    "sandbox_support",
    "sandboxed_pid",
    "share_network",
    "start_process",
    "sweep_groups_once",
    "tree",
    "unconfirmed_filter",
]
