"""What :mod:`benchmarks.environments` runs against: the base image, small Harbor task folders
on it, and the fake model server with a script of its own for the trials.

The base image is the tests' (:data:`tests.containers.BASE_IMAGE`, made with debootstrap
once per machine and kept), built by their own helper, so a fresh machine gets the same one.
Each task folder is as Harbor's format has it: ``task.toml``, ``instruction.md``,
``environment/Dockerfile`` (``FROM`` the base, a file of the task's own copied in, so each task
has an image of its own), ``tests/test.sh`` (reward 1 where ``answer.txt`` holds 42, written
to ``/logs/verifier/reward.txt``) and ``solution/solve.sh``. The folders' contents are the same
on every run, so their images (keyed by the build context) are built once per machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fencecall.environments import ContainerCli

from . import fast_model_server

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = "trial"
"""The server's script for the trials (the model named ``local/trial``)."""
REPLIES = ("```shell\necho 42 > answer.txt\n```\n", "```shell\ncat answer.txt\n```\n",
           "Done.")
"""Two tool calls (the second sees the first's file), then the answer."""
CALLS = 2

TOML = """\
schema_version = "1.1"
[environment]
allow_internet = false
[agent]
timeout_sec = 120
[verifier]
timeout_sec = 60
"""
TEST = """\
#!/bin/bash
if grep -qx 42 answer.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""
SOLVE = "#!/bin/bash\necho 42 > answer.txt\n"


def base_image(cli: ContainerCli) -> str:
    """The tests' base image, built first where this machine has none (about a minute);
    SystemExit saying why where it cannot be (the helper skips a test there)."""
    import pytest
    from tests.containers import BASE_IMAGE, build_base

    try:
        build_base(cli)
    except pytest.skip.Exception as err:
        raise SystemExit(f"no base image {BASE_IMAGE}: {err.msg}") from None
    return BASE_IMAGE


def make_tasks(root: Path, count: int, image: str) -> list[Path]:
    """``count`` task folders in ``root``, each with an image of its own on ``image``."""
    tasks = []
    for index in range(count):
        folder = root / f"task-{index}"
        for sub in ("environment", "tests", "solution"):
            (folder / sub).mkdir(parents=True)
        (folder / "task.toml").write_text(TOML)
        (folder / "instruction.md").write_text(
            f"Write 42 into answer.txt (task {index}).\n")
        (folder / "environment" / "Dockerfile").write_text(
            f"FROM {image}\nCOPY task.txt /opt/task.txt\n")
        (folder / "environment" / "task.txt").write_text(
            f"fencecall benchmark task {index}\n")
        (folder / "tests" / "test.sh").write_text(TEST)
        (folder / "solution" / "solve.sh").write_text(SOLVE)
        tasks.append(folder)
    return tasks


def start_server(delay: float) -> tuple[subprocess.Popen[str], str]:
    """:mod:`benchmarks.fast_model_server` in a process of its own, with the trials' script
    added: the process (stop it with :func:`fast_model_server.stop`) and its base URL."""
    code = ("import json, sys\nfrom benchmarks import fast_model_server as server\n"
            f"server.SCRIPTS[{SCRIPT!r}] = tuple(json.loads(sys.argv[1]))\n"
            "sys.exit(server.main(sys.argv[2:]))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.Popen([sys.executable, "-c", code, json.dumps(REPLIES), "--delay",
                             str(delay)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env, cwd=ROOT)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        fast_model_server.stop(proc)
        raise RuntimeError(f"the fake model server did not start (it said {url!r})")
    return proc, url
