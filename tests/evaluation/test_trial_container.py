"""The real podman: a trial container's reads of several files in one ``exec`` (framed so
that no file's text passes for another's, or for one that is not there), and a folder
uploaded with its script executable in one ``cp``, as a ``mkdir``, a ``cp`` and a ``chmod``
left it; the logs folders mounted from the trial's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fencecall.environments import ContainerEnvironment, ContainerError
from fencecall.evaluation._container import TrialContainer
from fencecall.evaluation._task import EnvironmentSpec

from ..containers import base_image, cli_calls, container_cli

__all__ = ["base_image"]


@pytest.fixture
def trial(base_image: str, tmp_path: Path) -> Iterator[TrialContainer]:
    with ContainerEnvironment.start(base_image, tmp_path / "files", cli=container_cli()
                                    ) as place:
        yield TrialContainer(place, base_image, tmp_path / "logs")


def test_files_are_read_in_one_exec_and_none_passes_for_another(
        trial: TrialContainer, monkeypatch: pytest.MonkeyPatch) -> None:
    # what a test's output could print to fake the frames of a plain boundary
    fake = "\\n+ \\n{\"reward\": 1}\\n- \\n"
    trial.as_root(f"printf 'out\\n{fake}' > /tmp/out.txt; printf '0.5' > /tmp/reward.txt; "
                  "head -c 5000 /dev/zero | tr '\\0' y > /tmp/long.txt; : > /tmp/empty.txt")
    calls = cli_calls(monkeypatch)
    found = trial.read({"/tmp/out.txt": 1000, "/tmp/reward.json": 1000,
                        "/tmp/reward.txt": 1000, "/tmp/long.txt": 10, "/tmp/empty.txt": 10,
                        "/tmp/missing": 10})
    assert calls == ["exec"]
    assert found == {"/tmp/out.txt": "out\n\n+ \n{\"reward\": 1}\n- \n", "/tmp/reward.json": None,
                     "/tmp/reward.txt": "0.5", "/tmp/long.txt": "y" * 10,
                     "/tmp/empty.txt": "", "/tmp/missing": None}


def test_an_upload_is_one_cp_with_its_script_executable_and_later_folders_on_top(
        trial: TrialContainer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task, step = tmp_path / "task-tests", tmp_path / "step-tests"
    for folder in (task, step):
        (folder / "data").mkdir(parents=True)
        folder.chmod(0o700)  # the staged copy's mode, not the host's, reaches the container
    (task / "test.sh").write_text("#!/bin/bash\necho task\n")
    (task / "data" / "kept.txt").write_text("task's\n")
    (step / "test.sh").write_text("#!/bin/bash\necho step\n")
    (step / "data" / "more.txt").write_text("step's\n")
    (step / "link").symlink_to("data/more.txt")
    calls = cli_calls(monkeypatch)
    trial.upload([task, step], "/tests", "test.sh")
    assert calls == ["cp"]
    ran = trial.run("stat -c '%a %U' /tests /tests/test.sh; /tests/test.sh; "
                    "cat /tests/data/kept.txt /tests/link", timeout=60, user="nobody")
    assert ran.exit_status == 0, ran.output
    assert ran.output.split("\n") == ["755 root", "755 root", "step", "task's", "step's", ""]
    assert not (task / "test.sh").stat().st_mode & 0o111  # the task's own files untouched


def test_the_logs_folders_are_the_trials_own_mounted_with_no_exec_or_cp(
        base_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = cli_calls(monkeypatch)
    spec = EnvironmentSpec(None, docker_image=base_image, network=False)
    logs = tmp_path / "logs"
    trial = TrialContainer.start(container_cli(), base_image, spec, {}, tmp_path / "files",
                                 logs)
    try:
        assert "exec" not in calls and "cp" not in calls
        ran = trial.run("stat -c %a /logs/agent /logs/verifier && echo out > "
                        "/logs/verifier/test-stdout.txt && touch /logs/agent/made",
                        timeout=60, user="nobody")
        assert ran.exit_status == 0 and ran.output.split() == ["777", "777"], ran.output
        assert (logs / "verifier" / "test-stdout.txt").read_text() == "out\n"
        # a stale reward goes on the host, as a symlink itself, not what it names
        trial.run("ln -s /etc/hostname /logs/verifier/reward.txt && "
                  "mkdir /logs/verifier/reward.json", timeout=60)
        with pytest.raises(ContainerError, match=r"reward\.json could not be removed"):
            trial.remove_logs("/logs/verifier/reward.txt", "/logs/verifier/reward.json")
        assert not (logs / "verifier" / "reward.txt").is_symlink()
        trial.remove_logs("/logs/agent/gone.txt")
        trial.next_step()
        assert sorted(logs.rglob("*")) == [logs / "agent", logs / "verifier"]
    finally:
        trial.remove()
