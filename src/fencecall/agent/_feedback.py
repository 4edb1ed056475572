"""The feedback on a reply that meant to run more than it did, in one system message.

Two things are told: the code blocks of known tools this run did not load (``--tools`` left
shell out, yet the model wrote ```` ```shell ````), whether or not another call of the reply
ran, since the model would otherwise take the block for run; and, where nothing ran, the
near misses (see :mod:`._near_miss`). The loop counts a reply so told that ran nothing toward
its feedback limit, as it counts a near miss.
"""

from __future__ import annotations

from ..execution.unloaded import notice, unloaded_blocks
from ..message import CannotRun, Message, Status, system
from ..parsing import CallFormat
from ..tools import Toolchain
from ._near_miss import near_misses

EXAMPLE = "If it was only meant as an example, say so and go on."


def reply_feedback(text: str, fmt: CallFormat, toolchain: Toolchain, *,
                   misses: bool) -> Message | None:
    """The feedback on reply ``text``: its blocks of tools not loaded here, and with
    ``misses`` its near misses; None where there is nothing to tell."""
    blocks = unloaded_blocks(text, fmt, toolchain)
    found = near_misses(text, fmt, toolchain) if misses else []
    if not blocks and not found:
        return None
    parts = [notice(blocks, text, toolchain)] if blocks else []
    parts += [miss.message() for miss in found]
    note = CannotRun(near_misses=tuple(miss.kind for miss in found),
                     unloaded=tuple(dict.fromkeys(spec.name for _, spec in blocks)))
    return system("\n\n".join([*parts, EXAMPLE]), Status.ERROR, note=note)
