"""The read tool: show text files with line numbers, in bounded pieces, and image files as
images."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ...errors import ToolError
from ...images import keep, media_type, scratch_folder
from ...message import ImageRef, Message, system
from ...parsing import UnrepresentableCall
from .._parameters import Parameter
from ..runtime.file_io import decode, encode, is_binary, open_existing, printable, read_fd
from ..runtime.output import cut_note
from ..spec import Example, Hint, ToolInvocation, ToolSpec, render_call
from ..workspace import Place, display, locate
from ._environment_paths import in_workspace

MAX_BYTES = 10_000_000
MAX_LINES = 2_000
MAX_LINE_CHARS = 2_000
"""Longer lines are cut in the middle: one minified 9 MB line must not reach a model whole."""
MAX_CHARS = 60_000
"""What one call returns at most; the rest is offered with a call that reads on."""

Read = tuple[str, tuple[ImageRef, ...]]
"""What reading one file gives: the text the result shows, and the images it shows."""


def _validated_range(start: int | None, end: int | None) -> tuple[int, int | None]:
    if start is not None and start < 1:
        raise ToolError(f"read: start must be 1 or more (lines are numbered from 1), got {start}")
    if end is not None and end < 1:
        raise ToolError(f"read: end must be 1 or more, got {end}")
    first = start or 1
    if end is not None and end < first:
        raise ToolError(f"read: end ({end}) is before start ({first})")
    return first, end


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    half = MAX_LINE_CHARS // 2
    return f"{line[:half]} {cut_note(len(line) - 2 * half)} {line[-half:]}"


def _read_on(invocation: ToolInvocation, path: str, start: int, end: int | None) -> str:
    """A call that reads on from ``start``, in the syntax the model used."""
    kwargs = {"path": path, "start": start, **({"end": end} if end is not None else {})}
    words = " ".join([path, str(start), *([str(end)] if end is not None else [])])
    try:
        return render_call(invocation.spec, kwargs, invocation.call.format)
    except (UnrepresentableCall, ValueError):  # markdown: the range goes on the langtag
        return render_call(invocation.spec, {"path": words}, invocation.call.format)


def _contents(place: Place, name: str) -> tuple[bytes, int]:
    """The file's bytes and size, read through the descriptor the checks were made on."""
    if place.info is not None and stat.S_ISDIR(place.info.st_mode):
        raise ToolError(f"read: {name} is a directory; use shell `ls` to list it.")
    opened = open_existing(place)
    if opened is None:
        raise ToolError(f"read: {name} does not exist.")
    fd, info = opened
    if info.st_size > MAX_BYTES:
        os.close(fd)
        raise ToolError(f"read: {name} is {info.st_size} bytes, over the {MAX_BYTES}-byte "
                        "limit; use shell tools (head, grep) to look at parts of it.")
    return read_fd(fd, MAX_BYTES), info.st_size


def _image(name: str, data: bytes) -> Read:
    """An image file as an image the model sees (a model without vision gets a note)."""
    try:
        image = keep(data, scratch_folder(), name)
    except ValueError as err:
        raise ToolError(f"read: {err}") from err
    return (f"{name}: an image ({image.media_type}, "
            f"{image.width}×{image.height} pixels)", (image,))  # noqa: RUF001


def read_one(invocation: ToolInvocation, given: str, start: int | None,
             end: int | None) -> Read:
    """One file's text (or image) as the result shows it."""
    text = _read_text(invocation, given, start, end)
    return text if isinstance(text, tuple) else (text, ())


def _read_text(invocation: ToolInvocation, given: str, start: int | None,
               end: int | None) -> str | Read:
    roots = invocation.context.readable_roots
    first, last_asked = _validated_range(start, end)
    try:
        with locate(in_workspace(given, invocation.context), roots) as place:
            name = display(place.path, roots)
            data, size = _contents(place, name)
            editor = invocation.context.text_files
            if editor is not None and not is_binary(data):  # its buffer, maybe unsaved
                data = encode(editor.read(place.path))
    except (ValueError, OSError) as err:  # OutsideWorkspace among them
        raise ToolError(f"read: {err}") from err
    if media_type(data) is not None:
        return _image(name, data)
    if is_binary(data):
        return f"read: {name} is a binary file ({size} bytes); not shown."
    lines = printable(decode(data)).splitlines()
    if not lines:
        return f"{name} (empty)"
    if first > len(lines):
        raise ToolError(f"read: {name} has {len(lines)} lines; line {first} does not exist.")
    last = min(len(lines), last_asked or len(lines), first + MAX_LINES - 1)
    width = len(str(last))
    shown: list[str] = []
    size = 0
    for number in range(first, last + 1):
        row = f"{number:>{width}}  {_cut(lines[number - 1])}"
        if shown and size + len(row) > MAX_CHARS:
            last = number - 1
            break
        shown.append(row)
        size += len(row) + 1
    body = "\n".join(shown)
    wanted_last = min(len(lines), last_asked or len(lines))
    more = ""
    if last < wanted_last:
        call = _read_on(invocation, given, last + 1, last_asked)
        more = f"\n[{wanted_last - last} more lines; read on with:]\n{call}"
    return f"{name} (lines {first}-{last} of {len(lines)}):\n{body}{more}"


