"""Every example in README.md and docs/*.md runs, so none can quietly go stale.

Each fenced block is one test, named ``FILE:LINE``:

- ``python``: run as a script in a fresh subprocess, in an empty folder, exit status 0; a
  ``print(...)`` line with a ``# comment`` must print the comment's text.
- ``toml``: parses, and loads as the configuration file (unknown keys are errors); each
  ``${VAR}`` it names gets a dummy value.
- ``json``: parses; one holding a ``prompt`` must also load as a batch task.
- shell blocks (no language, ``sh``, ``shell``, ``bash``, ``console``): each ``$ COMMAND`` line
  runs in turn, exit status 0, and the output shown under it must appear in the real output,
  line by line in order (blank lines, the rule after a tool's name and :data:`VOLATILE` values
  left out). A shell block with no ``$`` line has nothing to run and fails.

Every run gets a folder of its own, with ``FENCECALL_HOME`` and ``XDG_CONFIG_HOME`` inside
it, a copy of ``examples/`` in its working folder, and a fake OpenAI-compatible model server
(``FENCECALL_MODEL=local/fake``; ``openai/`` and ``anthropic/`` models are pointed at it too,
so no example reaches the network). ``/tmp/fencecall-demo`` becomes a folder of the run's.
A block that needs more (files, replies, a telemetry collector) gets it from :data:`SETUPS`.

A block that cannot run here is marked in the Markdown with ``<!-- not run: REASON -->`` on the
line before it; it is skipped with that reason (``pytest -rs`` lists them). Nothing else is
skipped: a block of any other language, unmarked, fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fencecall.batch._tasks import parse_tasks
from fencecall.config import load_config

from .docs_runner import (
    Block,
    blocks,
    commands,
    missing_output,
    run_command,
)
from .fakeserver import FakeModelServer, Reply
from .otlp import Receiver
from .support import F

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
ALL = [block for page in PAGES for block in blocks(page, ROOT)]

SHELL = {"", "sh", "shell", "bash", "console"}
DEMO = "/tmp/fencecall-demo"
"""The demo workspace the examples name; each run uses a folder of its own instead."""
VOLATILE = [re.compile(r'^\s*"(datetime|day_of_week)": ')]
"""Shown output that changes from run to run: the time server's clock."""
TIMEOUT = 60.0

TASKS = "\n".join(json.dumps(task) for task in [
    {"id": "hello", "prompt": "print hello with the shell"},
    {"id": "notes", "prompt": "read notes.txt", "workspace": {"files": {"notes.txt": "apple\n"}}},
]) + "\n"


@dataclass(frozen=True)
class Setup:
    """What one block needs beyond an empty folder and a model server that answers."""

    files: dict[str, str] = field(default_factory=dict)
    """Files to create in the working folder (relative path: text)."""
    folders: tuple[str, ...] = ()
    replies: tuple[Reply, ...] = ()
    """The fake model's replies, in order; once they run out it answers with a plain text."""
    otlp: bool = False
    """Start an OTLP/HTTP collector in place of the example's ``http://127.0.0.1:4318``, and
    require that it received spans."""


