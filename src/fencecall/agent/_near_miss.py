"""Near misses: a reply that meant to run something, written in a form no tool answers to.

Small models often write ```` ```python ```` where the python tool answers to ``ipython``, put
the tool's name on the first line of a bare fence, or write calls in another format than the
one they were taught. Nothing of that runs, and nobody would tell them why; instead the model
gets one short message naming what did not run and the exact form that would.

Which language tags simply run is a deliberate choice: a tool's own tags run (``py`` for
python, ``bash`` and ``sh`` for shell), while the tags in :data:`RUN_AS` only get feedback,
since models also write such blocks to show code, not to run it. A block no tool was named
for never runs.

Blocks are found by the parser's own fence rules (:func:`~fencecall.parsing.parse_codeblocks`,
and its report of a block never closed), so what the feedback sees is what the parser saw.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..parsing import CallFormat, UnrepresentableCall, get_format, parse, parse_codeblocks
from ..parsing.model import FENCED
from ..tools import Toolchain, ToolSpec, render_call

RUN_AS: dict[str, str] = {
    "python": "ipython", "python3": "ipython", "py3": "ipython", "pycon": "ipython",
    "zsh": "shell", "console": "shell", "shell-session": "shell", "sh-session": "shell",
    "bash-session": "shell", "terminal": "shell", "cmd": "shell", "fish": "shell",
}
"""Language tags models write for code they mean to run, and the tool that runs such code."""

SHOWN = 300
"""Characters of a block's content repeated in the message; longer content is cut."""

_OTHER_FORMATS = ("xml", "tool")


@dataclass(frozen=True, slots=True)
class NearMiss:
    """One attempt that did not run: what was written, why, and the form that would run."""

    kind: str
    """``language-tag``, ``bare-fence`` or ``other-format``."""
    written: str
    why: str
    fix: str

    def message(self) -> str:
        return f"{self.written} was not run: {self.why}. To run it, write:\n{self.fix}"


def near_misses(text: str, fmt: CallFormat | str, toolchain: Toolchain) -> list[NearMiss]:
    """The near misses in a finished reply (one that ran no tool), in order. A format with
    native function calling has none: such models call through the API, and code blocks in
    their answers are there to be read."""
    target = get_format(fmt)
    if target.native:
        return []
    found = list(_fenced(text, target, toolchain))
    if target.by_langtag:
        found += _other_formats(text, target, toolchain)
    return found


def _blocks(text: str) -> Iterator[tuple[str, str, str]]:
    """Each fenced block of ``text`` as the parser reads it (its fence, langtag and content),
    a block left open at the end included (its content runs to the end)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # as the parser's offsets are
    for block in parse_codeblocks(text):
        yield _fence_at(text, block.start), block.lang, block.content
    for diagnostic in parse(text).diagnostics:
        if diagnostic.kind == "unclosed" and diagnostic.codeblock:
            header, _, content = text[diagnostic.start :].partition("\n")
            fence = _fence_at(text, diagnostic.start)
            yield fence, header[len(fence) :].strip(), content.removesuffix("\n")


def _fence_at(text: str, start: int) -> str:
    """The run of backticks or tildes that opens the block at ``start``."""
    mark = text[start]
    end = start
    while end < len(text) and text[end] == mark:
        end += 1
    return text[start:end]


def _fenced(text: str, target: CallFormat, toolchain: Toolchain) -> Iterator[NearMiss]:
    for fence, info, content in _blocks(text):
        word, _, argline = info.partition(" ")
        spec = toolchain.for_langtag(word) if word else None
        if spec is not None and spec.is_runnable:
            if not target.by_langtag:
                yield _miss("other-format", f"The {fence}{word} block", spec, argline, content,
                            target, f"in this conversation tools are called in the "
                                    f"{target.name} format, not with code blocks")
            continue  # in markdown it ran, or the parser already said why not
        if word:
            tool = RUN_AS.get(word.lower()) or word.lower()
            spec = toolchain.for_langtag(tool)
            if spec is not None and spec.is_runnable:
                yield _miss("language-tag", f"The {fence}{word} block", spec, argline, content,
                            target, f"no tool answers to {word!r}; the {spec.name} tool runs "
                                    f"blocks tagged {spec.block_types[0]!r}")
            continue
        first, _, rest = content.partition("\n")
        name, _, args = first.strip().partition(" ")
        written = f"The {fence} block starting with {first.strip()!r}"
        if name.lower() in RUN_AS and args.strip():  # ``python app.py``: a command line
            spec = toolchain.for_langtag("shell")
            if spec is not None and spec.is_runnable:
                yield _miss("bare-fence", written, spec, "", content, target,
                            "a bare fence runs nothing; a command goes in a block tagged "
                            f"{spec.block_types[0]!r}")
            continue
        tool = RUN_AS.get(name.lower(), name) if name else ""
        spec = toolchain.for_langtag(tool) if tool else None
        if spec is not None and spec.is_runnable:
            yield _miss("bare-fence", written, spec, args.strip(), rest, target,
                        "a tool's name goes on the fence line itself, not on the first line "
                        "inside the block")


def _other_formats(text: str, target: CallFormat, toolchain: Toolchain) -> Iterator[NearMiss]:
    """Calls written in another text format than the model was taught (XML in markdown)."""
    for name in _OTHER_FORMATS:
        if name == target.name:
            continue
        for call in parse(text, name).calls:
            if call.format == FENCED:
                continue  # a fenced block the other format also reads: _fenced's to judge
            spec = toolchain.get(call.name)
            if spec is None or not spec.is_runnable:
                continue
            try:
                kwargs = spec.bind(call.argline, call.content, call.kwargs)
            except ValueError:
                kwargs = {}
            yield NearMiss("other-format", f"The {name} call of {spec.name}",
                           f"in this conversation tools are called in the {target.name} "
                           "format", _render(spec, kwargs, target))


def _miss(kind: str, written: str, spec: ToolSpec, argline: str, content: str,
          target: CallFormat, why: str) -> NearMiss:
    shown = content if len(content) <= SHOWN else content[:SHOWN] + "\n…"
    try:
        kwargs = spec.bind(argline, shown, {})
    except ValueError:
        kwargs = {}
    return NearMiss(kind, written, why, _render(spec, kwargs, target))


def _render(spec: ToolSpec, kwargs: dict[str, object], target: CallFormat) -> str:
    defaults = {p.name: p.default for p in spec.parameters if not p.required}
    kwargs = {name: value for name, value in kwargs.items()  # the form, not its defaults
              if name not in defaults or value != defaults[name]}
    try:
        return render_call(spec, kwargs, target)
    except (UnrepresentableCall, ValueError):
        return render_call(spec, {}, target) if not spec.parameters else (
            f"a call of {spec.name} in the {target.name} format (see the instructions)")
