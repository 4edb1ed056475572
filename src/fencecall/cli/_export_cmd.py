"""``fencecall export CONVERSATION``: a conversation as ATIF, markdown or HTML.

A model's text can hold what a terminal acts on (escape sequences, bidi overrides): shown on
a terminal, the export goes through :func:`~fencecall.cli.visible.visible`, and ATIF's JSON
always has such characters escaped (the same data for a JSON reader). A file or a pipe gets
the text as it is.
"""

from __future__ import annotations

import argparse
import sys

from ..agent import Conversation
from ..config import load_config
from ..export import export
from .visible import json_visible, visible


def run(args: argparse.Namespace) -> int:
    config = load_config()
    conversation = Conversation.open(config.home, args.conversation)  # none: exit 2
    kind = args.format  # an export's kind, not a call format
    text = export(conversation, kind, lambda model: config.model_settings(model).price)
    if kind == "atif":
        text = json_visible(text)
    if args.output is None:
        sys.stdout.write(visible(text) if sys.stdout.isatty() else text)
    else:
        args.output.write_text(text, encoding="utf-8")
    return 0