SETUPS: dict[str, Setup] = {
    # the batch API reads a tasks file
    "run_batch(load_tasks(": Setup(files={"tasks.jsonl": TASKS}),
    # the command line's tour: a shell call, its answer, then an answer after --resume
    "add a test for parse_args": Setup(replies=(
        Reply(f"{F}shell\nprintf 'def test_parse_args():\\n    pass\\n' > test_args.py\n{F}\n"),
        Reply("Added test_args.py."),
        Reply("Ran it with -v: it passes."),
    )),
    # batch on the command line, then the same command resuming
    "fencecall batch tasks.jsonl --out results.jsonl -m": Setup(files={"tasks.jsonl": TASKS}),
    # the agent of the configuration in one call: a shell call, then its answer
    "agent_from_config(max_steps=10": Setup(replies=(
        Reply(f"{F}shell\necho hello\n{F}\n"), Reply("It printed hello."),
    )),
    # a batch under limits of its own
    "--budget-tokens 2000000": Setup(files={"tasks.jsonl": TASKS}),
    # a task line naming a workspace to copy
    '"id": "fix-1"': Setup(folders=("repos/app",)),
    # an autonomous run: a reply that is no call gets a reminder; complete ends the task
    "--autonomous -y": Setup(replies=(
        Reply("TH"), Reply(f"{F}shell\necho hello\n{F}\n"),
        Reply(f"{F}complete\nPrinted hello with the shell.\n{F}\n"),
    )),
    # a script reading a run's JSON events: a shell call, then its answer
    '"--output-format", "stream-json"': Setup(replies=(
        Reply(f"{F}shell\necho hello\n{F}\n"), Reply("It printed hello."),
    )),
    # undo from the command line: a sed of a file, then the turn gone back to
    "fencecall rewind louder": Setup(files={"hello.txt": "hello\n"}, replies=(
        Reply(f"{F}shell\nsed -i 's/hello/HELLO/' hello.txt\n{F}\n"), Reply("HELLO."),
    )),
    # telemetry of a run of a saved reply, sent to a collector
    "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318": Setup(otlp=True),
}


def setup_of(block: Block) -> Setup:
    found = [setup for key, setup in SETUPS.items() if key in block.text]
    assert len(found) <= 1, f"{block.id}: more than one setup matches"
    return found[0] if found else Setup()


@dataclass
class Run:
    """The folders and environment of one example's run."""

    root: Path
    work: Path
    env: dict[str, str]
    server: FakeModelServer
    substitutions: dict[str, str]

    def substitute(self, text: str) -> str:
        for old, new in self.substitutions.items():
            text = text.replace(old, new)
        return text


