"""Where a run's tools execute, besides the host and the bwrap sandbox: the protocol of such
a place (:class:`Environment`), and a container of an image run with podman or docker
(:class:`ContainerEnvironment`, over :mod:`._container_cli`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
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
else:
    __getattr__, __dir__ = lazy_names(__name__, {
        "._choice": ("EnvironmentChoice", "parse_environment"),
        "._container": ("DEFAULT_WORKDIR", "ContainerEnvironment"),
        "._container_cli": ("CLIS", "LABEL", "OWNER_LABEL", "ContainerCli", "ContainerError",
                            "ContainerUnavailable", "ImageInfo", "choose_container_cli",
                            "owner"),
        "._environment": ("Environment",),
    })

__all__ = ["CLIS", "DEFAULT_WORKDIR", "LABEL", "OWNER_LABEL", "ContainerCli",
           "ContainerEnvironment", "ContainerError", "ContainerUnavailable", "Environment",
           "EnvironmentChoice", "ImageInfo", "choose_container_cli", "owner", "parse_environment"]
