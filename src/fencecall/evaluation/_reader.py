"""Typed reads of ``task.toml``: each known key checked where it is read, a wrong one a
:class:`TaskError` naming the file, the section and the key."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import UserError


class TaskError(UserError):
    """A task folder cannot be read as a Harbor task; the message names the file."""


class Reader:
    """Typed reads of ``task.toml``'s known keys (of the whole file, or of one step's table:
    ``where`` then names it); a wrong type is a :class:`TaskError`."""

    def __init__(self, path: Path, raw: Mapping[str, Any], where: str = ""):
        self.path, self.raw, self.where = path, raw, where

    def error(self, section: str, key: str, why: str) -> TaskError:
        return TaskError(f"{self.path}: {self.where}{f'[{section}] ' if section else ''}"
                         f"{key}: {why}")

    def section(self, name: str) -> Mapping[str, Any]:
        if not name:
            return self.raw
        found = self.raw.get(name, {})
        if not isinstance(found, dict):
            raise TaskError(f"{self.path}: {self.where}[{name}] must be a table")
        return found

    def user(self, section: str) -> str | None:
        """A ``user``: a name or a uid, as ``exec --user`` takes it."""
        value = self.section(section).get("user")
        if value is None or (isinstance(value, str) and value.strip()):
            return value
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return str(value)
        raise self.error(section, "user", "must be a user name or a uid")

    def hosts(self, section: str) -> tuple[str, ...] | None:
        """``allowed_hosts``: a list of texts."""
        value = self.section(section).get("allowed_hosts")
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(h, str) for h in value):
            raise self.error(section, "allowed_hosts", "must be a list of host names")
        return tuple(value)

    def text(self, section: str, key: str) -> str | None:
        value = self.section(section).get(key)
        if value is None or isinstance(value, str):
            return value
        if section == "" and isinstance(value, int | float):  # version = 1.0
            return str(value)
        raise self.error(section, key, "must be text")

    def number(self, section: str, key: str) -> float | None:
        value = self.section(section).get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or value <= 0:
            raise self.error(section, key, "must be a positive number")
        return float(value)

    def env(self, section: str) -> dict[str, str]:
        table = self.section(section).get("env", {})
        if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
            raise self.error(section, "env", "must be a table of texts")
        return dict(table)
