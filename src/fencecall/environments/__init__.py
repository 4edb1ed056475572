"""Where a run's tools execute, besides the host and the bwrap sandbox: a container of a
task's image, run with podman or docker (:mod:`._container_cli`)."""

from __future__ import annotations

from ._container_cli import (
    CLIS,
    LABEL,
    OWNER_LABEL,
    ContainerCli,
    ContainerError,
    ContainerUnavailable,
    choose_container_cli,
    owner,
)

__all__ = ["CLIS", "LABEL", "OWNER_LABEL", "ContainerCli", "ContainerError",
           "ContainerUnavailable", "choose_container_cli", "owner"]
