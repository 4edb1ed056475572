"""save and append: write files inside the workspace, atomically, after showing a diff."""

from __future__ import annotations

import re
from collections.abc import Callable

from ...errors import ToolError
from ...message import Message, Status, system
from ..arguments import Parameter
from ..events import FILE_POST_SAVE, FILE_PRE_SAVE, FileSave
from ..runtime.files import atomic_write, newline_of, printable, read_existing, unified_diff
from ..spec import Example, ToolInvocation, ToolSpec
from ..workspace import Place, display, locate

PATH_AND_CONTENT = (
    Parameter("path", description="File path, relative to the workspace."),
    Parameter("content", description="The text to write."),
)


def target(invocation: ToolInvocation) -> Place:
    """Where the call's path leads inside the roots (close it when done)."""
    return locate(invocation.kwargs["path"], invocation.context.roots)


def allowed(invocation: ToolInvocation) -> bool:
    """Confirmation is only asked for paths the tool may write (others are refused)."""
    try:
        target(invocation).close()
    except (ValueError, OSError):  # OutsideWorkspace among them
        return False
    return True


# A comment or ellipsis line standing for code the model did not write out.
_PLACEHOLDER = re.compile(
    r"(?im)^[ \t]*(?:#|//|/\*|<!--|--|;|\*)[ \t]*(?:\.\.\.|…)?[ \t]*\(?[ \t]*(?:"
    r"(?:the[ \t]+)?rest[ \t]+of[ \t]+(?:the[ \t]+)?(?:code|file|function|class|module|"
    r"content|implementation|methods?)"
    r"|(?:existing|previous|original|remaining|other|unchanged)[ \t]+(?:code|content|lines|"
    r"functions|methods|implementation|imports)"
    r"|(?:code|content|everything[ \t]+else|the[ \t]+rest)[ \t]+(?:remains?|stays?|is)"
    r"[ \t]+(?:the[ \t]+same|unchanged|as[ \t]+(?:before|is))"
    r")\b.{0,40}$"
    r"|^[ \t]*(?:\.\.\.|…)[ \t]*\(?(?:rest|existing|remaining|unchanged|same)\b.{0,60}$")


def placeholder_in(text: str) -> str | None:
    """The first line that stands for code left out ("# ... rest of the code"), if any."""
    match = _PLACEHOLDER.search(text)
    return match.group().strip() if match else None


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


def preview(invocation: ToolInvocation) -> str | None:
    try:
        with target(invocation) as place:
            previous = read_existing(place)
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
    try:
        atomic_write(place, text)
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
    path = place.path
    try:
        previous = read_existing(place)
    except (ValueError, OSError) as err:
        raise ToolError(f"{invocation.spec.name}: {err}") from err
    stand_in = placeholder_in(invocation.kwargs["content"]) if previous else None
    if stand_in is not None:
        raise ToolError(f"{invocation.spec.name}: not written: the content holds the "
                        f"placeholder line {stand_in!r}, which would replace real text of "
                        f"{display(path, invocation.context.roots)}. Send the whole content, "
                        "or use patch to change part of the file.")
    text = new_text(invocation, previous)
    lines = text.count("\n")
    if invocation.spec.name == "append":
        added = with_newline(invocation.kwargs["content"]).count("\n")
        return write_file(invocation, place, text, previous,
                          lambda name: f"Appended {added} line(s) to {name}.")
    verb = "Created" if previous is None else "Saved"
    return write_file(invocation, place, text, previous,
                      lambda name: f"{verb} {name} ({lines} lines).")


def _file_tool(name: str, desc: str, instructions: str, markdown: str,
               examples: tuple[Example, ...], load_priority: int = 0) -> ToolSpec:
    return ToolSpec(name=name, desc=desc, instructions=instructions, load_priority=load_priority,
                    instructions_format={"markdown": markdown}, examples=examples,
                    execute=execute_write, parameters=PATH_AND_CONTENT, content_param="content",
                    argline_param="path", confirm=allowed, preview=preview,
                    hints=frozenset({"files"}))


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
    "content is added after the file's last line, in the file's own line endings.",
    "The langtag holds the path: ```append path/to/file. The block is the text to add.",
    (Example.call(path="notes.txt", content="another line"),
     Example.result("Appended 1 line(s) to notes.txt.")),
)
