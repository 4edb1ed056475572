"""Harbor's users, steps and network modes on real containers (podman, the test base image):
the agent (the oracle, or a model's tools) and the verifier as the task's users, a user the
image lacks the trial's error, a multi-step task run step by step with its min_reward gate,
and a network a container cannot hold refused with why."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fencecall.environments import choose_container_cli
from fencecall.evaluation import TAG, context_key
from tests.fakeserver import FakeModelServer, Reply

from ..containers import base_image
from .test_eval import fencecall_eval, lines, make_task

__all__ = ["base_image"]

USERS = """\
[environment]
allow_internet = false
[agent]
user = "runner"
[verifier]
user = 1234
"""

WHO_SOLVES = "#!/bin/bash\nid -un > /tmp/agent-user\necho 42 > answer.txt\n"
WHO_TESTS = """\
#!/bin/bash
id -un
if [ "$(id -un)" = runner ] && [ "$(cat /tmp/agent-user)" = runner ] \\
   && grep -qx 42 answer.txt; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""
AS_RUNNER = '[environment]\nallow_internet = false\n[agent]\nuser = "runner"\n'
AS_NOBODY = '[environment]\nallow_internet = false\n[agent]\nuser = "nobody-here"\n'


@pytest.fixture(scope="module")
def runner_image(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Dockerfile with a user ``runner`` (uid 1234) and a working folder it may write."""
    root = tmp_path_factory.mktemp("users")
    dockerfile = (f"FROM {base_image}\nRUN useradd -u 1234 runner && chmod 777 /work\n"
                  f"RUN echo {uuid.uuid4().hex} > /nonce\nWORKDIR /work\n")
    yield dockerfile
    folder = make_task(root, "probe", USERS, dockerfile, WHO_TESTS)
    key = context_key(choose_container_cli("podman"), folder / "environment" / "Dockerfile")
    subprocess.run(["podman", "rmi", f"{TAG}:{key}"], capture_output=True, check=False)


def test_the_agent_and_the_verifier_run_as_the_task_s_users(
        runner_image: str, tmp_path: Path) -> None:
    make_task(tmp_path / "set", "users", USERS, runner_image, WHO_TESTS)
    (tmp_path / "set" / "users" / "solution" / "solve.sh").write_text(WHO_SOLVES)
    make_task(tmp_path / "set", "ghost", AS_NOBODY, runner_image, WHO_TESTS)
    out = tmp_path / "users.jsonl"
    done = fencecall_eval(tmp_path, str(tmp_path / "set"), "--out", str(out), "--agent",
                          "oracle", "-j", "2")
    assert done.returncode == 1, done.stderr
    results = {line["task"]: line for line in lines(out)}
    line, ghost = results["users"], results["ghost"]
    assert line["reward"] == 1.0, line
    assert line["verifier_output"].startswith("runner")
    # a user the image lacks: the trial's error, as for a model, before anything runs
    assert ghost["error_kind"] == "agent" and ghost["reward"] is None
    assert ghost["error"].startswith("[agent] user: the user 'nobody-here' has no id")


RUNNER_TESTS = """\
#!/bin/bash
ok=1
check() { if [ "$2" != "$3" ]; then echo "$1: $2"; ok=0; fi; }
check who "$(cat who.txt)" runner
check job "$(cat job.txt)" runner
check saved "$(cat made/saved.txt)" "$(printf 'saved\\nmore')"
check owners "$(stat -c %U made made/saved.txt py.txt | tr '\\n' ' ')" "runner runner runner "
check python "$(cat py.txt)" 1234
echo "graded by $(id -un)"; echo $ok > /logs/verifier/reward.txt
"""
AS_RUNNER_CALLS = [
    "```shell\nid -un > who.txt; (sleep 0.2; id -un > job.txt; sleep 600) & echo started\n```",
    "```save made/saved.txt\nsaved\n```",
    "```shell\necho more >> made/saved.txt && id -un\n```",
    "```ipython\nimport os, time\nwhile not os.path.exists('job.txt'): time.sleep(0.1)\n"
    "open('py.txt', 'w').write(str(os.getuid()))\n```",
    "Done."]


def as_runner(body: dict[str, Any]) -> Reply:
    """Each of the tools in turn, as the task's agent user: the shell (and a job it leaves
    running), the save tool, the shell writing on what it saved, python."""
    step = sum(m["role"] == "assistant" for m in body["messages"])
    return Reply(AS_RUNNER_CALLS[min(step, len(AS_RUNNER_CALLS) - 1)] + "\n")


def test_a_model_s_tools_run_as_the_task_s_agent_user_and_a_missing_user_is_an_error(
        runner_image: str, tmp_path: Path) -> None:
    make_task(tmp_path / "set", "runner", AS_RUNNER, runner_image, RUNNER_TESTS)
    make_task(tmp_path / "set", "ghost", AS_NOBODY, runner_image, RUNNER_TESTS)
    out = tmp_path / "model.jsonl"
    with FakeModelServer(respond=as_runner) as server:
        done = fencecall_eval(tmp_path, str(tmp_path / "set"), "--out", str(out), "-m",
                              "local/fake", "--retries", "0", "-j", "2",
                              url=server.openai_url)
        prompts = {m["content"] for served in server.requests
                   for m in served.body["messages"]
                   if m["role"] == "user"}
    assert done.returncode == 1, done.stderr
    results = {line["task"]: line for line in lines(out)}
    ran, ghost = results["runner"], results["ghost"]
    assert ran["reward"] == 1.0 and ran["error_kind"] is None, ran
    assert "graded by root" in ran["verifier_output"]  # the verifier: the image's user
    assert ran["steps"] == len(AS_RUNNER_CALLS)
    assert ghost["error_kind"] == "agent" and ghost["reward"] is None
    assert ghost["error"].startswith("[agent] user: the user 'nobody-here' has no id")
    assert not any("(ghost)" in prompt for prompt in prompts)  # never started


STEPS = """\
[environment]
allow_internet = false
workdir = "/work"
[[steps]]
name = "first"
[[steps]]
name = "second"
min_reward = 1
[[steps]]
name = "third"
"""

SHARED_TEST = """\
#!/bin/bash
ls /tests
if grep -qx data first.txt && grep -q "No such file" seen.txt; then r=0.5; else r=0; fi
echo "{\\"reward\\": $r, \\"style\\": 1}" > /logs/verifier/reward.json
"""


def steps_task(root: Path, base: str) -> Path:
    """Three steps: the first with a workdir (and setup.sh), a solution and tests of its
    own; the second on the task's solution and tests, below its min_reward; the third
    never runs."""
    folder = make_task(root, "stepped", STEPS, f"FROM {base}\n", SHARED_TEST)
    (folder / "instruction.md").unlink()
    (folder / "solution" / "solve.sh").write_text(
        "#!/bin/bash\nls /tests > seen.txt 2>&1\necho second > second.txt\n")
    files = {"first/instruction.md": "Copy data.", "second/instruction.md": "Look.",
             "third/instruction.md": "Never.", "first/workdir/data.txt": "data\n",
             "first/workdir/setup.sh": "echo set up by $(id -un) > setup.txt\n",
             "first/solution/solve.sh": "#!/bin/bash\ncp data.txt first.txt\n",
             "first/tests/test.sh": "#!/bin/bash\ngrep -q root setup.txt && grep -qx data "
                                    "first.txt && echo 1 > /logs/verifier/reward.txt\n",
             "third/solution/solve.sh": "#!/bin/bash\ntouch third.txt\n"}
    for name, text in files.items():
        (folder / "steps" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "steps" / name).write_text(text)
    return folder


def test_a_multi_step_task_runs_its_steps_in_one_container_until_a_min_reward(
        base_image: str, tmp_path: Path) -> None:
    steps_task(tmp_path / "set", base_image)
    out = tmp_path / "steps.jsonl"
    done = fencecall_eval(tmp_path, str(tmp_path / "set"), "--out", str(out), "--agent",
                          "oracle")
    assert done.returncode == 0, done.stderr
    [line] = lines(out)
    first, second = line["step_results"]
    assert (first["name"], first["rewards"]) == ("first", {"reward": 1.0})
    assert (second["name"], second["rewards"]) == ("second", {"reward": 0.5, "style": 1.0})
    assert "No such file" not in second["verifier_output"]  # /tests: the task's alone now
    assert line["rewards"] == {"reward": 0.75, "style": 0.5}  # Harbor's mean (0 if missing)
    assert line["reward"] == 0.75 and line["error_kind"] is None
    workspace = tmp_path / "steps.jsonl.d" / "trials" / "stepped" / "0" / "workspace"
    assert (workspace / "second.txt").exists() and not (workspace / "third.txt").exists()


def test_a_network_the_container_cannot_hold_is_the_trial_s_error(
        base_image: str, tmp_path: Path) -> None:
    make_task(tmp_path / "set", "walled", '[environment]\nnetwork_mode = "allowlist"\n'
              'allowed_hosts = ["pypi.org"]\n', f"FROM {base_image}\n", "#!/bin/bash\n")
    out = tmp_path / "walled.jsonl"
    done = fencecall_eval(tmp_path, str(tmp_path / "set"), "--out", str(out), "--agent",
                          "oracle")
    assert done.returncode == 1
    [line] = lines(out)
    assert line["error_kind"] == "environment" and line["image"] is None
    assert "'allowlist' (pypi.org) cannot be enforced here" in line["error"]


STEP_COMMANDS = {"Copy data.": "cp data.txt first.txt", "Look.": "ls /tests > seen.txt 2>&1"}


def step_model(body: dict[str, Any]) -> Reply:
    """Each step a conversation of its own: its instruction's command, then done."""
    messages = body["messages"]
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    if any(m["role"] == "assistant" for m in messages):
        return Reply("Done.")
    return Reply(f"```shell\n{STEP_COMMANDS.get(prompt.strip(), 'touch third.txt')}\n```\n")


def test_a_model_works_each_step_in_a_conversation_of_its_own(
        base_image: str, tmp_path: Path) -> None:
    steps_task(tmp_path / "set", base_image)
    out = tmp_path / "model-steps.jsonl"
    with FakeModelServer(respond=step_model) as server:
        done = fencecall_eval(tmp_path, str(tmp_path / "set"), "--out", str(out), "-m",
                              "local/fake", "--retries", "0", url=server.openai_url)
    assert done.returncode == 0, done.stderr
    [line] = lines(out)
    first, second = line["step_results"]
    assert (first["reward"], second["reward"], line["reward"]) == (1.0, 0.5, 0.75)
    assert first["steps"] == second["steps"] == 2 and line["steps"] == 4
    trial = tmp_path / "model-steps.jsonl.d" / "trials" / "stepped" / "0"
    assert first["log"] == str(trial / "steps" / "first" / "conversation.jsonl")
    assert line["trajectory"] == second["trajectory"] and Path(second["trajectory"]).exists()
    assert line["tokens"]["input_tokens"] > 0
