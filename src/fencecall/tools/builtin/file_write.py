"""save and append: write files inside the workspace, atomically, after showing a diff."""

from __future__ import annotations

from collections.abc import Callable

from ...errors import ToolError
from ...message import Message, Status, system
from .._parameters import Parameter
from ..hook_points import FILE_POST_SAVE, FILE_PRE_SAVE, FileSave
from ..runtime.file_io import atomic_write, newline_of, printable, read_existing, unified_diff
from ..spec import Example, Hint, ToolInvocation, ToolSpec
from ..workspace import Place, display, locate
from ._environment_paths import in_workspace
from .placeholders import kind_of, only_placeholder, placeholder_lines

_NAMED = 5  # placeholder lines a refusal names by number

PATH_AND_CONTENT = (
    Parameter("path", description="File path, relative to the workspace."),
    Parameter("content", description="The text to write."),
)


def target(invocation: ToolInvocation) -> Place:
    """Where the call's path leads inside the roots (close it when done)."""
    return locate(in_workspace(invocation.kwargs["path"], invocation.context),
                  invocation.context.roots)


def named_path(invocation: ToolInvocation) -> list[str]:
    """The one path the call names (for permission rules)."""
    return [invocation.kwargs["path"]]


def allowed(invocation: ToolInvocation) -> bool:
    """Confirmation is only asked for paths the tool may write (others are refused)."""
    try:
        target(invocation).close()
    except (ValueError, OSError):  # OutsideWorkspace among them
        return False
    return True


def worth_asking(invocation: ToolInvocation) -> bool:
    """Confirmation is asked for writes the tool will make: not for a path it may not write,
    nor for content it refuses (the user is not shown a diff that will not happen)."""
    try:
        with target(invocation) as place:
            return refusal(invocation, place, read_text(invocation, place)) is None
    except (ValueError, OSError):  # OutsideWorkspace among them
        return False


def with_newline(text: str, newline: str = "\n") -> str:
    return text if not text or text.endswith("\n") else text + newline


def new_text(invocation: ToolInvocation, previous: str | None) -> str:
    """The file's text after the call. An append keeps every byte that was there, adds the
    missing final line end if need be, and writes in the file's own line endings."""
    content = invocation.kwargs["content"]
    if invocation.spec.name != "append" or not previous:
        return with_newline(content)
    newline = newline_of(previous)
    return with_newline(previous, newline) + with_newline(content.replace("\n", newline), newline)


def read_text(invocation: ToolInvocation, place: Place) -> str | None:
    """The text at ``place`` (None: no such file), checked on the disk as
    :func:`read_existing` checks it, and read from the editor where the session has one
    (its buffer may hold changes not saved yet)."""
    text = read_existing(place)
    editor = invocation.context.text_files
    return text if text is None or editor is None else editor.read(place.path)


def preview(invocation: ToolInvocation) -> str | None:
    try:
        with target(invocation) as place:
            previous = read_text(invocation, place)
    except (OSError, ValueError) as err:
        return str(err)
    name = display(place.path, invocation.context.roots)
    after = new_text(invocation, previous)
    if previous is None:
        return f"new file {name}:\n{printable(after)}"
    return unified_diff(previous, after, name) or f"{name}: no changes"


def write_file(invocation: ToolInvocation, place: Place, text: str, previous: str | None,
               done: Callable[[str], str]) -> Message:
    """Write through the file hooks: pre hooks may block, post hooks hear of the result."""
    context = invocation.context
    path = place.path
    pre = context.hooks.run(FILE_PRE_SAVE, FileSave(context, path, text, previous))
    notes = "".join(m.content + "\n\n" for m in pre.messages)
    if pre.blocked is not None:
        return system(f"{notes}Not written: {pre.blocked.reason}", Status.BLOCKED)
    editor = context.text_files
    try:
        if editor is None:
            atomic_write(place, text, None if context.environment is None
                         else context.environment.owner)
        else:
            editor.write(path, text)
    except OSError as err:
        raise ToolError(f"{invocation.spec.name}: not written: {err}") from err
    post = context.hooks.run(FILE_POST_SAVE, FileSave(context, path, text, previous))
    extra = "".join("\n\n" + m.content for m in post.messages)
    return system(notes + done(display(path, context.roots)) + extra)


def execute_write(invocation: ToolInvocation) -> Message:
    try:
        place = target(invocation)
    except (ValueError, OSError) as err:
        raise ToolError(f"{invocation.spec.name}: {err}") from err
    with place:
        return _write(invocation, place)


