"""What fencecall makes of real models' replies: the calls it finds, and the ones it loses.

Run: ``python -m benchmarks.real_replies`` (``--corpus PATH``, by default
``../shared/real-replies/replies.jsonl`` beside the repository; ``--limit N`` for a quick run
on the first N replies of each model; ``--json PATH`` to save the rows and each reply's
outcome). The corpus (see its README) holds 6,160 assistant replies from public
mini-swe-agent and SWE-agent trajectories, each with ``ref``: what the original agent's parser
made of it, the one action it ran or the format error it reported.

Each reply is read as fencecall's agent loop reads a finished reply, in the format a user
would configure for that model: markdown (the default) for mini-swe-agent's ```` ```bash ````
protocol, SWE-agent's ``thought_action`` and the visible text of native tool-call agents, and
both ``qwen3-coder`` and ``auto`` for SWE-agent's ``xml_function_calling``
(``<function=bash>``, two rows). The default tools (shell, ipython, save, append, patch,
read) are loaded. The loop runs the first call that resolves to a use (a block whose langtag
names a runnable tool; any named call, even of a tool the toolchain lacks, since it gets an
answer); with none, it says the parser's diagnostics that concern a tool, and with none of
those, the near-miss feedback (:func:`fencecall.agent._near_miss.near_misses`).

Each reply gets one outcome; the seven add up to the replies:

- same call: the call run is the one action the original agent ran;
- wrong call: a call ran and it is not that action (for a native agent, any call: its calls
  went through the API, so the visible text holds none to run);
- call, ref erred: a call ran where the original agent reported a format error (mini-swe-agent
  wants exactly one ```` ```bash ```` block; fencecall runs the first runnable one);
- told, ref erred / told, ref ran: no call ran, and the model was told why (a diagnostic or
  near-miss feedback), where the original agent reported a format error too, or ran an action;
- silent: no call, nothing said, and the reply holds something call-like (:func:`call_like`);
- quiet: no call, nothing said, nothing call-like.

"agrees" counts the replies where fencecall did what the original agent did: the same call;
told where it reported a format error; for a native agent, no call and not silent (told or
quiet). "stream diffs" counts replies for which :class:`fencecall.StreamParser`, fed the
reply in chunks (of 8 characters, and of 1, 2, 3, 5, ... 34 in turn), finds other calls or
diagnostics than parsing the whole text (the loop streams); it should be 0.

How a call is compared with ``ref``: each side becomes a tool name and its arguments. A
block type names its tool (```` ```bash ```` and ``<function=bash>`` are ``shell``); a named
call of a tool the toolchain lacks (``str_replace_editor``, ``submit``) keeps the name
written, since finding the call is the parser's job and having the tool is configuration. A
block's arguments are what its tool binds from it (its content is the shell's ``command``),
defaults left out; a named call's are its parameters. The ref's action: mini-swe-agent's and
thought_action's is the command of a ``shell`` call; xml_function_calling's is SWE-agent's
rendering of the call, ``bash``'s command as it is, other tools' as ``NAME POSITIONAL...
--FLAG VALUE...`` in shell quoting, which is split back (``shlex``) into the parameters of
SWE-agent's ``str_replace_editor`` (:data:`SWE_AGENT_POSITIONAL`, :data:`SWE_AGENT_FLAGS`).
Values are compared after normalising whitespace: line ends to ``\\n``, trailing spaces cut
from each line, and the value stripped at both ends (mini-swe-agent strips the action, and
SWE-agent's recorded actions strip each value, so indentation on a value's first line cannot
be told from the ref). An array (``view_range``) is compared as SWE-agent writes it, its
items joined by spaces.

A reply is call-like when it holds a fenced block whose langtag, or for a bare fence the
first word of its first line, names a runnable tool or one of its block types, a shell-ish
language or python (:data:`CALL_LIKE_WORDS`); or ``<function=``, ``<tool_call>``, or
``@TOOL(`` for a runnable tool. Fences are found here by a plain line scan (opening and
closing fences, any indentation), not by the parser under test.

Throughput: each row's replies go through the loop's reading (parse, then the near-miss
feedback where the loop asks for it), timed with :func:`benchmarks.timing.compare` (a
warm-up, then rounds taking each row in turn, median and fastest of the same runs), in MB/s
of reply text (characters, as the other benchmarks count them); "best" is the fastest run.
The total row reads each reply once, in the first format listed for its protocol
(xml_function_calling as qwen3-coder), and is timed as a case of its own.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import platform
import re
import shlex
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fencecall import Diagnostic, StreamParser, ToolCall, Toolchain, parse
from fencecall.agent._near_miss import near_misses
from fencecall.execution._pipeline import resolve
from fencecall.parsing import _compiled as compiled

from .timing import compare, mb_per_s

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "real-replies" / "replies.jsonl"
TOOLS = ("shell", "ipython", "save", "append", "patch", "read")
FORMATS_FOR: dict[str, tuple[str, ...]] = {
    "mini-swe-agent bash": ("markdown",),
    "SWE-agent thought_action": ("markdown",),
    "SWE-agent xml_function_calling": ("qwen3-coder", "auto"),
    "SWE-agent function_calling (native)": ("markdown",),
    "mini-swe-agent toolcall (native)": ("markdown",),
}
"""The formats a user would configure for each protocol's model; the total row reads each
reply once, in the first."""

SWE_AGENT_POSITIONAL = {"str_replace_editor": ("command", "path")}
"""Parameters SWE-agent renders in its recorded action by position, per tool."""
SWE_AGENT_FLAGS = frozenset({"--file_text", "--old_str", "--new_str", "--view_range",
                             "--insert_line"})
"""Parameters SWE-agent renders as ``--NAME VALUE`` (``str_replace_editor``'s optional ones)."""

CALL_LIKE_WORDS = frozenset({
    "python", "python3", "py3", "pycon", "ipython",
    "zsh", "ksh", "fish", "console", "terminal", "cmd", "powershell", "pwsh", "ps1", "bat",
    "shell-session", "sh-session", "bash-session",
})
"""Words that make a block call-like besides the runnable tools' names and block types."""

SAME, WRONG, CALL_REF_ERRED = "same call", "wrong call", "call, ref erred"
TOLD_REF_ERRED, TOLD_REF_RAN, SILENT, QUIET = ("told, ref erred", "told, ref ran", "silent",
                                               "quiet")
OUTCOMES = (SAME, WRONG, CALL_REF_ERRED, TOLD_REF_ERRED, TOLD_REF_RAN, SILENT, QUIET)
CHUNKINGS: tuple[tuple[int, ...], ...] = ((8,), (1, 2, 3, 5, 8, 13, 21, 34))
"""Chunk sizes for the streaming check, each sequence taken in turn and repeated."""

_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")
_TOOL_TAGS = re.compile(r"<function=|<tool_call>")
Key = tuple[str, tuple[tuple[str, str], ...]]
Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    line: int
    """1-based line of the corpus file."""
    model: str
    agent: str
    text: str
    ref: Mapping[str, Any]

    @property
    def native(self) -> bool:
        return self.agent.endswith("(native)")

    @property
    def ref_erred(self) -> bool:
        return self.ref.get("error") is not None


@dataclass(frozen=True, slots=True)
class Reading:
    """What the loop does with a finished reply: the call it runs, else what it says."""

    call: ToolCall | None
    told: list[Diagnostic]
    misses: list[str]
    """Each near miss's kind and what it names (``language-tag: The ```python block``)."""


@dataclass(frozen=True, slots=True)
class Judged:
    outcome: str
    why: str = ""


def load(path: Path, limit: int | None = None) -> list[Reply]:
    """The corpus's replies, in file order; with ``limit``, the first that many of each
    model. A model name's leading ``@`` (23 Gemini replies) is dropped."""
    replies: list[Reply] = []
    per_model: Counter[str] = Counter()
    with path.open(encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            record = json.loads(line)
            model = str(record["model"]).lstrip("@")
            if limit is not None and per_model[model] >= limit:
                continue
            per_model[model] += 1
            replies.append(Reply(number, model, record["agent"], record["text"], record["ref"]))
    return replies


class Reader:
    """Reads replies in one format as the loop does, with the default tools."""

    def __init__(self, fmt: str, toolchain: Toolchain):
        self.fmt = fmt
        self.toolchain = toolchain

    def read(self, text: str) -> Reading:
        parsed = parse(text, self.fmt)
        for call in parsed.calls:
            if resolve(call, self.toolchain) is not None:
                return Reading(call, [], [])
        told = [d for d in parsed.diagnostics if self._concerns_a_tool(d)]
        if told:
            return Reading(None, told, [])
        return Reading(None, [], [f"{miss.kind}: {miss.written}"
                                  for miss in near_misses(text, self.fmt, self.toolchain)])

    def read_all(self, texts: Sequence[str]) -> int:
        """Every reply read in turn (the timed work); the number of calls found."""
        read = self.read
        return sum(read(text).call is not None for text in texts)

    def _concerns_a_tool(self, diagnostic: Diagnostic) -> bool:
        """As the pipeline judges it: an unclosed block matters only if it names a tool."""
        if not diagnostic.codeblock or diagnostic.name is None:
            return True
        return resolve(ToolCall(diagnostic.name), self.toolchain) is not None


def normalise(value: object) -> str:
    """A value as compared: an array's items joined by spaces, line ends ``\\n``, trailing
    spaces cut from each line, stripped at both ends."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value) if value.lstrip().startswith("[") else None
        except ValueError:
            decoded = None
        value = decoded if isinstance(decoded, list) else value
    if isinstance(value, list):
        value = " ".join(str(item) for item in value)
    text = str(value).replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def tool_name(name: str, toolchain: Toolchain) -> str:
    """The tool ``name`` stands for: a tool's name, or a block type's tool, or itself."""
    spec = toolchain.get(name) or toolchain.for_langtag(name)
    return spec.name if spec is not None else name


def key_of(name: str, arguments: Mapping[str, object], toolchain: Toolchain) -> Key:
    return tool_name(name, toolchain), tuple(sorted(
        (param, normalise(value)) for param, value in arguments.items()))


def found_key(call: ToolCall, toolchain: Toolchain) -> Key:
    """A call as its tool would get it (defaults left out), or as written if it has none."""
    spec = toolchain.for_langtag(call.name) if call.is_codeblock else toolchain.get(call.name)
    if spec is None:
        return key_of(call.name, call.kwargs, toolchain)
    try:
        bound = spec.bind(call.argline, call.content, call.kwargs)
    except ValueError:
        bound = {"argline": call.argline, "content": call.content, **call.kwargs}
    defaults = {p.name: p.default for p in spec.parameters if not p.required}
    return key_of(spec.name, {name: value for name, value in bound.items()
                              if name not in defaults or value != defaults[name]}, toolchain)


def expected_key(reply: Reply, toolchain: Toolchain) -> Key | None:
    """The one action the original agent ran, as a key; None for a native agent (no call in
    the text) or a format error."""
    if reply.native or reply.ref_erred:
        return None
    action = str(reply.ref["action"])
    function = reply.ref.get("function")
    if function is None or function == "bash":  # the command as written
        return key_of("shell", {"command": action}, toolchain)
    words = shlex.split(action)
    assert words[0] == function, f"line {reply.line}: {action[:60]!r}"
    positional: list[str] = []
    flags: dict[str, list[str]] = {}
    flag = None
    for word in words[1:]:
        if word in SWE_AGENT_FLAGS:
            flag = word[2:]
            flags[flag] = []
        elif flag is None:
            positional.append(word)
        else:
            flags[flag].append(word)
    arguments = dict(zip(SWE_AGENT_POSITIONAL.get(function, ()), positional, strict=True))
    arguments.update({name: " ".join(values) for name, values in flags.items()})
    return key_of(function, arguments, toolchain)


def call_like(text: str, toolchain: Toolchain) -> str | None:
    """What makes ``text`` call-like (the first such thing, said briefly), or None."""
    words = set(CALL_LIKE_WORDS)
    for spec in toolchain.tools:
        if spec.is_runnable:
            words.add(spec.name)
            words.update(spec.block_types)
    for fence, info, first in _fenced_blocks(text):
        word = info.split()[0].lower() if info.split() else ""
        if word in words:
            return f"{fence}{word} block"
        head = first.split()[0].lower() if not word and first.split() else ""
        if head in words:
            return f"bare {fence} block starting {first.strip()[:40]!r}"
    tag = _TOOL_TAGS.search(text)
    if tag:
        return tag.group()
    for name in sorted(words & {spec.name for spec in toolchain.tools}):
        if f"@{name}(" in text:
            return f"@{name}("
    return None


def _fenced_blocks(text: str) -> Iterator[tuple[str, str, str]]:
    """Each fenced block's fence, info string and first line, by a plain scan of the lines:
    a fence opens a block, and a fence of the same character, at least as long and with
    nothing after it, closes it (a block left open runs to the end)."""
    open_fence = ""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(lines):
        match = _FENCE.fullmatch(line)
        if match is None:
            continue
        fence, info = match.group(1), match.group(2).strip()
        if open_fence:
            if fence[0] == open_fence[0] and len(fence) >= len(open_fence) and not info:
                open_fence = ""
            continue
        if fence[0] == "`" and "`" in info:
            continue  # inline code, not a fence
        open_fence = fence
        yield fence, info, lines[number + 1] if number + 1 < len(lines) else ""


def judge(reply: Reply, reading: Reading, toolchain: Toolchain) -> Judged:
    if reading.call is not None:
        if reply.ref_erred:
            return Judged(CALL_REF_ERRED, f"ran {_written(reading.call)}; ref: "
                                          f"{str(reply.ref['error'])[:60]}")
        expected = expected_key(reply, toolchain)
        found = found_key(reading.call, toolchain)
        if found == expected:
            return Judged(SAME)
        return Judged(WRONG, f"ran {_written(reading.call)}; " + (
            "ref: no call in the text (native)" if expected is None
            else _difference(found, expected)))
    if reading.told or reading.misses:
        said = (f"{reading.told[0].kind} diagnostic: {reading.told[0].message[:80]}"
                if reading.told else "near miss " + "; ".join(reading.misses))
        return Judged(TOLD_REF_ERRED if reply.ref_erred else TOLD_REF_RAN, said)
    why = call_like(reply.text, toolchain)
    return Judged(SILENT, why) if why else Judged(QUIET)


def _written(call: ToolCall) -> str:
    return f"```{call.name} block" if call.is_codeblock else f"{call.format} call {call.name}"


def _difference(found: Key, expected: Key) -> str:
    if found[0] != expected[0]:
        return f"tool {found[0]}, ref {expected[0]}"
    ours, theirs = dict(found[1]), dict(expected[1])
    names = [name for name in sorted({*ours, *theirs}) if ours.get(name) != theirs.get(name)]
    return f"{', '.join(names)} " + ("differ" if len(names) > 1 else "differs")


def agrees(reply: Reply, judged: Judged) -> bool:
    if reply.native:
        return judged.outcome in (TOLD_REF_RAN, QUIET)
    return judged.outcome in (SAME, TOLD_REF_ERRED)


def streams_alike(text: str, fmt: str) -> bool:
    """Whether streaming ``text`` in each chunking finds the whole text's calls and
    diagnostics."""
    whole = parse(text, fmt)
    for sizes in CHUNKINGS:
        parser = StreamParser(fmt)
        calls: list[ToolCall] = []
        start = step = 0
        while start < len(text):
            size = sizes[step % len(sizes)]
            calls += parser.feed(text[start : start + size])
            start, step = start + size, step + 1
        calls += parser.finish()
        if calls != whole.calls or parser.diagnostics != whole.diagnostics:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Group:
    """The replies of one row, and the format they are read in."""

    model: str
    agent: str
    fmt: str
    replies: tuple[Reply, ...]

    @property
    def texts(self) -> list[str]:
        return [reply.text for reply in self.replies]


def groups(replies: Sequence[Reply]) -> list[Group]:
    """One group per model and format, in corpus order."""
    by_row: dict[tuple[str, str, str], list[Reply]] = {}
    for reply in replies:
        for fmt in FORMATS_FOR[reply.agent]:
            by_row.setdefault((reply.model, reply.agent, fmt), []).append(reply)
    return [Group(model, agent, fmt, tuple(found))
            for (model, agent, fmt), found in by_row.items()]


def measure(replies: Sequence[Reply], *, budget: float = 5.0, min_runs: int = 5,
            max_runs: int = 15) -> tuple[list[Row], list[Row]]:
    """The table's rows (one per model and format, then the total), and a record of each
    reply whose outcome is not the same call or that streamed otherwise."""
    toolchain = Toolchain.build(list(TOOLS))
    readers = {fmt: Reader(fmt, toolchain) for formats in FORMATS_FOR.values()
               for fmt in formats}
    rows: list[Row] = []
    records: list[Row] = []
    cases: dict[str, Callable[[], object]] = {}
    for group in groups(replies):
        reader = readers[group.fmt]
        row: Row = {"model": group.model, "agent": group.agent, "format": group.fmt,
                    "replies": len(group.replies), **dict.fromkeys(OUTCOMES, 0),
                    "agrees": 0, "stream diffs": 0, "chars": 0}
        for reply in group.replies:
            judged = judge(reply, reader.read(reply.text), toolchain)
            alike = streams_alike(reply.text, group.fmt)
            row[judged.outcome] += 1
            row["agrees"] += agrees(reply, judged)
            row["stream diffs"] += not alike
            row["chars"] += len(reply.text)
            if judged.outcome != SAME or not alike:
                records.append({"line": reply.line, "model": reply.model, "format": group.fmt,
                                "outcome": judged.outcome, "why": judged.why,
                                "call-like": call_like(reply.text, toolchain),
                                "streams alike": alike})
        rows.append(row)
        cases[f"{group.model}, {group.fmt}"] = functools.partial(reader.read_all, group.texts)
    rows.append(_total(rows))
    cases["total"] = functools.partial(_read_each_once, readers, replies)
    timings = compare(cases, budget=budget, min_runs=min_runs, max_runs=max_runs)
    for row, timing in zip(rows, timings.values(), strict=True):
        row["MB/s median"] = mb_per_s(row["chars"], timing.median)
        row["MB/s best"] = mb_per_s(row["chars"], timing.min)
        row["runs"] = timing.runs
    return rows, records


def _total(rows: Sequence[Row]) -> Row:
    """The sum of the rows that read their replies in the first format configured."""
    firsts = [row for row in rows if row["format"] == FORMATS_FOR[row["agent"]][0]]
    counted = ("replies", *OUTCOMES, "agrees", "stream diffs", "chars")
    return {"model": "total", "agent": "all, each reply once",
            "format": "/".join(sorted({row["format"] for row in firsts})),
            **{column: sum(row[column] for row in firsts) for column in counted}}


def _read_each_once(readers: Mapping[str, Reader], replies: Sequence[Reply]) -> int:
    return sum(readers[FORMATS_FOR[reply.agent][0]].read(reply.text).call is not None
               for reply in replies)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


COLUMNS = ("model", "agent", "format", "replies", *OUTCOMES, "agrees", "stream diffs", "MB",
           "MB/s median", "MB/s best", "runs")


def table(rows: Sequence[Row]) -> str:
    """The rows as a markdown table, numbers right-aligned."""
    align = ["---" if column in ("model", "agent", "format") else "---:" for column in COLUMNS]
    lines = ["| " + " | ".join(COLUMNS) + " |", "| " + " | ".join(align) + " |"]
    for row in rows:
        cells = {**row, "MB": f"{row['chars'] / 1e6:.2f}"}
        lines.append("| " + " | ".join(_cell(cells[column]) for column in COLUMNS) + " |")
    return "\n".join(lines)


def header(corpus: Path, replies: Sequence[Reply], limit: int | None) -> str:
    chars = sum(len(reply.text) for reply in replies)
    size = f"{len(replies):,} replies, {chars / 1e6:.2f} MB" + (
        f" (--limit {limit} per model)" if limit is not None else "")
    parser = "compiled (mypyc)" if compiled.active() else "as plain Python (not compiled)"
    return (f"# python -m benchmarks.real_replies, {datetime.now(UTC):%Y-%m-%d}, "
            f"{os.cpu_count() or 0} cores {platform.machine()}, Python "
            f"{platform.python_version()}, parser {parser}, fencecall {_revision()}, "
            f"corpus {corpus.name}: {size}")


def _revision() -> str:
    """The commit the working tree is at; where fencecall's sources differ from it, a digest
    of them (what was measured, while they are being changed)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--", "src")
    except (OSError, subprocess.CalledProcessError):
        return "(no git)"
    if not changed:
        return commit
    digest = hashlib.sha256()
    for source in sorted((REPO / "src").rglob("*.py")):
        digest.update(str(source.relative_to(REPO)).encode() + b"\0" + source.read_bytes())
    return f"{commit} + uncommitted changes in src (sources sha256 {digest.hexdigest()[:12]})"


def main(argv: Sequence[str] | None = None) -> None:
    options = argparse.ArgumentParser(prog="python -m benchmarks.real_replies",
                                      description=__doc__.split("\n")[0] if __doc__ else None)
    options.add_argument("--corpus", type=Path, default=CORPUS,
                         help="replies.jsonl (default: %(default)s)")
    options.add_argument("--limit", type=int, default=None, metavar="N",
                         help="read only the first N replies of each model")
    options.add_argument("--json", type=Path, default=None, metavar="PATH",
                         help="also save the rows and each reply's outcome here")
    options.add_argument("--budget", type=float, default=5.0, metavar="SECONDS",
                         help="about how long the timed rounds may take (default: "
                              "%(default)s; at least 5 runs, at most 15)")
    args = options.parse_args(argv)
    if not args.corpus.is_file():
        raise SystemExit(f"no corpus at {args.corpus} (see --corpus)")
    replies = load(args.corpus, args.limit)
    top = header(args.corpus, replies, args.limit)
    print(top + "\n", flush=True)
    rows, records = measure(replies, budget=args.budget)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({"header": top, "columns": COLUMNS, "rows": rows,
                                         "replies": records}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
