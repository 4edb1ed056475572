"""Exporting a conversation: a trajectory in Harbor's ATIF (``ATIF-v1.8``, for trajectory
tools and training sets), a markdown transcript, or one self-contained HTML page."""

from __future__ import annotations

import json
from typing import Literal

from ..agent import Conversation
from ._atif import ATIF_VERSION, PriceOf, trajectory
from ._html import html
from ._markdown import markdown
from ._turns import turns

ExportFormat = Literal["atif", "markdown", "html"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("atif", "markdown", "html")


def export(conversation: Conversation, kind: ExportFormat,
           prices: PriceOf = lambda model: None) -> str:
    """``conversation`` as ``kind`` says; ``prices`` gives a model's configured price."""
    found = turns(conversation.messages, str(conversation.settings.get("format") or "markdown"))
    if kind == "atif":
        return json.dumps(trajectory(conversation.name, found, conversation.settings, prices),
                          indent=2, ensure_ascii=False, default=str) + "\n"
    if kind == "html":
        return html(conversation.name, found, prices)
    return markdown(conversation.name, found, prices)


__all__ = ["ATIF_VERSION", "EXPORT_FORMATS", "ExportFormat", "PriceOf", "export"]
