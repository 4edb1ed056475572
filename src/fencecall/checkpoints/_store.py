"""The store: file contents by their SHA-256, and one manifest per distinct workspace state.

A blob is the bytes of a file; a manifest maps each kept path to its kind (``f`` file,
``l`` symlink, ``d`` folder), its permission bits and its blob (a link's text, for a
link), plus the paths that were not kept and why. A manifest is named by the hash of its
canonical JSON, so a checkpoint of a workspace that did not change writes nothing. Blobs
are checked against their name when read back: a store that was tampered with fails the
restore instead of writing what it was given. Everything is written to a temporary name and
renamed, so a crash leaves the store as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PRIVATE = 0o700
Entry = tuple[str, int, str]
"""(kind, mode, blob or link text): ``("f", 0o644, HASH)``, ``("l", 0, "target")``,
``("d", 0, "")``."""


class StoreError(OSError):
    """The store lacks what a checkpoint names, or holds something else under its name."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """A workspace's state: its kept ``entries`` and what was ``skipped`` (path → why)."""

    entries: dict[str, Entry]
    skipped: dict[str, str] = field(default_factory=dict)

    def canonical(self) -> bytes:
        return json.dumps({"entries": self.entries, "skipped": self.skipped},
                          sort_keys=True, separators=(",", ":")).encode()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Store:
    """A folder of blobs (``objects/``) and manifests (``manifests/``), private to its
    owner: it holds copies of the workspace's files."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._objects = str(folder / "objects")
        for part in (folder, folder / "objects", folder / "manifests"):
            part.mkdir(mode=PRIVATE, parents=True, exist_ok=True)
        os.chmod(folder, PRIVATE)

    def _blob_path(self, name: str) -> Path:
        return Path(self._objects, name[:2], name[2:])

    def has_blob(self, name: str) -> bool:
        return os.path.exists(f"{self._objects}/{name[:2]}/{name[2:]}")

    def put_blob(self, data: bytes, name: str | None = None) -> str:
        """Keep ``data`` (whose hash is ``name``, where known); its name."""
        name = name or digest(data)
        path = self._blob_path(name)
        if not path.exists():
            path.parent.mkdir(mode=PRIVATE, exist_ok=True)
            _write_new(path, data)
        return name

    def blob(self, name: str) -> bytes:
        try:
            data = self._blob_path(name).read_bytes()
        except FileNotFoundError:
            raise StoreError(f"the checkpoint store {self.folder} lacks a file's "
                             f"contents ({name[:12]})") from None
        if digest(data) != name:
            raise StoreError(f"the checkpoint store {self.folder} holds other contents "
                             f"than recorded under {name[:12]}; it was changed")
        return data

    def save(self, manifest: Manifest) -> str:
        """Keep ``manifest``; its name (the same for the same state)."""
        data = manifest.canonical()
        name = digest(data)
        path = self.folder / "manifests" / name
        if not path.exists():
            _write_new(path, zlib.compress(data, 1))
        return name

    def load(self, name: str) -> Manifest:
        try:
            data = zlib.decompress((self.folder / "manifests" / name).read_bytes())
        except (FileNotFoundError, zlib.error):
            raise StoreError(f"the checkpoint store {self.folder} lacks checkpoint "
                             f"{name[:12]}, or it is damaged") from None
        if digest(data) != name:
            raise StoreError(f"checkpoint {name[:12]} in {self.folder} was changed")
        raw = json.loads(data)
        entries = {path: (str(kind), int(mode), str(value))
                   for path, (kind, mode, value) in raw["entries"].items()}
        return Manifest(entries, {str(k): str(v) for k, v in raw["skipped"].items()})

    def load_cache(self) -> dict[str, list[Any]]:
        """The stat cache the last scan left (empty where there is none, or it is unreadable)."""
        try:
            cache = json.loads((self.folder / "statcache.json").read_bytes())
        except (OSError, ValueError):
            return {}
        return cache if isinstance(cache, dict) else {}

    def save_cache(self, cache: dict[str, list[Any]]) -> None:
        _write_new(self.folder / "statcache.json",
                   json.dumps(cache, separators=(",", ":")).encode())


def _write_new(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    temp = path.with_name(f".{path.name[:16]}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
