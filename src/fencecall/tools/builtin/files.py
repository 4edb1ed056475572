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


# Comment syntax around a placeholder: "#", "//", "/* */", "<!-- -->", "--", ";", "%", a block
# comment's " * " lines and triple-quoted strings. "---" (YAML, Markdown) is no comment.
_OPENER = re.compile(r"""^(?:<!--|/\*+|//+|#+|--(?!-)|;+|%+|\*(?!\S)|"{3}|'{3})\s*""")
_CLOSER = re.compile(r"""\s*(?:-->|\*+/|"{3}|'{3})$""")
_BLOCK_OPENER = re.compile(r"""^(?:/\*|<!--|"{3}|'{3})""")
_ELLIPSIS = re.compile(r"\.{3,}|…")
_WORD = re.compile(r"[a-z]+")
_FILLER = re.compile(r"""[\s\d()\[\]{}<>.,:;!?'"/*\u2013\u2014-]*""")
# Words a placeholder is made of. A comment without an ellipsis must also say that text was
# left out (_LEFT_OUT), in one word only if that word says it alone (_ALONE): "# Other
# functions" or a heading "## Rest" are ordinary comments, "# rest unchanged" is not.
_ALONE = frozenset({"unchanged", "omitted", "elided", "unmodified", "untouched", "etc", "snip",
                    "snipped", "truncated"})
_LEFT_OUT = _ALONE | frozenset({"rest", "existing", "remaining", "same"})
_PLACEHOLDER_WORDS = _LEFT_OUT | frozenset({
    "previous", "original", "other", "more", "old", "your", "additional", "code", "file",
    "files", "function", "functions", "class", "classes", "method", "methods", "module",
    "content", "contents", "implementation", "line", "lines", "imports", "body", "logic",
    "definitions", "tests", "text", "section", "sections", "stuff", "here", "below", "above",
    "the", "of", "this", "is", "are", "remains", "remain", "stays", "stay", "as", "before",
    "keep", "kept", "everything", "else", "and", "so", "on", "goes", "go", "to", "be"})
_FEW_LINES = 5


def _placeholder_line(line: str, in_comment: bool) -> bool | None:
    """True for a line standing for left-out text ("# ... existing code", "[...]"), False
    for comment syntax alone ("/*", three quotes), None for anything else."""
    inner = _CLOSER.sub("", line)
    commented = in_comment or inner != line
    inner, marks = _OPENER.subn("", inner)
    commented = commented or bool(marks)
    if not inner:
        return False if commented else None
    lowered = inner.lower()
    elided = _ELLIPSIS.search(lowered) is not None
    rest = _ELLIPSIS.sub(" ", lowered)
    words = _WORD.findall(rest)
    if not _FILLER.fullmatch(_WORD.sub("", rest)) or not set(words) <= _PLACEHOLDER_WORDS:
        return None
    said = commented and bool(_LEFT_OUT & set(words)) and (len(words) > 1 or words[0] in _ALONE)
    return True if elided or said else None


def only_placeholder(text: str) -> str | None:
    """The content, when it is nothing but a placeholder ("# ...", "/* rest unchanged */",
    a bare "..."): writing it would leave a stub where text belongs. Real code is never that:
    a stub function ("def f(): ...") or prose with an ellipsis has other words around it."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or len(lines) > _FEW_LINES:
        return None
    in_comment = _BLOCK_OPENER.match(lines[0]) is not None
    kinds = [_placeholder_line(line, in_comment) for line in lines]
    if None in kinds or True not in kinds:
        return None
    return "\n".join(lines)


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
            atomic_write(place, text)
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
    path = place.path
    try:
        previous = read_text(invocation, place)
    except (ValueError, OSError) as err:
        raise ToolError(f"{invocation.spec.name}: {err}") from err
    why = refusal(invocation, previous, display(path, invocation.context.roots))
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


def refusal(invocation: ToolInvocation, previous: str | None, name: str) -> str | None:
    """Why the content must not be written, if it stands for text the model left out: a
    placeholder would replace the real text of a file, or be appended as if it were text."""
    content = invocation.kwargs["content"]
    stub = only_placeholder(content)
    if stub is not None and invocation.spec.name == "append":
        return (f"the content is only the placeholder {stub!r}, which adds no real text to "
                f"{name}. Send the text to add, written out in full (use patch to change part "
                "of a file).")
    if not previous:
        return None
    if stub is not None:
        return (f"the content is only the placeholder {stub!r}, which would replace the real "
                f"text of {name}. Send the file's whole content, or use patch to change part "
                "of it.")
    stand_in = placeholder_in(content)
    if stand_in is not None:
        return (f"the content holds the placeholder line {stand_in!r}, which would replace "
                f"real text of {name}. Send the whole content, or use patch to change part of "
                "the file.")
    return None


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
    "content is added after the file's last line, in the file's own line endings; a "
    "placeholder such as '# ...' is refused.",
    "The langtag holds the path: ```append path/to/file. The block is the text to add, "
    "written out (a placeholder such as '# ...' is refused).",
    (Example.call(path="notes.txt", content="another line"),
     Example.result("Appended 1 line(s) to notes.txt.")),
)
