"""Going back in a conversation: ``/undo``, ``/rewind`` and ``fencecall rewind``.

Each takes the conversation back to before one of its turns: the turn's messages and those
after it go, and so do the file changes the turns made, from the checkpoints recorded before
their calls (see :mod:`fencecall.checkpoints`). The files put back are listed. A file changed
since fencecall recorded it (by hand, or by a background job) is overwritten only when the
person says so: the chat asks, the command line refuses unless ``--force``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from rich.console import Console

from ..agent import Conversation
from ..agent.loop import CHECKPOINTS
from ..checkpoints import Checkpoints, Plan, Turn, recorded_workspace, turns
from ..config import load_config
from ..errors import UserError
from .visible import visible_text

Overwrite = Callable[[list[str]], bool]
"""Asked with the paths changed since they were recorded: whether to overwrite them."""


def turn_lines(found: Sequence[Turn]) -> list[str]:
    """One line per turn: its number, its prompt's first line, whether it changed files."""
    lines = []
    for turn in found:
        prompt = (turn.prompt.splitlines() or [""])[0]
        prompt = prompt if len(prompt) <= 60 else prompt[:57] + "..."
        files = "files recorded" if turn.before is not None else "no file changes recorded"
        lines.append(f"{turn.number:>3}. {prompt}  ({files})")
    return lines


def conversation_turns(conversation: Conversation,
                       checkpoints: Checkpoints | None) -> list[Turn]:
    messages = conversation.messages
    return checkpoints.turns(messages) if checkpoints is not None else turns(messages)


def go_back(conversation: Conversation, checkpoints: Checkpoints | None, number: int,
            overwrite: Overwrite) -> list[str]:
    """Take ``conversation`` (and the workspace) back to before turn ``number``; what to
    tell the person."""
    try:
        if checkpoints is None:
            found = turns(conversation.messages)
            plan = Plan(found[number - 1],
                        len(conversation.messages) - found[number - 1].index)
        else:
            plan = checkpoints.plan(conversation.messages, number)
        if plan.edited and not overwrite(plan.edited):
            return [f"Nothing was changed: {_listed(plan.edited)} changed since fencecall "
                    "recorded them."]
        problems = checkpoints.apply(plan) if checkpoints is not None else []
    except OSError as err:  # the workspace or the store cannot be read
        return [f"Nothing was changed: {err}"]
    removed = conversation.undo(plan.messages)
    lines = [f"Went back to before turn {number}: removed {len(removed)} "
             f"message{'' if len(removed) == 1 else 's'}."]
    if plan.changes:
        lines.append("Files put back as they were:")
        lines += [f"  {change}" for change in plan.changes]
    elif checkpoints is None:
        lines.append("No checkpoints are kept for this conversation: files are as they are.")
    else:
        lines.append("No file changes to undo.")
    if plan.not_kept:
        kept_out = sorted(plan.not_kept.items())
        lines.append("Left as they are (not kept in the checkpoints):")
        lines += [f"  {path}: {why}" for path, why in kept_out[:10]]
        lines += [f"  and {len(kept_out) - 10} more"] if len(kept_out) > 10 else []
    if problems:
        lines.append("Could not be put back:")
        lines += [f"  {problem}" for problem in problems]
    return lines


def _listed(paths: list[str]) -> str:
    shown = ", ".join(paths[:10])
    return shown + (f" and {len(paths) - 10} more" if len(paths) > 10 else "")


def edited_question(paths: list[str]) -> str:
    return (f"{_listed(paths)} changed since fencecall recorded "
            f"{'it' if len(paths) == 1 else 'them'} (by hand, or by a background job). "
            "Overwrite with the recorded version? [y/N] ")


def run(args: argparse.Namespace) -> int:
    """``fencecall rewind CONVERSATION [TURN] [--force]``."""
    config = load_config()
    console = Console(highlight=False)
    conversation = Conversation.open(config.home, args.conversation)
    try:
        checkpoints = _checkpoints_of(conversation)
        found = conversation_turns(conversation, checkpoints)
        if args.turn is None:
            if not found:
                console.print(f"Conversation {conversation.name} has no turns.")
            for line in turn_lines(found):
                console.print(visible_text(line))
            return 0
        if not 1 <= args.turn <= len(found):
            raise UserError(f"conversation {conversation.name} has turns 1 to {len(found)}; "
                            f"there is no turn {args.turn}" if found else
                            f"conversation {conversation.name} has no turns")

        def refuse(paths: list[str]) -> bool:
            if args.force:
                return True
            raise UserError(f"not rewound: {_listed(paths)} changed since fencecall recorded "
                            "them (by hand, or by a background job); pass --force to "
                            "overwrite them with the recorded versions")

        for line in go_back(conversation, checkpoints, args.turn, refuse):
            console.print(visible_text(line))
        return 0
    finally:
        conversation.close()


def _checkpoints_of(conversation: Conversation) -> Checkpoints | None:
    """The checkpoints of a conversation on disk, in the workspace they recorded (None:
    none were recorded)."""
    folder = conversation.folder
    kept = None if folder is None else folder / CHECKPOINTS
    workspace = None if kept is None else recorded_workspace(kept)
    if folder is None or kept is None or workspace is None:
        return None
    if not workspace.is_dir():
        raise UserError(f"conversation {conversation.name} worked in {workspace}, which is "
                        "not a folder now: its files cannot be put back")
    return Checkpoints(kept, workspace, excluded=(folder,))
