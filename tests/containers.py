"""A real container base image for the tests, built once per machine and kept.

No image registry is reachable here, so the base is made from Debian's packages:
``debootstrap --variant=minbase`` with python3 (the python tool's driver needs it) and the
CA certificates, the host's extra ones added (HTTPS to the registries passes a proxy that
re-signs it, on the host and in a container alike), then imported as :data:`BASE_IMAGE`.
That takes about a minute, once: later runs find the image. A machine without podman (or
without debootstrap) skips the tests that need it, saying why; ``.ci/run`` installs both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fencecall.environments import ContainerCli, ContainerUnavailable, choose_container_cli

BASE_IMAGE = "fencecall-test-base"
MIRROR = "http://deb.debian.org/debian"
HOST_CERTIFICATES = Path("/usr/local/share/ca-certificates")
_BUILD_TIMEOUT = 900


def container_cli() -> ContainerCli:
    """podman (the tests use it as the product would choose it), or a skip saying why."""
    try:
        cli = choose_container_cli("podman")
    except ContainerUnavailable as err:
        pytest.skip(f"no container CLI: {err}")
    return cli


def build_base(cli: ContainerCli) -> None:
    """Make :data:`BASE_IMAGE` from debootstrap, unless the machine has it."""
    if cli.image_exists(BASE_IMAGE):
        return
    if shutil.which("debootstrap") is None:
        pytest.skip("debootstrap is not installed (apt-get install -y debootstrap)")
    with tempfile.TemporaryDirectory(prefix="fencecall-base-") as folder:
        root = Path(folder) / "root"
        subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,ca-certificates",
                        "bookworm", str(root), MIRROR], check=True, capture_output=True,
                       timeout=_BUILD_TIMEOUT)
        if HOST_CERTIFICATES.is_dir():
            target = root / HOST_CERTIFICATES.relative_to("/")
            shutil.copytree(HOST_CERTIFICATES, target, dirs_exist_ok=True)
            subprocess.run(["chroot", str(root), "update-ca-certificates"], check=True,
                           capture_output=True, timeout=120)
        (root / "work").mkdir(exist_ok=True)
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        subprocess.run(cli.argv("import", "--change", "WORKDIR /work", "--change",
                                'CMD ["/bin/bash"]', "-", BASE_IMAGE),
                       stdin=tar.stdout, check=True, capture_output=True, timeout=300)
        assert tar.wait() == 0


DOCKER_SHIM = r"""#!/bin/sh
# docker as fencecall sees it: podman behind (with the runtime this machine needs, as a
# docker daemon has its own), refusing the flags only podman has.
refuse() { echo "unknown flag: $1" >&2; exit 125; }
case "$1" in --runtime*) refuse "$1";; esac
for arg; do case "$arg" in --preserve-fds*) refuse "$arg";; esac; done
if [ "$1" = rm ]; then for arg; do case "$arg" in --time*) refuse "$arg";; esac; done; fi
if [ "$1" = version ]; then
    printf 'Client: Docker Engine - Community\n Version: 24.0.7\n'; exit 0
fi
exec podman --runtime runc "$@"
"""


def docker_shim(folder: Path) -> Path:
    """A folder holding an executable ``docker`` (:data:`DOCKER_SHIM`): put first on PATH,
    fencecall's ``docker`` is podman without podman's own flags. Docker cannot be installed
    here; this tests the path docker takes."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "docker"
    shim.write_text(DOCKER_SHIM)
    shim.chmod(0o755)
    return folder


@pytest.fixture
def docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ContainerCli:
    """The container CLI ``docker``, found on PATH: the shim of :func:`docker_shim`."""
    shims = docker_shim(tmp_path / "shims")
    monkeypatch.setenv("PATH", f"{shims}:{os.environ['PATH']}")
    cli = choose_container_cli("docker")
    assert (cli.program, cli.path) == ("docker", str(shims / "docker"))
    return cli


@pytest.fixture(scope="session")
def base_image() -> Iterator[str]:
    """The name of the base image (built now if this machine has none), with podman."""
    cli = container_cli()
    build_base(cli)
    yield BASE_IMAGE


def cli_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The subcommands every :meth:`ContainerCli.call` runs from now on (the list grows)."""
    seen: list[str] = []
    original = ContainerCli.call

    def call(self: ContainerCli, *args: str, **options: Any) -> Any:
        seen.append(args[0])
        return original(self, *args, **options)

    monkeypatch.setattr(ContainerCli, "call", call)
    return seen
