"""The empty, immutable ``kwargs`` every call without named arguments shares.

A module of its own because the compiled :mod:`.model` cannot hold a subclass of
:class:`~collections.abc.Mapping` (an ABC, whose metaclass a compiled class cannot have).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class _NoArguments(Mapping[str, Any]):
    """A reply of many small blocks makes thousands of calls, and a dict each is as many
    allocations that wake the cyclic garbage collector (which then walks every live object)
    far more often. It equals ``{}``, and pickles and copies as itself."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "{}"

    def __reduce__(self) -> str:
        return "NO_ARGUMENTS"


NO_ARGUMENTS: Mapping[str, Any] = _NoArguments()
