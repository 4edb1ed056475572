"""End to end with a real small model: ``fencecall chat`` through the real OpenAI client
against llama.cpp's server. What the model writes is its own; what is checked is that
fencecall parses the stream, stores the conversation, answers near misses, and never crashes,
in each text format and prompt form."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fencecall.agent import RUN_AS

TASKS = ["Print hello with the shell tool.", "Use Python to compute 17 * 23.",
         "Create a file notes.txt containing the word apple."]


def _chat(base_url: str, tmp_path: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FENCECALL_", "OPENAI_", "ANTHROPIC_"))}
    env.update(FENCECALL_HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               FENCECALL_LOCAL_BASE_URL=base_url)
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "fencecall.cli.main", "chat", "-y", "--model", "local/smollm2",
         "--workspace", str(workspace), "--name", name, "--max-steps", "3",
         "--max-tokens", "160", "--context-window", "2048", *args],
        env=env, capture_output=True, text=True, timeout=600)


def _log(tmp_path: Path, name: str) -> list[dict[str, object]]:
    path = tmp_path / "home" / "conversations" / name / "conversation.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in records if r["op"] == "message"]


@pytest.mark.parametrize(("fmt", "prompt", "tasks"), [
    ("markdown", "compact", TASKS), ("markdown", "full", TASKS[:1]), ("xml", "compact", TASKS[:1]),
])
def test_a_real_small_model_drives_the_chat(llama_server_url: str, tmp_path: Path, fmt: str,
                                            prompt: str, tasks: list[str]) -> None:
    for index, task in enumerate(tasks):
        name = f"{fmt}-{prompt}-{index}"
        result = _chat(llama_server_url, tmp_path, name, "--format", fmt, "--prompt", prompt,
                       "--temperature", "0", task)
        # done, the step limit or giving up (a small model often does): never a crash
        assert result.returncode in (0, 5, 6), result.stderr
        assert "Traceback" not in result.stderr
        records = _log(tmp_path, name)
        assert records[0]["role"] == "user" and records[0]["content"] == task
        replies = [r for r in records if r["role"] == "assistant"]
        assert replies and all(r["metadata"]["model"] == "smollm2" for r in replies)  # type: ignore[index]
        for reply, after in itertools.pairwise(records):
            content = str(reply["content"])
            meant = reply["role"] == "assistant" and any(
                f"```{tag}" in content for tag in RUN_AS)
            assert after["role"] == "system" or not meant, f"a near miss went unanswered: " \
                                                           f"{content!r}"