def _requests(invocation: ToolInvocation) -> list[tuple[str, int | None, int | None]]:
    """Each file the call names, with its range, in order: the langtag's (``path``) first,
    then the block's lines (``paths``). Every line is read as a langtag is, so models that
    write one path per line (as gptme taught them) and those that write ``read a.py b.py``
    are both understood."""
    kwargs = invocation.kwargs
    text = f"{kwargs.get('path') or ''}\n{kwargs.get('paths') or ''}"
    requests: list[tuple[str, int | None, int | None]] = []
    for line in filter(None, map(str.strip, text.splitlines())):
        paths, start, end = _paths_and_range(line, kwargs.get("start"), kwargs.get("end"),
                                             invocation.context.readable_roots)
        requests += [(path, start, end) for path in paths]
    if not requests:
        raise ToolError("read: no path given; name the file to read (several: separated by "
                        "spaces, or one per line).")
    return requests


def _paths_and_range(given: str, start: int | None, end: int | None,
                     roots: tuple[Path, ...]) -> tuple[list[str], int | None, int | None]:
    """The paths one line names, and its range. ``a.py b.py`` reads both; trailing numbers
    (``a.py 10 40``) are the range, unless a file is so named or the range was given apart."""
    if _exists(given, roots):
        return [given], start, end
    words = given.split()
    numbers: list[int] = []
    while len(words) > 1 and words[-1].isdigit() and len(numbers) < 2:
        numbers.insert(0, int(words.pop()))
    if numbers and start is None and end is None:
        start, end = numbers[0], (numbers[1] if len(numbers) == 2 else None)
    elif numbers:
        words += [str(n) for n in numbers]
    return words or [given], start, end


def _exists(given: str, roots: tuple[Path, ...]) -> bool:
    try:
        with locate(given, roots) as place:
            return place.info is not None and not place.missing
    except (ValueError, OSError):
        return False


def requested_paths(invocation: ToolInvocation) -> list[str]:
    """The paths the call reads (for permission rules); none where it names none."""
    try:
        return [path for path, _, _ in _requests(invocation)]
    except ToolError:
        return []


def execute_read(invocation: ToolInvocation) -> Message:
    requests = _requests(invocation)
    if len(requests) == 1:
        text, images = read_one(invocation, *requests[0])
        return system(text, images=images)
    parts: list[str] = []
    found: list[ImageRef] = []
    for path, start, end in requests:
        try:
            text, images = read_one(invocation, path, start, end)
        except ToolError as err:
            text, images = str(err), ()
        parts.append(text)
        found += images
    return system("\n\n".join(parts), images=tuple(found))


tool = ToolSpec(
    name="read",
    desc="Show text files with line numbers, optionally only lines START to END; image "
         "files (png, jpeg, gif, webp) as images.",
    instructions="Several paths (separated by spaces, or one per line) read each file in "
                 "turn. Long files come in pieces; the result says how to read on.",
    instructions_format={"markdown": (
        "The langtag holds the path: ```read path/to/file, or ```read path/to/file START END. "
        "Several files: paths separated by spaces, or one per line in the block (each line may "
        "end with its own START END). Long files come in pieces; the result says how to read "
        "on.")},
    execute=execute_read,
    parameters=(
        Parameter("path", description="File to read (or several, separated by spaces or one "
                                       "per line).", required=False),
        Parameter("start", "integer", "First line to show (1-based).", required=False),
        Parameter("end", "integer", "Last line to show.", required=False),
        Parameter("paths", description="More files to read, one per line (in markdown, the "
                                        "block's body).", required=False),
    ),
    content_param="paths",
    argline_param="path",
    paths=requested_paths,
    hints=frozenset({Hint.FILES, Hint.READ_ONLY}),
    examples=(Example.call(path="hello.py"),
              Example.result('hello.py (lines 1-1 of 1):\n1  print("Hello world")')),
)
