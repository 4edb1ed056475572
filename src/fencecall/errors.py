"""The two families of errors fencecall raises, and who reads them.

::

    Exception
    ├── UserError               the user's to fix: the CLI prints one line, exits 2
    │   ├── ConfigError         (config) a bad setting; names the file and the key
    │   ├── UnknownToolError    (tools.registry) an allowlist names no tool
    │   ├── ToolLoadError       (tools.loading) a tool file or plugin would not load
    │   ├── ConversationError   (agent.conversation) a bad, taken or missing name
    │   ├── ContextOverflow     (agent.context) the prompt and task cannot fit the window
    │   ├── TaskError           (batch.tasks) a bad line in a batch's tasks file
    │   ├── ResultFileError     (batch.results) a batch's results file cannot be used
    │   └── InputError          (cli.inputs) a file the user named cannot be read
    ├── ToolError               the model's to hear: the call's result, with status "error"
    │   ├── ArgumentError       (tools.parameters) arguments that do not fit the parameters
    │   └── McpServerError      (tools.mcp) an MCP server failed to start, crashed, or hung
    └── ProviderError           (providers) the model API failed; the loop stops and says so

A tool raises :class:`ToolError` with a message written for the model; the execution
pipeline turns it into that call's result in one place. Any other exception in a tool is
reported the same way with its type, so a tool can never take the agent loop down.
"""


from __future__ import annotations

import signal
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

V = TypeVar("V")


class UserError(Exception):
    """Something the user asked for cannot be done as asked; the message says why."""


class ToolError(Exception):
    """A tool call failed; the message is what the model is told."""


class SignalInterrupt(KeyboardInterrupt):
    """SIGTERM or SIGHUP raised as Ctrl-C's exception, where only that one passes (Ray's
    waits): wherever it ends the run, the run exits with 128 + ``signum``, not Ctrl-C's 130."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def unknown_settings(given: Iterable[str], known: Iterable[str], where: str = "") -> str | None:
    """What is wrong with ``given`` keys of a table where only ``known`` ones mean something:
    ``"max_step: unknown setting; did you mean max_steps?"`` (prefixed by ``where.``), for the
    first unknown key; None when every key is known. A typo must not pass for a default."""
    choices = sorted(known)
    unknown = sorted(set(given) - set(choices))
    if not unknown:
        return None
    key = unknown[0]
    import difflib  # only where a key is wrong

    close = difflib.get_close_matches(key, choices, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(choices)}"
    return f"{where + '.' if where else ''}{key}: unknown setting; {hint}"


def new_names(table: Mapping[str, V], renamed: Mapping[str, str], where: str,
              error: Callable[[str], Exception]) -> dict[str, V]:
    """``table`` with each key that a setting was once called (``renamed``: old to new) under
    its new name, so that a file or a task line written before the rename still loads. Both
    names at once raise ``error(message)``: which value was meant cannot be told."""
    found = dict(table)
    for old, new in renamed.items():
        if old not in found:
            continue
        if new in found:
            prefix = where + "." if where else ""
            raise error(f"{prefix}{old} and {prefix}{new}: {old} is the old name of {new}; "
                        f"give only {new}")
        found[new] = found.pop(old)
    return found
