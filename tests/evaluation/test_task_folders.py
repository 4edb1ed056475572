"""Reading Harbor task folders, rewards and the summary, without containers (the real
podman runs in test_eval.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fencecall.evaluation import (
    RewardError,
    TaskError,
    TrialResult,
    find_tasks,
    pass_at_k,
    read_rewards,
    read_task,
    resolve_env,
    summarize,
)

SCHEMA_1_0 = """\
version = "1.0"

[metadata]
author_name = "someone"
difficulty = "easy"
tags = ["files"]

[verifier]
timeout_sec = 120.0

[agent]
timeout_sec = 300.0

[environment]
build_timeout_sec = 900.0
cpus = 2
memory = "2G"
storage = "10G"
allow_internet = false
"""

SCHEMA_1_1 = """\
schema_version = "1.1"
source = "a-benchmark"

[task]
name = "org/hello"
keywords = ["x"]

[environment]
workdir = "/app"
cpus = 1.5
memory_mb = 512
network_mode = "public"
gpus = 0

[environment.env]
TOKEN = "${EVAL_TEST_TOKEN}"
LEVEL = "${EVAL_TEST_LEVEL:-3}"
PLAIN = "text with ${NOT_A_TEMPLATE} inside"

[verifier]
env = { JUDGE = "${EVAL_TEST_JUDGE}" }

[solution.env]
MODE = "fast"

[[verifier.collect]]
command = "later"