@pytest.fixture
def example(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Run]:
    block: Block | None = getattr(request, "param", None)
    if block is not None and block.not_run is not None:
        pytest.skip(f"{block.id} (```{block.lang}) not run: {block.not_run}")
    setup = setup_of(block) if block is not None else Setup()
    root = tmp_path.resolve()
    work = root / "work"
    shutil.copytree(ROOT / "examples", work / "examples")
    for name, text in setup.files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    for folder in setup.folders:
        (work / folder).mkdir(parents=True)
    with ExitStack() as stack:
        server = stack.enter_context(FakeModelServer(list(setup.replies)))
        substitutions = {DEMO: str(root / "fencecall-demo")}
        receiver = None
        if setup.otlp:
            receiver = stack.enter_context(Receiver().running())
            substitutions["http://127.0.0.1:4318"] = receiver.url
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("FENCECALL_", "OPENAI_", "ANTHROPIC_", "OTEL_"))}
        env.update(
            FENCECALL_HOME=str(root / "home"), XDG_CONFIG_HOME=str(root / "config"),
            FENCECALL_MODEL="local/fake", FENCECALL_LOCAL_BASE_URL=server.openai_url,
            OPENAI_BASE_URL=server.openai_url, OPENAI_API_KEY="not-a-key",
            ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="not-a-key",
            OTEL_EXPORTER_OTLP_TIMEOUT="5", COLUMNS="80", PYTHONUNBUFFERED="1",
            PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
        yield Run(root, work, env, server, substitutions)
        if receiver is not None:
            assert receiver.spans, "the collector received no spans"


def _report(what: str, result: subprocess.CompletedProcess[str]) -> str:
    return (f"{what} exited {result.returncode}\n--- stdout ---\n{result.stdout}"
            f"\n--- stderr ---\n{result.stderr}")


def run_python(block: Block, run: Run) -> None:
    script = run.root / "example.py"
    script.write_text(block.text)
    result = subprocess.run([sys.executable, str(script)], cwd=run.work, env=run.env,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=TIMEOUT)
    assert result.returncode == 0, _report(block.id, result)
    printed = [m[1].strip() for m in re.finditer(r"^print\(.*\)\s+#\s*(.+)$", block.text, re.M)]
    missing = missing_output(printed, result.stdout)
    assert missing is None, f"{block.id}: the comment says {missing!r}\n" + _report(
        block.id, result)


def load_toml(block: Block, run: Run) -> None:
    tomllib.loads(block.text)
    path = run.root / "config.toml"
    path.write_text(block.text)
    env = {"FENCECALL_CONFIG": str(path), "FENCECALL_HOME": str(run.root / "home")}
    env |= {name: "dummy" for name in re.findall(r"\$\{(\w+)\}", block.text)}
    load_config(env)


def load_json(block: Block, run: Run) -> None:
    value = json.loads(block.text)
    if isinstance(value, dict) and "prompt" in value:
        parse_tasks([json.dumps(value)], base=run.work, source=block.id)


def run_shell(block: Block, run: Run) -> None:
    found = commands(block)
    assert found, (f"{block.id}: a shell block with no `$ ` line has nothing to run: write its "
                   "commands as `$ COMMAND`, or mark it <!-- not run: REASON -->")
    for command in found:
        line = run.substitute(command.line)
        result = run_command(line, cwd=run.work, env=run.env, timeout=TIMEOUT)
        assert result.returncode == 0, _report(f"{block.id}: $ {line}", result)
        shown = [run.substitute(text) for text in command.shown]
        missing = missing_output(shown, result.stdout, VOLATILE)
        assert missing is None, (f"{block.id}: $ {line}\nshown but not printed: {missing!r}\n"
                                 + _report("it", result))


RUNNERS = {"python": run_python, "toml": load_toml, "json": load_json,
           **{lang: run_shell for lang in SHELL}}


@pytest.mark.parametrize("example", ALL, ids=[block.id for block in ALL], indirect=True)
def test_example(example: Run, request: pytest.FixtureRequest) -> None:
    block: Block = request.node.callspec.params["example"]
    runner = RUNNERS.get(block.lang)
    assert runner is not None, (f"{block.id}: no way to run a ```{block.lang} block; give it a "
                                "runner here or mark it <!-- not run: REASON -->")
    runner(block, example)


def test_the_main_job_in_line_3(example: Run) -> None:
    """The README's first set-up line ends in the main job: it runs, and does what the reply
    says (the installing before it is what CI does)."""
    line = README.read_text().split("\n")[2]
    [setup] = re.findall(r"`([^`]*fencecall run[^`]*)`", line)
    [job] = [part.strip() for part in setup.split("&&") if part.strip().startswith("fencecall")]
    result = run_command(example.substitute(job), cwd=example.work, env=example.env,
                         timeout=TIMEOUT)
    assert result.returncode == 0, _report(job, result)
    assert "hello from fencecall" in result.stdout
    assert (example.root / "fencecall-demo" / "hello.py").is_file()


def test_the_ten_line_agent_runs_with_a_real_model_too(example: Run) -> None:
    """The comment's alternative works: get_provider with the configuration (here an
    ``openai/`` model pointed at the fake server)."""
    [agent] = [block for block in ALL if "Say hello with the shell." in block.text]
    comment = "# a real model instead: "
    [alternative] = [line.removeprefix(comment) for line in agent.text.splitlines()
                     if line.startswith(comment)]
    lines = [alternative if line.startswith("provider, model = ScriptedProvider(") else line
             for line in agent.text.splitlines()]
    lines.insert(0, "from fencecall import get_provider, load_config")
    example.server.replies[:] = [Reply(f"{F}shell\necho hello\n{F}\n"), Reply("It printed hello.")]
    run_python(Block(agent.file, agent.line, "python", "\n".join(lines) + "\n", None), example)
    assert [served.body["model"] for served in example.server.requests] == ["gpt-4o-mini"] * 2


def test_every_setup_is_for_one_block() -> None:
    for key in SETUPS:
        assert len([block for block in ALL if key in block.text]) == 1, key


def test_the_reader_finds_fences_as_commonmark_does(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text ```` ```inline ````\n\n<!-- not run: needs a key -->\n````python\n"
                    "x = '''\n```\n'''\n````\n  ```sh\n  $ fencecall list\n  ```\n")
    found = blocks(page, tmp_path)
    assert [(b.line, b.lang, b.text, b.not_run) for b in found] == [
        (4, "python", "x = '''\n```\n'''\n", "needs a key"),
        (9, "sh", "$ fencecall list\n", None)]
    [command] = commands(found[1])
    assert command.line == "fencecall list"
