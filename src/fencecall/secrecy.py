"""Keeping secrets out of the tools' reach and out of what they say.

Three layers, strongest first: tool processes get an allow-listed environment, not ours minus
a deny list (:func:`tool_environment`); fencecall's own environment block is wiped of secret
values and made unreadable to other processes of the same user (:func:`scrub_own_environ`);
and known secret values are replaced in tool output before it is shown, logged or sent to a
model (:class:`Redactor`). The last one is a heuristic: a tool that can read a secret can
also print it encoded; the first two are what keep tools from reading it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fnmatch
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

TOOL_ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TERM", "USER", "LOGNAME",
                      "TZ", "SHELL", "TMPDIR")
"""What tool processes see of fencecall's environment, unless the user passes more."""
MIN_SECRET_LENGTH = 4
"""Shorter values are not redacted: replacing every "ab" in an output would garble it."""
_PR_SET_DUMPABLE = 4


def tool_environment(source: Mapping[str, str], extra: Iterable[str] = (), *,
                     secret_names: Iterable[str] = (),
                     allowlist: Iterable[str] = TOOL_ENV_ALLOWLIST) -> dict[str, str]:
    """The variables of ``source`` named in ``allowlist`` or ``extra`` (names or globs such
    as ``LC_*``), never one in ``secret_names``, even when a glob would admit it."""
    admitted = _matcher((*allowlist, *extra))
    hidden = frozenset(secret_names)
    return {name: value for name, value in source.items()
            if name not in hidden and admitted(name)}


@functools.lru_cache(maxsize=64)
def _matcher(patterns: tuple[str, ...]) -> Callable[[str], object]:
    """One compiled pattern for the globs (every session asks, with the same few lists)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match


class Redactor:
    """Replaces each known secret value in a text with ``[REDACTED:NAME]``."""

    def __init__(self, secrets: Mapping[str, str]):
        kept = {value: name for name, value in secrets.items()
                if len(value) >= MIN_SECRET_LENGTH}
        self._names = kept
        values = sorted(kept, key=len, reverse=True)  # longest first: a key holding another
        self._pattern = re.compile("|".join(map(re.escape, values))) if values else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda m: f"[REDACTED:{self._names[m.group()]}]", text)


def scrub_own_environ(names: Iterable[str]) -> list[str]:
    """Overwrite the values of ``names`` in this process's original environment block and
    forbid other unprivileged processes to read our memory and ``/proc/<pid>/environ``.

    ``os.environ`` is a copy, so Python code keeps the values; only what another process
    could read through ``/proc`` is wiped. Returns the names that were wiped (Linux only;
    elsewhere nothing happens).
    """
    stat = Path("/proc/self/stat")
    if not stat.exists():
        return []
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    fields = stat.read_text().rsplit(")", 1)[1].split()
    env_start, env_end = int(fields[47]), int(fields[48])  # fields 50 and 51 of proc(5)
    block = ctypes.string_at(env_start, env_end - env_start)
    wanted = {name.encode() for name in names}
    wiped = []
    offset = 0
    for entry in block.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name in wanted and value:
            ctypes.memset(env_start + offset + len(name) + 1, ord("x"), len(value))
            wiped.append(name.decode())
        offset += len(entry) + 1
    return wiped
