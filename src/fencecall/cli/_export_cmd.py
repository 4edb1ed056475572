"""``fencecall export CONVERSATION``: a conversation as ATIF, markdown or HTML."""

from __future__ import annotations

import argparse
import sys

from ..agent import Conversation
from ..config import load_config
from ..export import export


def run(args: argparse.Namespace) -> int:
    config = load_config()
    conversation = Conversation.open(config.home, args.conversation)  # none: exit 2
    text = export(conversation, args.format, lambda model: config.model_settings(model).price)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    return 0
