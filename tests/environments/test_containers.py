"""The real podman: a labelled container of the base image started (with the fixes this
machine needs found on the way), commands run in it, files copied, and the containers of a
fencecall killed with ``kill -9`` removed by the next one's sweep."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from fencecall.environments import ContainerCli

from ..containers import base_image, container_cli

__all__ = ["base_image"]


def running(cli: ContainerCli, label: str) -> list[str]:
    done = cli.call("ps", "--all", "--quiet", "--filter", f"label={label}")
    return done.stdout.split()


def test_a_container_runs_commands_takes_files_and_is_removed(base_image: str,
                                                              tmp_path: Path) -> None:
    cli = container_cli()
    container = cli.start(base_image, labels={"dev.fencecall.test": "one"})
    try:
        assert [container[:12]] == running(cli, "dev.fencecall.test=one")
        done = subprocess.run(cli.exec_argv(container, ["sh", "-c", "pwd; cat /etc/os-release"]),
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("/work\n") and "bookworm" in done.stdout
        offline = subprocess.run(cli.exec_argv(container, [
            "python3", "-c", "import socket; socket.create_connection(('deb.debian.org', 80), 5)"]),
            capture_output=True, text=True, timeout=60)
        assert offline.returncode != 0  # no network unless asked
        (tmp_path / "in.txt").write_text("hello\n")
        cli.copy_in(container, tmp_path / "in.txt", "/work/in.txt")
        cli.copy_out(container, "/work/in.txt", tmp_path / "out.txt")
        assert (tmp_path / "out.txt").read_text() == "hello\n"
    finally:
        cli.remove(container)
    assert running(cli, "dev.fencecall.test=one") == []


def test_the_containers_of_a_killed_fencecall_are_swept(base_image: str, tmp_path: Path) -> None:
    cli = container_cli()
    script = textwrap.dedent(f"""
        import os, sys
        from fencecall.environments import choose_container_cli
        cli = choose_container_cli("podman")
        print(cli.start({base_image!r}, labels={{"dev.fencecall.test": "swept"}}), flush=True)
        os.kill(os.getpid(), 9)
    """)
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert killed.returncode == -9, killed.stderr
    left = running(cli, "dev.fencecall.test=swept")
    assert left, "the killed process started no container"
    mine = cli.start(base_image, labels={"dev.fencecall.test": "kept"})
    try:
        swept = cli.sweep()
        assert running(cli, "dev.fencecall.test=swept") == []
        assert set(left) <= set(swept)
        assert running(cli, "dev.fencecall.test=kept")  # its owner (this process) runs
    finally:
        cli.remove(mine)
