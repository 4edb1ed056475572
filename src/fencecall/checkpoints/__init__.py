"""Checkpoints: the workspace's state recorded before each call that can write, in a store
kept in the conversation's folder, so a turn's file changes can be undone with its messages.

Not git: a small content-addressed store in Python (:mod:`._store`). Running git on the
workspace from outside the sandbox would let what the model or a repository wrote steer it
(config, hooks, ``filter=`` drivers in ``.gitattributes``, fsmonitor), each of which must be
switched off and stay off as git grows; reading the files by descriptor ourselves
(:mod:`._scan`) and writing them back the same way (:mod:`._restore`) leaves nothing to
steer, never follows a link the model planted, and never touches the workspace's ``.git``.
A stat cache keeps a checkpoint of a large workspace where little changed fast.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._keeper import Checkpoints, Plan, Turn, can_write, recorded_workspace, turns
    from ._restore import Change
    from ._scan import MAX_FILE, MAX_NEW, Scanner, TooManyFiles
    from ._store import Manifest, Store, StoreError
else:
    __getattr__, __dir__ = lazy_names(__name__, {
        "._keeper": ("Checkpoints", "Plan", "Turn", "can_write", "recorded_workspace", "turns"),
        "._restore": ("Change",),
        "._scan": ("MAX_FILE", "MAX_NEW", "Scanner", "TooManyFiles"),
        "._store": ("Manifest", "Store", "StoreError"),
    })

__all__ = [
    "MAX_FILE",
    "MAX_NEW",
    "Change",
    "Checkpoints",
    "Manifest",
    "Plan",
    "Scanner",
    "Store",
    "StoreError",
    "TooManyFiles",
    "Turn",
    "can_write",
    "recorded_workspace",
    "turns",
]
