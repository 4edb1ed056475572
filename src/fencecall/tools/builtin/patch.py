"""The patch tool: targeted edits with ORIGINAL/UPDATED blocks."""

from __future__ import annotations

from contextlib import ExitStack

from ...errors import ToolError
from ...message import Message
from .._parameters import Parameter
from ..runtime.file_io import newline_of, printable, unified_diff
from ..runtime.patching import Hunk, apply_patch, parse_patch
from ..spec import Example, Hint, ToolInvocation, ToolSpec
from ..workspace import Place, display
from .file_write import allowed, named_path, read_text, target, write_file


def _patched(invocation: ToolInvocation, place: Place) -> tuple[str, str, int]:
    """(previous text, patched text, number of hunks); raises with a message for the model."""
    previous = read_text(invocation, place)
    name = display(place.path, invocation.context.roots)
    if previous is None:
        raise FileNotFoundError(f"{name} does not exist; use save to create it")
    hunks = parse_patch(invocation.kwargs["patch"])
    newline = newline_of(previous)
    if newline != "\n":  # the model writes \n; the file keeps its own line endings
        hunks = [Hunk(h.original.replace("\n", newline), h.updated.replace("\n", newline))
                 for h in hunks]
    return previous, apply_patch(previous, hunks, name), len(hunks)


def preview(invocation: ToolInvocation) -> str | None:
    try:
        with target(invocation) as place:
            previous, patched, _ = _patched(invocation, place)
    except (OSError, ValueError) as err:  # PatchError is a ValueError
        return f"the patch will fail: {err}"
    return unified_diff(previous, patched, display(place.path, invocation.context.roots))


def execute_patch(invocation: ToolInvocation) -> Message:
    with ExitStack() as held:
        try:
            place = held.enter_context(target(invocation))
            previous, patched, hunks = _patched(invocation, place)
        except (OSError, ValueError) as err:  # PatchError is a ValueError
            raise ToolError("patch failed, the file was not changed: "
                            f"{printable(str(err))}") from err
        return write_file(invocation, place, patched, previous,
                          lambda name: f"Patched {name} ({hunks} change(s)).")


HUNKS = ("<<<<<<< ORIGINAL\n(lines exactly as in the file)\n=======\n(new lines)\n"
         ">>>>>>> UPDATED\nEach ORIGINAL must match exactly one place. All parts apply or "
         "none do.")

tool = ToolSpec(
    name="patch",
    desc="Edit part of a file by replacing ORIGINAL lines with UPDATED lines.",
    instructions=(
        "patch holds one or more blocks of\n" + HUNKS),
    instructions_format={"markdown": "The langtag holds the path: ```patch path/to/file. "
                                     "The block holds one or more blocks of\n" + HUNKS},
    execute=execute_patch,
    parameters=(Parameter("path", description="File to edit."),
                Parameter("patch", description="ORIGINAL/UPDATED blocks.")),
    content_param="patch",
    argline_param="path",
    confirm=allowed,
    preview=preview,
    paths=named_path,
    hints=frozenset({Hint.FILES}),
    examples=(
        Example.call(path="hello.py", patch='<<<<<<< ORIGINAL\nprint("Hello world")\n=======\n'
                     'print("Hello, fencecall")\n>>>>>>> UPDATED'),
        Example.result("Patched hello.py (1 change(s))."),
    ),
)
