"""``fencecall eval`` at scale: one build of an image per machine whichever process asks
(two image caches, as two Ray workers), and shards of trials on a real local Ray, each
worker with its own container CLI (real podman)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from fencecall.environments import ContainerCli, ContainerEnvironment, choose_container_cli
from fencecall.evaluation import TAG, ImageCache, context_key, read_task
from fencecall.evaluation._images import BuildError, Image
from fencecall.evaluation._task import EnvironmentSpec
from tests.cli.conftest import cli_env
from tests.fakeserver import FakeModelServer

from ..batch.test_ray import local_ray
from ..containers import base_image
from .test_eval import TEST_TXT, WAIT, lines, make_task, model
from .test_eval_stop import NAPPING, wait_for

__all__ = ["base_image", "local_ray"]

TOML = '[environment]\nallow_internet = false\nworkdir = "/work"\n'


def new_image_task(root: Path, name: str, base: str) -> Path:
    """A task whose image is new to this machine (a nonce in its context)."""
    return make_task(root, name, TOML, f"FROM {base}\nCOPY nonce /opt/\n", TEST_TXT,
                     {"nonce": uuid.uuid4().hex})


def remove_image(folder: Path) -> None:
    key = context_key(choose_container_cli("podman"), folder / "environment" / "Dockerfile")
    subprocess.run(["podman", "rmi", f"{TAG}:{key}"], capture_output=True, check=False)


def test_two_processes_caches_build_one_image_once(base_image: str, tmp_path: Path) -> None:
    folder = new_image_task(tmp_path / "set", "shared", base_image)
    spec = read_task(folder).environment
    cli = choose_container_cli("podman")
    caches = [ImageCache(cli, tmp_path / f"builds{n}") for n in range(2)]

    async def both() -> list[Any]:
        return list(await asyncio.gather(*(cache.image(spec) for cache in caches)))

    try:
        images = asyncio.run(both())
        assert images[0].name == images[1].name
        assert sorted(image.built for image in images) == [False, True]
        assert sum(cache.built for cache in caches) == 1
    finally:
        remove_image(folder)


def test_a_failed_build_is_not_tried_again_by_another_process_of_the_run(
        base_image: str, tmp_path: Path) -> None:
    """Shards of one run on Ray are processes of their own, each with its cache: the first
    one's failed build fails the others' trials of the task, with its error; a later run
    builds again."""
    folder = make_task(tmp_path / "set", "broken", TOML,
                       f"FROM {base_image}\nRUN echo {uuid.uuid4().hex} && exit 3\n",
                       TEST_TXT)
    spec = read_task(folder).environment
    cli = choose_container_cli("podman")
    first, second = (ImageCache(cli, tmp_path / f"builds{n}", run="run-1") for n in range(2))
    later = ImageCache(cli, tmp_path / "builds-later", run="run-2")
    errors = []
    for cache in (first, second, later):
        with pytest.raises(BuildError) as raised:
            asyncio.run(cache.image(spec))
        errors.append(str(raised.value))
    assert "exit status" in errors[0] and errors[1] == errors[0]
    assert list((tmp_path / "builds0").glob("*.log"))
    assert not (tmp_path / "builds1").exists()  # the second process built nothing
    assert list((tmp_path / "builds-later").glob("*.log"))


def test_a_tasks_later_trials_ask_the_cli_nothing_for_its_image(
        base_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = make_task(tmp_path / "set", "plain", TOML, f"FROM {base_image}\n", TEST_TXT)
    pulled = make_task(tmp_path / "set", "pulled", f'[environment]\ndocker_image = '
                       f'"{base_image}"\n', "", TEST_TXT)
    (pulled / "environment" / "Dockerfile").unlink()
    cache = ImageCache(choose_container_cli("podman"), tmp_path / "builds")
    calls: list[tuple[str, ...]] = []
    original = ContainerCli.call

    def call(self: ContainerCli, *args: str, **options: Any) -> Any:
        calls.append(args)
        return original(self, *args, **options)

    monkeypatch.setattr(ContainerCli, "call", call)
    async def together(spec: EnvironmentSpec) -> list[Image]:
        return list(await asyncio.gather(*(cache.image(spec) for _ in range(3))))

    for task in (folder, pulled):
        spec = read_task(task).environment
        first, *others = asyncio.run(together(spec))
        assert others == [first, first]
        # trials that start together: one looks the image up, the others wait for it
        assert [call for call in calls if call[:2] == ("image", "inspect")
                and call[-1] == first.name] == [calls[-1]]
        calls.clear()
        assert asyncio.run(cache.image(spec)) == first and first.info is not None
        assert calls == []
    with ContainerEnvironment.start(first.name, tmp_path / "files", cli=cache.cli,
                                    info=first.info) as place:
        assert place.workdir == "/work"
    assert ("image", "inspect") not in {call[:2] for call in calls}


def test_trials_run_in_shards_on_ray_each_image_built_once(
        local_ray: Any, base_image: str, tmp_path: Path) -> None:
    root = tmp_path / "set"
    fresh = new_image_task(root, "fresh", base_image)
    make_task(root, "plain", TOML, f"FROM {base_image}\n", TEST_TXT)
    out = tmp_path / "ray.jsonl"
    address = local_ray.get_runtime_context().gcs_address
    command = [sys.executable, "-m", "fencecall.cli.main", "eval", str(root), "--out", str(out),
               "--agent", "oracle", "-k", "3", "-j", "1", "--shard-size", "1", "--ray", address]
    env = cli_env(tmp_path, "http://127.0.0.1:9", EVAL_GREETING="hi")
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=WAIT)
        assert done.returncode == 0, done.stderr
        results = {line["id"]: line for line in lines(out)}
        assert sorted(results) == [f"{task}#{n}" for task in ("fresh", "plain")
                                   for n in range(3)]
        assert all(line["reward"] == 1.0 for line in results.values()), results
        built = [line["image_built"] for line in results.values() if line["task"] == "fresh"]
        assert sorted(built) == [False, False, True]  # six shards, one build
        image = results["fresh#0"]["image"]
        assert containers_of(image) == []
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=WAIT)
        assert again.returncode == 0, again.stderr
        assert "6 of 6 trials are in" in again.stderr and len(lines(out)) == 6
    finally:
        remove_image(fresh)


@pytest.mark.parametrize(("signal_number", "code"), [(signal.SIGINT, 130),
                                                     (signal.SIGTERM, 143)],
                         ids=["ctrl-c", "sigterm"])
def test_a_stop_on_ray_cancels_the_shards_and_they_remove_their_containers(
        local_ray: Any, base_image: str, tmp_path: Path, signal_number: int,
        code: int) -> None:
    root = tmp_path / "set"
    slow = new_image_task(root, "slow", base_image)
    (slow / "solution" / "solve.sh").write_text(NAPPING)
    (slow / "task.toml").write_text(TOML + '[solution]\nenv = { NAP = "${EVAL_NAP}" }\n')
    out = tmp_path / "ray.jsonl"
    started = tmp_path / "ray.jsonl.d" / "trials" / "slow" / "0" / "workspace" / "started"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fencecall.cli.main", "eval", str(root), "--out", str(out),
         "--agent", "oracle", "--ray", local_ray.get_runtime_context().gcs_address],
        env=cli_env(tmp_path, "http://127.0.0.1:9", EVAL_NAP="300"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        wait_for(started.exists, proc, "the slow oracle under way")
        key = context_key(choose_container_cli("podman"), slow / "environment" / "Dockerfile")
        image = f"{TAG}:{key}"
        assert containers_of(image) != []
        proc.send_signal(signal_number)
        _, stderr = proc.communicate(timeout=WAIT)
        assert proc.returncode == code, stderr
        assert containers_of(image) == []
        assert not out.exists() or out.read_text() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
        remove_image(slow)


def test_a_model_agent_runs_its_trials_on_ray(local_ray: Any, base_image: str,
                                              tmp_path: Path) -> None:
    """The model's settings travel to the workers, which make their own providers: each
    shard's trial is the model's, graded, with its trajectory."""
    root = tmp_path / "set"
    make_task(root, "plain", TOML, f"FROM {base_image}\n", TEST_TXT)
    out = tmp_path / "ray.jsonl"
    address = local_ray.get_runtime_context().gcs_address
    with FakeModelServer(respond=model) as server:
        done = subprocess.run(
            [sys.executable, "-m", "fencecall.cli.main", "eval", str(root), "--out", str(out),
             "-m", "local/fake", "--retries", "0", "-k", "2", "--shard-size", "1",
             "--ray", address], env=cli_env(tmp_path, server.openai_url),
            capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 0, done.stderr
    results = lines(out)
    assert sorted(line["id"] for line in results) == ["plain#0", "plain#1"]
    for line in results:
        assert line["agent"] == "model" and line["reward"] == 1.0, line
        assert Path(line["trajectory"]).is_file()


def containers_of(image: str) -> list[str]:
    """The containers of ``image`` (podman 4.3's ancestor filter misses a tagged name)."""
    done = subprocess.run(["podman", "ps", "--all", "--format", "{{.ID}} {{.Image}}"],
                          capture_output=True, text=True, check=True)
    return [line.split()[0] for line in done.stdout.splitlines()
            if line.split()[1:] and line.split()[1].removeprefix("localhost/") == image]
