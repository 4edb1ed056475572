"""User hooks: the user's own commands, run at a session's events, as Claude Code's hooks.

Declared in the configuration file only (``[[hooks]]``: :mod:`._declaration`), each is run
on the host with a time limit and capped output (:mod:`._runner`), handed the event as JSON
on stdin, and its exit status and reply read as Claude Code reads them (:mod:`._verdict`);
:class:`UserHooks` puts them on a session's hook points (:mod:`._adapters`).
"""

from typing import TYPE_CHECKING

from ..._lazy import lazy_names

if TYPE_CHECKING:
    from ._adapters import UserHooks
    from ._declaration import (
        DEFAULT_TIMEOUT,
        HOOK_EVENTS,
        HookDeclarationError,
        HookEvent,
        UserHook,
        read_hooks,
    )
    from ._runner import OUTPUT_CAP
else:
    __getattr__, __dir__ = lazy_names(__name__, {
        "._adapters": ("UserHooks",),
        "._declaration": ("DEFAULT_TIMEOUT", "HOOK_EVENTS", "HookDeclarationError", "HookEvent",
                          "UserHook", "read_hooks"),
        "._runner": ("OUTPUT_CAP",),
    })

__all__ = [
    "DEFAULT_TIMEOUT",
    "HOOK_EVENTS",
    "OUTPUT_CAP",
    "HookDeclarationError",
    "HookEvent",
    "UserHook",
    "UserHooks",
    "read_hooks",
]