def _write(invocation: ToolInvocation, place: Place) -> Message:
    try:
        previous = read_text(invocation, place)
    except (ValueError, OSError) as err:
        raise ToolError(f"{invocation.spec.name}: {err}") from err
    why = refusal(invocation, place, previous)
    if why is not None:
        raise ToolError(f"{invocation.spec.name}: not written: {why}")
    text = new_text(invocation, previous)
    lines = text.count("\n")
    if invocation.spec.name == "append":
        added = with_newline(invocation.kwargs["content"]).count("\n")
        return write_file(invocation, place, text, previous,
                          lambda name: f"Appended {added} line(s) to {name}.")
    verb = "Created" if previous is None else "Saved"
    return write_file(invocation, place, text, previous,
                      lambda name: f"{verb} {name} ({lines} lines).")


def refusal(invocation: ToolInvocation, place: Place, previous: str | None) -> str | None:
    """Why the content must not be written, if it stands for text the model left out: a
    placeholder would replace the real text of a file, or be appended as if it were text. A
    save may create (or fill an empty) file holding one: a stub loses nothing there."""
    content = invocation.kwargs["content"]
    name = display(place.path, invocation.context.roots)
    appending = invocation.spec.name == "append"
    stub = only_placeholder(content)
    if stub is not None and appending:
        return (f"the content is only the placeholder {stub!r}, which adds no real text to "
                f"{name}. Send the text to add, written out in full (use patch to change part "
                "of a file).")
    if not previous and not appending:
        return None
    if stub is not None:
        return (f"the content is only the placeholder {stub!r}, which would replace the real "
                f"text of {name}. Send the file's whole content, or use patch to change part "
                "of it.")
    found = placeholder_lines(content, kind_of(place.path))
    if not found:
        return None
    (number, line), others = found[0], [number for number, _ in found[1:]]
    said = f"line {number} of the content, {line!r}, is a placeholder for text left out"
    said += _also(others)
    if not appending:
        return (f"{said}, and would replace the real text of {name}: {name} is unchanged. "
                "Write the whole file out, or use patch to change part of it.")
    left = f"{name} is unchanged" if previous is not None else f"{name} was not created"
    return (f"{said}, which adds no real text to {name}: {left}. Send the text to add, written "
            "out in full (use patch to change part of a file).")


def _also(numbers: list[int]) -> str:
    """The other placeholder lines, the first few by number: " (so are lines 4, 9 and 12)"."""
    if len(numbers) < 2:
        return "".join(f" (so is line {number})" for number in numbers)
    shown = [str(number) for number in numbers[:_NAMED]]
    last = f"{len(numbers) - _NAMED} more" if len(numbers) > _NAMED else shown.pop()
    return f" (so are lines {', '.join(shown)} and {last})"


def _file_tool(name: str, desc: str, instructions: str, markdown: str,
               examples: tuple[Example, ...], load_priority: int = 0) -> ToolSpec:
    return ToolSpec(name=name, desc=desc, instructions=instructions, load_priority=load_priority,
                    instructions_format={"markdown": markdown}, examples=examples,
                    execute=execute_write, parameters=PATH_AND_CONTENT, content_param="content",
                    argline_param="path", confirm=worth_asking, preview=preview,
                    paths=named_path,
                    hints=frozenset({Hint.FILES}))


save = _file_tool(
    "save", "Write a file (replacing it), creating folders as needed.",
    "content is the complete new content of the file: never leave parts out with a "
    "placeholder such as '# ... rest of the code' (use patch to change part of a file).",
    "The langtag holds the path: ```save path/to/file. The block is the complete new content "
    "of the file: never leave parts out with a placeholder such as '# ... rest of the code' "
    "(use patch to change part of a file).",
    (Example.user("write a hello world script"),
     Example.call(path="hello.py", content='print("Hello world")'),
     Example.result("Created hello.py (1 lines).")),
    load_priority=-10,
)

append = _file_tool(
    "append", "Append text to the end of a file, creating it if needed.",
    "content is added after the file's last line, in the file's own line endings; a "
    "placeholder such as '# ...' is refused.",
    "The langtag holds the path: ```append path/to/file. The block is the text to add, "
    "written out (a placeholder such as '# ...' is refused).",
    (Example.call(path="notes.txt", content="another line"),
     Example.result("Appended 1 line(s) to notes.txt.")),
)
