"""A run driven by a script or another program: ``--output-format json|stream-json``, and
``--input-format stream-json`` for a session of many prompts read as JSON lines on stdin.

Nobody is asked anything, since stdout belongs to the program reading it: ``-y`` confirms
every call, otherwise a call that needs a yes is declined (the model is told so). What a
text run prints for a person goes to stderr as JSON lines (``notice``, ``warning``,
``error``), and each prompt ends with a ``result`` line on stdout, also when the run could
not start or an input line could not be read, so a program waiting for it is never left
hanging. The exit status is the same as a text run's (see ``Outcome.exit_code``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from typing import TYPE_CHECKING, Any, TextIO

from .. import telemetry
from ..config import Config, load_config
from ..errors import UserError
from ..execution import auto_no, auto_yes
from ..message import Outcome
from ._inputs import piped_prompt
from ._stream_json import (
    JsonLines,
    RunEvents,
    failure_event,
    init_event,
    result_event,
    say_json,
)

if TYPE_CHECKING:  # a saved reply's run (run --output-format json) shares show_warning only
    from ..agent import Agent
    from ..agent.stats import PriceOf


def run_headless(args: argparse.Namespace) -> int:
    started = time.monotonic()
    streaming = args.output_format == "stream-json"
    lines = JsonLines(sys.stdout, streaming=streaming)
    warnings.showwarning = show_warning
    try:
        _check(args, streaming)
        config = load_config()
        with telemetry.using(telemetry.from_settings(config.telemetry,
                                                     content=config.telemetry_content)):
            return _run(args, config, lines)
    except UserError as err:
        say_json("error")(str(err))
        lines.write(failure_event("error_usage", str(err), 2, started))
        return 2
    except KeyboardInterrupt:  # outside a turn (one ends as error_interrupted itself)
        say_json("error")("interrupted")
        lines.write(failure_event("error_interrupted", "interrupted", 130, started))
        return 130


def _check(args: argparse.Namespace, streaming: bool) -> None:
    if args.input_format == "stream-json" and not streaming:
        raise UserError("--input-format stream-json needs --output-format stream-json")
    if args.include_partial and not streaming:
        raise UserError("--include-partial needs --output-format stream-json")
    if args.input_format == "stream-json" and args.prompt:
        raise UserError("--input-format stream-json reads the prompts from stdin; give no "
                        "PROMPT on the command line")
    if args.input_format == "text" and not args.prompt and sys.stdin.isatty():
        raise UserError("--output-format json and stream-json need a prompt, on the command "
                        "line or on stdin (or --input-format stream-json)")


def _run(args: argparse.Namespace, config: Config, lines: JsonLines) -> int:
    from ._agent_from_flags import Frontend, build_agent, settle_resume

    def prices(model: str) -> Any:
        return config.model_settings(model).price

    events = RunEvents(lines, prices, partial=args.include_partial)
    frontend = Frontend(auto_yes if args.yes else auto_no, events, say_json("notice"),
                        say_json("warning"))
    settle_resume(args, config)
    prompt = None if args.input_format == "stream-json" else " ".join(args.prompt) \
        if args.prompt else piped_prompt(resuming=bool(args.resume))
    agent = build_agent(args, config, frontend)
    try:
        events.attach(agent.session.toolchain, agent.conversation.name)
        lines.write(init_event(agent.session, f"{agent.provider.name}/{agent.model}",
                               agent.format.name, yes=args.yes))
        if prompt is None:
            return _turns(agent, lines, prices, sys.stdin)
        return _turn(agent, lines, prices, prompt)
    finally:
        agent.session.close()
        agent.conversation.close()


def _turn(agent: Agent, lines: JsonLines, prices: PriceOf, prompt: str) -> int:
    """Work on one prompt (an empty one continues a resumed conversation) and write its
    ``result``; its exit status."""
    from ..providers import ProviderError

    started = time.monotonic()
    messages = agent.conversation.messages
    first = len(messages)
    answer: str | None = None
    try:
        outcome = (agent.send(prompt) if prompt
                   else agent.resume() if messages else Outcome.DONE)
    except ProviderError as err:
        outcome, answer = Outcome.ERROR, str(err)
        say_json("error")(answer)
    lines.write(result_event(outcome, messages[first:], started, prices, answer=answer))
    return outcome.exit_code


def _turns(agent: Agent, lines: JsonLines, prices: PriceOf, source: TextIO) -> int:
    """A prompt per input line, each answered by its ``result``; the last one's exit
    status. A line that is not a user message is answered by an ``error_input`` result
    and skipped."""
    code = 0
    for number, line in enumerate(source, 1):
        if not line.strip():
            continue
        try:
            prompt = user_text(json.loads(line))
        except ValueError as err:
            text = f"input line {number}: {err}"
            say_json("error")(text)
            lines.write(failure_event("error_input", text, 2, time.monotonic()))
            code = 2
            continue
        code = _turn(agent, lines, prices, prompt)
    return code


def user_text(value: Any) -> str:
    """The text of a user message as Claude Code's stream-json input writes it
    (``{"type": "user", "message": {"role": "user", "content": TEXT or [{"type": "text",
    "text": TEXT}, ...]}}``), or ``{"type": "user", "content": ...}``; ValueError saying
    what is wrong with anything else."""
    if not isinstance(value, dict) or value.get("type") != "user":
        raise ValueError('expected a JSON object with "type": "user"')
    message = value.get("message", value)
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        text = content
    elif isinstance(content, list) and content:
        text = "".join(_text_part(part) for part in content)
    else:
        raise ValueError('expected "message": {"content": TEXT or a list of text parts}')
    if not text.strip():
        raise ValueError("the message is empty")
    return text


def _text_part(part: Any) -> str:
    if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"),
                                                                             str):
        return str(part["text"])
    kind = part.get("type") if isinstance(part, dict) else type(part).__name__
    raise ValueError(f"only text parts are read, not {kind!r}")


def show_warning(message: Warning | str, category: type[Warning], filename: str,
                  lineno: int, file: TextIO | None = None, line: str | None = None) -> None:
    """Python's warnings, as JSON lines on stderr like every other note of a JSON run."""
    say_json("warning")(f"{category.__name__}: {message}")
