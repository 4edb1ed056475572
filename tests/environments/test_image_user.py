"""An image whose USER is not root: its shell, python and fencecall's file tools share the
working folder both ways. The folder fencecall fills from the image is given to that user,
the scripts the shell sources are readable to it, and what the file tools write keeps the
owner of what it replaces or takes its folder's, so each side can go on writing what the
other wrote. With podman, and with docker (the shim of tests/containers.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fencecall.assembly import Overrides, resolve_settings, tool_session
from fencecall.config import Config
from fencecall.environments import ContainerCli, ContainerEnvironment, ContainerError
from fencecall.execution import auto_yes

from ..containers import base_image, container_cli, docker
from ..support import F

__all__ = ["base_image", "docker"]

IMAGE = "fencecall-test-agent"
UID = 1234
CONTAINERFILE = f"""FROM {{base}}
RUN useradd --uid {UID} --create-home agent && mkdir /home/agent/project \\
    && echo from-the-image > /home/agent/project/given.txt \\
    && chown -R agent:agent /home/agent/project
USER agent
WORKDIR /home/agent/project
"""


@pytest.fixture(scope="session")
def agent_image(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The base image with a user ``agent`` (not root) and its project folder, built once
    per machine (``RUN`` needs the machine's fixes, which a first start finds)."""
    cli = container_cli()
    if not cli.image_exists(IMAGE):
        cli.remove(cli.start(base_image))
        context = tmp_path_factory.mktemp("agent-image")
        (context / "Containerfile").write_text(CONTAINERFILE.format(base=base_image))
        cli.call("build", *cli.run_flags, "--tag", IMAGE, str(context), timeout=600)
    return IMAGE


@pytest.fixture(params=["podman", "docker"])
def place(request: pytest.FixtureRequest, agent_image: str, tmp_path: Path
          ) -> Iterator[ContainerEnvironment]:
    cli: ContainerCli = container_cli() if request.param == "podman" else \
        request.getfixturevalue("docker")
    with ContainerEnvironment.start(agent_image, tmp_path / "files", cli=cli) as env:
        yield env


def _owners(folder: Path) -> set[tuple[str, int]]:
    return {(str(path.relative_to(folder)), path.lstat().st_uid)
            for path in [folder, *folder.rglob("*")]}


def test_the_images_user_and_the_file_tools_write_each_others_files(
        place: ContainerEnvironment, tmp_path: Path) -> None:
    files = place.files
    assert (files / "given.txt").read_text() == "from-the-image\n"
    settings = resolve_settings(Config(), Overrides(workspace=tmp_path / "unused"), env={})
    with tool_session(settings, Config(), confirm=auto_yes, environment=place) as session:
        def call(text: str) -> str:
            [said] = session.execute(f"{F}{text}\n{F}")
            return said.content

        made = call("shell\nid -u; echo more >> given.txt; mkdir -p made && echo m > made/x")
        assert f"{UID}\n" in made and "Exit code: 0" in made, made
        assert "Created" in call("save new/deep/saved.txt\nsaved on the host")
        assert "Patched" in call("patch made/x\n<<<<<<< ORIGINAL\nm\n=======\npatched\n"
                                 ">>>>>>> UPDATED")
        again = call("shell\necho appended >> new/deep/saved.txt && cat made/x "
                     "&& touch new/deep/also")
        assert "patched" in again and "Exit code: 0" in again, again
        python = call("ipython\nimport os\nopen('new/py.txt', 'w').write('py')\n"
                      "print(os.getuid(), open('given.txt').read())")
        assert f"{UID} from-the-image\nmore" in python, python
        assert "from-the-image" in call("read given.txt")
    assert (files / "new/deep/saved.txt").read_text() == "saved on the host\nappended\n"
    if os.geteuid() == 0:  # only root can give files away
        assert {owner for _, owner in _owners(files)} == {UID}, _owners(files)


def test_the_variables_the_user_passes_reach_the_shell_and_python_and_no_others(
        place: ContainerEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASSED_GREETING", "hello from the host")
    monkeypatch.setenv("PASSED_TOKEN", "a-secret-value")
    monkeypatch.setenv("NOT_PASSED", "host only")
    config = Config(pass_env=("PASSED_*",), secrets=("PASSED_TOKEN",))
    settings = resolve_settings(config, Overrides(workspace=tmp_path / "unused"), env={})
    with tool_session(settings, config, confirm=auto_yes, environment=place) as session:
        [shell] = session.execute(f"{F}shell\n"
                                  'echo "[$PASSED_GREETING|$PASSED_TOKEN|$NOT_PASSED|$HOME]"'
                                  f"\n{F}")
        [python] = session.execute(f"{F}ipython\nimport os\n"
                                   "print(sorted(k for k in os.environ if 'PASS' in k))"
                                   f"\n{F}")
    # the image's HOME, not fencecall's; a secret is never passed, even when a glob names it
    assert "[hello from the host|||/home/agent]" in shell.content, shell.content
    assert "['PASSED_GREETING']" in python.content, python.content


def test_a_view_as_another_user_runs_the_tools_as_it_and_leaves_the_container_be(
        place: ContainerEnvironment, tmp_path: Path) -> None:
    """As a task's agent runs as a user of its own: its shell and python run as that user,
    the files the file tools make are its own (so its shell writes on them, in a folder it
    could not write), closing the view leaves the container, and a user the image does not
    have is refused."""
    with pytest.raises(ContainerError, match="the user 'nobody-here' has no id"):
        place.as_user("nobody-here")
    nobody = place.as_user("nobody")
    settings = resolve_settings(Config(), Overrides(workspace=tmp_path / "unused"), env={})
    with tool_session(settings, Config(), confirm=auto_yes, environment=nobody) as session:
        def call(text: str) -> str:
            [said] = session.execute(f"{F}{text}\n{F}")
            return said.content

        assert "Created" in call("save made/saved.txt\nsaved")
        shell = call("shell\nid -un; echo more >> made/saved.txt; touch not-here")
        assert "```\nnobody\n```" in shell and "Permission denied" in shell, shell
        assert "65534" in call("ipython\nimport os\nprint(os.getuid())")
    nobody.close()
    assert place.exec(["id", "-un"]) == (0, "agent\n", "")
    assert (place.files / "made/saved.txt").read_text() == "saved\nmore\n"
    if os.geteuid() == 0:
        assert {owner for _, owner in _owners(place.files / "made")} == {65534}
