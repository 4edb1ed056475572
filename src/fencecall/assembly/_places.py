"""Starting the environment a run's settings name (a container of an image), which the run's
session then owns and closes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..environments import parse_environment
from ._run_settings import RunSettings

if TYPE_CHECKING:
    from ..environments import ContainerEnvironment


def start_environment(settings: RunSettings, files: Path | None = None,
                      workdir: str | None = None, *, cpus: float | None = None,
                      memory_mb: int | None = None) -> ContainerEnvironment | None:
    """The container of ``settings.environment`` (None where the tools run on the host or
    in the sandbox), its working folder ``workdir`` (default: the image's) held in ``files``
    (default: the workspace) and filled from the image where that folder is empty; ``cpus``
    and ``memory_mb`` limit it (a batch task's)."""
    choice = parse_environment(settings.environment)
    if choice.kind != "container" or choice.image is None:
        return None
    from ..environments import ContainerEnvironment, choose_container_cli  # containers only

    cli = choose_container_cli(None if settings.container_cli == "auto"
                               else settings.container_cli)
    return ContainerEnvironment.start(choice.image, files or settings.workspace, cli=cli,
                                      workdir=workdir, network=settings.network, cpus=cpus,
                                      memory_mb=memory_mb)