[a_section_of_tomorrow]
anything = 1
"""


def task_folder(root: Path, name: str, toml: str, *, dockerfile: bool = True) -> Path:
    folder = root / name
    (folder / "environment").mkdir(parents=True)
    (folder / "task.toml").write_text(toml)
    (folder / "instruction.md").write_text(f"Solve {name}.\n")
    if dockerfile:
        (folder / "environment" / "Dockerfile").write_text("FROM debian\n")
    return folder


def test_a_schema_1_0_task_reads_its_old_spellings(tmp_path: Path) -> None:
    task = read_task(task_folder(tmp_path, "old", SCHEMA_1_0))
    assert task.name == "old" and task.instruction == "Solve old.\n"
    assert task.schema_version == "1.0"
    env = task.environment
    assert env.memory_mb == 2048 and env.cpus == 2 and env.build_timeout == 900
    assert env.network is False and env.workdir is None
    assert env.dockerfile == tmp_path / "old" / "environment" / "Dockerfile"
    assert task.agent_timeout == 300 and task.verifier_timeout == 120
    assert task.raw["metadata"]["difficulty"] == "easy"  # kept, not refused
    assert task.raw["environment"]["storage"] == "10G"


def test_a_schema_1_1_task_keeps_what_it_does_not_know(tmp_path: Path) -> None:
    task = read_task(task_folder(tmp_path, "new", SCHEMA_1_1))
    assert task.schema_version == "1.1"
    env = task.environment
    assert env.workdir == "/app" and env.cpus == 1.5 and env.memory_mb == 512
    assert env.network is True
    assert task.agent_timeout is None and task.verifier_timeout == 600  # Harbor's defaults
    assert dict(task.solution_env) == {"MODE": "fast"}
    assert task.raw["a_section_of_tomorrow"] == {"anything": 1}
    assert task.raw["verifier"]["collect"] == [{"command": "later"}]
    assert task.raw["environment"]["gpus"] == 0 and task.steps == ()


def test_the_network_is_on_unless_a_task_says_otherwise(tmp_path: Path) -> None:
    assert read_task(task_folder(tmp_path, "a", "")).environment.network is True
    assert read_task(task_folder(
        tmp_path, "b", '[environment]\nnetwork_mode = "no-network"\n')).environment.network \
        is False
    assert read_task(task_folder(tmp_path, "c", "")).network_refusal is None
    with pytest.raises(TaskError, match=r"\[environment\] network_mode: 'any' is none of"):
        read_task(task_folder(tmp_path, "d", '[environment]\nnetwork_mode = "any"\n'))
    with pytest.raises(TaskError, match=r"\[agent\] allowed_hosts: is only valid with"):
        read_task(task_folder(tmp_path, "e", '[agent]\nallowed_hosts = ["pypi.org"]\n'))


@pytest.mark.parametrize(("toml", "says"), [
    ('[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org", "*.debian.org"]\n',
     "[environment] network_mode = 'allowlist' (pypi.org, *.debian.org) cannot be enforced"),
    ('[agent]\nnetwork_mode = "no-network"\n',
     "[agent] network_mode = 'no-network' differs from the environment's 'public'"),
    ('[environment]\nallow_internet = false\n[verifier]\nnetwork_mode = "public"\n',
     "[verifier] network_mode = 'public' differs from the environment's 'no-network'"),
    ('[[steps]]\nname = "one"\nverifier = { network_mode = "no-network" }\n',
     "[[steps]] one: [verifier] network_mode = 'no-network' differs"),
])
def test_a_network_a_container_cannot_hold_is_refused_with_why(
        tmp_path: Path, toml: str, says: str) -> None:
    folder = task_folder(tmp_path, "net", toml)
    (folder / "steps" / "one").mkdir(parents=True)
    (folder / "steps" / "one" / "instruction.md").write_text("one")
    refusal = read_task(folder).network_refusal
    assert refusal is not None and says in refusal and "not run" in refusal


STEPS = """\
multi_step_reward_strategy = "final"
[agent]
timeout_sec = 30
user = "agent"
[verifier]
user = 1000
env = { SHARED = "1", OVER = "task" }
[[steps]]
name = "write"
min_reward = 1
[[steps]]
name = "check"
agent = { timeout_sec = 5, user = "root" }
verifier = { timeout_sec = 7, env = { OVER = "step" } }
min_reward = { reward = 0.5, style = 1 }
"""


def test_steps_are_read_with_the_task_s_settings_beneath_their_own(tmp_path: Path) -> None:
    folder = task_folder(tmp_path, "multi", STEPS)
    (folder / "instruction.md").unlink()  # a multi-step task's are its steps'
    for name in ("write", "check"):
        (folder / "steps" / name).mkdir(parents=True)
        (folder / "steps" / name / "instruction.md").write_text(f"Do {name}.")
    (folder / "steps" / "check" / "solution").mkdir()
    (folder / "steps" / "write" / "workdir").mkdir()
    task = read_task(folder)
    assert task.reward_strategy == "final" and task.plan() == task.steps
    write, check = task.steps
    assert (write.name, write.instruction, check.instruction) == ("write", "Do write.", "Do check.")
    assert write.tests == (folder / "tests", folder / "steps" / "write" / "tests")
    assert write.solution == folder / "solution"
    assert check.solution == folder / "steps" / "check" / "solution"
    assert write.workdir == folder / "steps" / "write" / "workdir" and check.workdir is None
    assert (write.agent_timeout, write.agent_user, write.verifier_user) == (30, "agent", "1000")
    assert (check.agent_timeout, check.agent_user, check.verifier_user) == (5, "root", "1000")
    assert write.verifier_timeout == 600 and check.verifier_timeout == 7  # as Harbor has it
    assert dict(write.verifier_env) == {"SHARED": "1", "OVER": "task"}
    assert dict(check.verifier_env) == {"SHARED": "1", "OVER": "step"}
    assert write.min_reward == {"reward": 1.0}
    assert check.min_reward == {"reward": 0.5, "style": 1.0}
    (folder / "steps" / "check" / "instruction.md").unlink()
    with pytest.raises(TaskError, match=r"steps/check: no readable instruction\.md"):
        read_task(folder)


def test_a_task_of_one_step_is_its_own_plan(tmp_path: Path) -> None:
    task = read_task(task_folder(tmp_path, "one", '[verifier]\nuser = "tester"\n'))
    [step] = task.plan()
    assert step.name is None and step.instruction == "Solve one.\n"
    assert step.tests == (task.tests,) and step.solution == task.solution
    assert (step.verifier_user, step.agent_user) == ("tester", None)
    for bad, says in (('name = "a/b"', "a step's name must be a folder name"),
                      ('name = "x"\n[[steps]]\nname = "X"', "two steps are named 'X'")):
        folder = task_folder(tmp_path, f"bad{len(says)}", f"[[steps]]\n{bad}\n")
        with pytest.raises(TaskError, match=says):
            read_task(folder)
    with pytest.raises(TaskError, match=r"\[agent\] user: must be a user name or a uid"):
        read_task(task_folder(tmp_path, "u", "[agent]\nuser = true\n"))


def test_variables_are_read_from_fencecall_s_environment_as_harbor_reads_them(
        tmp_path: Path) -> None:
    task = read_task(task_folder(tmp_path, "new", SCHEMA_1_1))
    environ = {"EVAL_TEST_TOKEN": "t0k", "NOT_A_TEMPLATE": "no"}
    assert resolve_env(task.environment.env, environ) == {
        "TOKEN": "t0k", "LEVEL": "3", "PLAIN": "text with ${NOT_A_TEMPLATE} inside"}
    assert resolve_env(task.environment.env, {**environ, "EVAL_TEST_LEVEL": "7"})["LEVEL"] == "7"
    with pytest.raises(TaskError, match=r"\[verifier\] env: JUDGE = '\$\{EVAL_TEST_JUDGE\}' "
                                        "needs the variable EVAL_TEST_JUDGE, which is not set"):
        resolve_env(task.verifier_env, environ, "[verifier] env")


def test_a_bad_task_folder_says_which_file_and_key(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match=r"task.toml: \[agent\] timeout_sec: must be a positive"):
        read_task(task_folder(tmp_path, "a", '[agent]\ntimeout_sec = "soon"\n'))
    with pytest.raises(TaskError, match=r"task\.toml"):
        read_task(task_folder(tmp_path, "b", "this is = = not toml"))
    with pytest.raises(TaskError, match="no environment/Dockerfile and no"):
        read_task(task_folder(tmp_path, "c", "", dockerfile=False))
    prebuilt = read_task(task_folder(tmp_path, "d", '[environment]\ndocker_image = "img:1"\n',
                                     dockerfile=False))
    assert prebuilt.environment.dockerfile is None
    assert prebuilt.environment.docker_image == "img:1"


def test_a_path_is_a_task_or_a_folder_of_them(tmp_path: Path) -> None:
    one = task_folder(tmp_path / "set", "one", "")
    two = task_folder(tmp_path / "set", "two", "")
    (tmp_path / "set" / "notes").mkdir()
    assert find_tasks([tmp_path / "set"]) == [one, two]
    assert find_tasks([two, one, two]) == [two, one]
    with pytest.raises(TaskError, match="nor a folder of them"):
        find_tasks([tmp_path / "set" / "notes"])
    other = task_folder(tmp_path / "elsewhere", "one", "")
    with pytest.raises(TaskError, match="two tasks are named 'one'"):
        find_tasks([one, other])


def test_rewards_are_read_as_harbor_reads_them() -> None:
    assert read_rewards('{"reward": 1, "style": 0.5}', "0") == {"reward": 1.0, "style": 0.5}
    assert read_rewards(None, "0.25\n") == {"reward": 0.25}
    for json_text, txt, why in [(None, None, "wrote no reward"), ("", None, "is empty"),
                                ('{"reward": "1"}', None, "is not a number"),
                                ("[1]", None, "not a table"), (None, "one", "holds no number"),
                                ('{"reward": NaN}', None, "not a finite number")]:
        with pytest.raises(RewardError, match=why):
            read_rewards(json_text, txt)


def test_pass_at_k_is_the_unbiased_estimate() -> None:
    assert pass_at_k(2, 1, 1) == 0.5
    assert pass_at_k(2, 1, 2) == 1.0
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(10, 3, 2) == pytest.approx(1 - (7 * 6) / (10 * 9))


def trial(task: str, index: int, reward: float | None, **fields: object) -> TrialResult:
    return TrialResult(f"{task}#{index}", task, index, "model", reward=reward,
                       **fields)  # type: ignore[arg-type]


def test_the_summary_counts_rewards_passes_errors_and_cost() -> None:
    summary = summarize([
        trial("a", 0, 1.0, cost_usd="0.01", steps=2), trial("a", 1, 0.0, cost_usd="0.02"),
        trial("b", 0, 1.0, cost_usd="0.5"), trial("b", 1, 1.0),
        trial("c", 0, None, error_kind="build", error="exit status 1"),
        trial("c", 1, None, error_kind="build", error="exit status 1"),
    ])
    a, b, c = summary.rows
    assert (a.trials, a.ran, a.mean_reward, a.pass_at) == (2, 2, 0.5, {1: 0.5, 2: 1.0})
    assert b.pass_at == {1: 1.0, 2: 1.0} and c.pass_at == {} and c.ran == 0
    assert summary.total.mean_reward == pytest.approx(3 / 6)
    assert summary.total.pass_at == {1: 0.75, 2: 1.0}  # c has no graded trial
    assert summary.errors == {"build": 2}
    assert str(summary.cost_usd) == "0.53"
    table = summary.table()
    assert table.splitlines()[0].split() == ["task", "trials", "ran", "mean", "reward",
                                             "pass@1", "pass@2"]
    assert "all (3 tasks)  6       4    0.500        0.750   1.000" in table
    assert "errors: build 2" in table and "cost: $0.53" in table
