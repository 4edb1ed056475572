"""Where a run's tools execute, besides the host and the bwrap sandbox: the protocol of such
a place (:class:`Environment`), and a container of an image run with podman or docker
(:class:`ContainerEnvironment`, over :mod:`._container_cli`)."""

from __future__ import annotations

from ._choice import EnvironmentChoice, parse_environment
from ._container import DEFAULT_WORKDIR, ContainerEnvironment
from ._container_cli import (
    CLIS,
    LABEL,
    OWNER_LABEL,
    ContainerCli,
    ContainerError,
    ContainerUnavailable,
    ImageInfo,
    choose_container_cli,
    owner,
)
from ._environment import Environment

__all__ = ["CLIS", "DEFAULT_WORKDIR", "LABEL", "OWNER_LABEL", "ContainerCli",
           "ContainerEnvironment", "ContainerError", "ContainerUnavailable", "Environment",
           "EnvironmentChoice", "ImageInfo", "choose_container_cli", "owner", "parse_environment"]
