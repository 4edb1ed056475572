"""The ``environment`` setting as written: ``host``, ``sandbox`` or ``container:IMAGE``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CHOICES = "host, sandbox or container:IMAGE"


@dataclass(frozen=True, slots=True)
class EnvironmentChoice:
    """Where a run's tools run: ``kind`` and, for a container, its ``image``."""

    kind: Literal["host", "sandbox", "container"]
    image: str | None = None

    def __str__(self) -> str:
        return f"container:{self.image}" if self.kind == "container" else self.kind


def parse_environment(text: str) -> EnvironmentChoice:
    """``text`` read; ValueError naming the choices where it is none of them."""
    if text == "host":
        return EnvironmentChoice("host")
    if text == "sandbox":
        return EnvironmentChoice("sandbox")
    kind, _, image = text.partition(":")
    if kind == "container" and image.strip():
        return EnvironmentChoice("container", image.strip())
    raise ValueError(f"environment {text!r}: choose {CHOICES}")
