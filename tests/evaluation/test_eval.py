"""``fencecall eval`` on real containers (podman, on the test base image): Harbor task
folders built once, run by the oracle and by a model, graded by their tests."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fencecall.environments import choose_container_cli
from fencecall.evaluation import TAG, context_key
from tests.cli.conftest import cli_env
from tests.fakeserver import FakeModelServer, Reply

from ..containers import base_image

__all__ = ["base_image"]

WAIT = 600.0

SOLVE = """\
#!/bin/bash
# the tests must not be there while the agent works
if [ -e /tests ]; then echo leak > leak.txt; fi
echo "$GREETING" > greeting.txt
echo 42 > answer.txt
"""

TEST_JSON = """\
#!/bin/bash
echo "grading in $(pwd)"
if grep -qx "$EXPECTED" answer.txt && grep -qx hi greeting.txt && [ ! -e leak.txt ] \\
   && [ -f base.txt ]; then
  echo '{"reward": 1, "tidy": 0.5}' > /logs/verifier/reward.json
else
  echo 'not solved'; echo 0 > /logs/verifier/reward.txt
fi
"""

TEST_TXT = """\
#!/bin/bash
if [ "$(pwd)" = /work ] && grep -qx 42 answer.txt && [ ! -e leak.txt ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def make_task(root: Path, name: str, toml: str, dockerfile: str, test: str,
              context: dict[str, str] | None = None) -> Path:
    folder = root / name
    for sub in ("environment", "tests", "solution"):
        (folder / sub).mkdir(parents=True)
    (folder / "task.toml").write_text(toml)
    (folder / "instruction.md").write_text(f"Write 42 into answer.txt ({name}).\n")
    (folder / "environment" / "Dockerfile").write_text(dockerfile)
    for file, text in (context or {}).items():
        (folder / "environment" / file).write_text(text)
    (folder / "tests" / "test.sh").write_text(test)
    (folder / "solution" / "solve.sh").write_text(SOLVE)
    return folder


@pytest.fixture(scope="module")
def task_set(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Two tasks on the base image: ``hello`` (a context of its own, WORKDIR /app, env
    variables, reward.json) and ``plain`` (a Dockerfile that is only a FROM, workdir /work
    from task.toml, reward.txt). A nonce in hello's context makes its image new to this
    machine, so the first run surely builds it."""
    root = tmp_path_factory.mktemp("tasks") / "set"
    make_task(root, "hello", """\
schema_version = "1.1"
[environment]
allow_internet = false
env = { GREETING = "${EVAL_GREETING}" }
[verifier]
timeout_sec = 60
env = { EXPECTED = "${EVAL_EXPECTED:-42}" }
[agent]
timeout_sec = 60
[metadata]
difficulty = "easy"
""", f"FROM {base_image}\nCOPY base.txt nonce /app/\nWORKDIR /app\n", TEST_JSON,
              {"base.txt": "base\n", "nonce": uuid.uuid4().hex})
    make_task(root, "plain", 'version = "1.0"\n[environment]\nallow_internet = false\n'
              'workdir = "/work"\n', f"FROM {base_image}\n", TEST_TXT)
    yield root
    # hello's image is this module's alone (plain's tag is its base's own image)
    key = context_key(choose_container_cli("podman"), root / "hello/environment/Dockerfile")
    subprocess.run(["podman", "rmi", f"{TAG}:{key}"], capture_output=True, check=False)


def fencecall_eval(tmp_path: Path, *args: str, url: str = "http://127.0.0.1:9",
                   **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fencecall.cli.main", "eval", *args],
                          env=cli_env(tmp_path, url, **env), capture_output=True, text=True,
                          timeout=WAIT)


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def podman_images(reference: str) -> list[str]:
    done = subprocess.run(["podman", "images", "--noheading", "--format",
                           "{{.Repository}}:{{.Tag}} {{.ID}}", "--filter",
                           f"reference={reference}"], capture_output=True, text=True,
                          check=True)
    return sorted(done.stdout.split("\n"))


def test_the_oracle_solves_each_task_and_a_second_run_builds_nothing(
        task_set: Path, tmp_path: Path) -> None:
    out = tmp_path / "oracle.jsonl"
    first = fencecall_eval(tmp_path, str(task_set), "--out", str(out), "--agent", "oracle",
                           "-k", "2", "-j", "2", EVAL_GREETING="hi")
    assert first.returncode == 0, first.stderr
    results = {line["id"]: line for line in lines(out)}
    assert sorted(results) == ["hello#0", "hello#1", "plain#0", "plain#1"]
    assert all(line["reward"] == 1.0 and line["error_kind"] is None for line in results.values())
    hello = results["hello#0"]
    assert hello["rewards"] == {"reward": 1.0, "tidy": 0.5}
    assert hello["agent"] == "oracle" and hello["agent_outcome"] == "done"
    assert hello["verifier_exit"] == 0 and "grading in /app" in hello["verifier_output"]
    assert hello["image"].startswith("fencecall-task:")
    # one build per task, shared by its trials; the FROM-only image is its base's own ID
    assert sorted(line["image_built"] for line in results.values() if line["task"] == "hello") \
        == [False, True]
    assert results["plain#0"]["image"] == results["plain#1"]["image"]
    assert "pass@2" in first.stdout and "all (2 tasks)" in first.stdout
    assert "errors: none" in first.stdout
    images = podman_images("fencecall-task")

    again = fencecall_eval(tmp_path, str(task_set), "--out", str(out), "--agent", "oracle",
                           "-k", "2", EVAL_GREETING="hi")
    assert again.returncode == 0, again.stderr
    assert "4 of 4 trials are in" in again.stderr and len(lines(out)) == 4

    other = tmp_path / "other.jsonl"
    third = fencecall_eval(tmp_path, str(task_set / "hello"), "--out", str(other), "--agent",
                           "oracle", EVAL_GREETING="hi")
    assert third.returncode == 0, third.stderr
    [line] = lines(other)
    assert line["reward"] == 1.0 and line["image_built"] is False and line["build_s"] == 0
    assert podman_images("fencecall-task") == images


SOLVING = [Reply("```shell\necho 42 > answer.txt; pwd; ls /tests\n```\n"), Reply("Done.")]
LOOKING = [Reply("```shell\necho greeting=$GREETING\n```\n"), Reply("I will not do anything.")]


def model(body: dict[str, Any]) -> Reply:
    """plain's model solves it with the shell (in the container); hello's only looks at the
    task's environment, then does nothing."""
    messages = body["messages"]
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    step: int = sum(m["role"] == "assistant" for m in messages)
    if "(plain)" not in prompt:
        return LOOKING[min(step, 1)]
    return SOLVING[min(step, 1)]


def test_a_model_works_in_the_container_and_is_graded_with_a_trajectory(
        task_set: Path, tmp_path: Path) -> None:
    out = tmp_path / "model.jsonl"
    with FakeModelServer(respond=model) as server:
        done = fencecall_eval(tmp_path, str(task_set), "--out", str(out), "-m", "local/fake",
                              "--retries", "0", "-j", "2", url=server.openai_url,
                              EVAL_GREETING="hi")
    assert done.returncode == 0, done.stderr
    results = {line["task"]: line for line in lines(out)}
    idle, solved = results["hello"], results["plain"]
    assert idle["agent"] == "model" and idle["model"] == "local/fake"
    assert idle["agent_outcome"] == "done" and idle["steps"] == 2
    looked = json.dumps(json.loads(Path(idle["trajectory"]).read_text())["steps"])
    assert "greeting=hi" in looked  # the task's [environment] env reaches the model's tools
    assert idle["reward"] == 0.0 and idle["rewards"] == {"reward": 0.0}
    assert "not solved" in idle["verifier_output"]
    assert idle["tokens"]["input_tokens"] > 0 and idle["cost_usd"] is None  # no price
    assert solved["reward"] == 1.0 and solved["steps"] == 2
    trajectory = json.loads(Path(solved["trajectory"]).read_text())
    assert trajectory["schema_version"].startswith("ATIF")
    shell = json.dumps(trajectory["steps"])
    assert "/work" in shell and "No such file or directory" in shell  # no /tests yet
    assert "Write 42 into answer.txt (plain)." in shell
    assert "mean reward" in done.stdout


def test_a_failing_build_is_the_trial_s_error_with_its_log(base_image: str,
                                                          tmp_path: Path) -> None:
    make_task(tmp_path / "set", "broken", "[environment]\nallow_internet = false\n",
              f"FROM {base_image}\nCOPY no-such-file /app/\n", TEST_TXT)
    out = tmp_path / "broken.jsonl"
    done = fencecall_eval(tmp_path, str(tmp_path / "set"), "--out", str(out), "--agent",
                          "oracle", "-k", "2")
    assert done.returncode == 1, done.stderr
    results = lines(out)
    assert [line["error_kind"] for line in results] == ["build", "build"]
    assert all("no-such-file" in line["error"] and line["reward"] is None
               for line in results)
    assert len(list((tmp_path / "broken.jsonl.d" / "builds").iterdir())) == 1  # built once
    assert "errors: build 2" in done.stdout


def test_a_missing_variable_is_that_task_s_error(task_set: Path, tmp_path: Path) -> None:
    out = tmp_path / "novar.jsonl"
    done = fencecall_eval(tmp_path, str(task_set / "hello"), "--out", str(out), "--agent",
                          "oracle")
    assert done.returncode == 1
    [line] = lines(out)
    assert line["error_kind"] == "task"
    assert "needs the variable EVAL_GREETING, which is not set" in line["error"]


def test_an_agent_past_its_timeout_is_stopped_whole_and_a_slow_verifier_is_an_error(
        base_image: str, tmp_path: Path) -> None:
    root = tmp_path / "set"
    make_task(root, "slow-agent", "[environment]\nallow_internet = false\n"
              "[agent]\ntimeout_sec = 1\n", f"FROM {base_image}\n",
              "#!/bin/bash\nsleep 4\n[ -e late.txt ] && r=0 || r=1\n"
              "echo $r > /logs/verifier/reward.txt\n")
    (root / "slow-agent" / "solution" / "solve.sh").write_text(
        "#!/bin/bash\n(sleep 3; echo late > late.txt) &\nsleep 60\n")
    make_task(root, "slow-verifier", "[environment]\nallow_internet = false\n"
              "[verifier]\ntimeout_sec = 1\n", f"FROM {base_image}\n", "#!/bin/bash\nsleep 60\n")
    out = tmp_path / "slow.jsonl"
    done = fencecall_eval(tmp_path, str(root), "--out", str(out), "--agent", "oracle",
                          "-j", "2", EVAL_GREETING="hi")
    assert done.returncode == 1, done.stderr
    results = {line["task"]: line for line in lines(out)}
    agent, verifier = results["slow-agent"], results["slow-verifier"]
    # graded after its timeout, and what it left running did not go on to write late.txt
    assert agent["agent_outcome"] == "timeout" and agent["agent_s"] < 10
    assert agent["reward"] == 1.0 and agent["error_kind"] is None
    assert verifier["error_kind"] == "verifier" and verifier["verifier_exit"] is None
    assert verifier["error"] == "the tests ran past their timeout of 1 s"
    assert verifier["verifier_s"] < 10 and verifier["reward"] is None
    assert "errors: verifier 1" in done.stdout
