"""The command line's grammar, kept free of heavy imports so ``--help`` starts fast.

Each command names its handler as ``module:function``; the module is imported only when that
command runs. The grammar itself imports argparse and little else: the format names come
from :data:`fencecall.parsing.FORMATS`, which lists them without loading a parser, and
``pathlib`` loads when a path option is given.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from .. import __version__
from ..defaults import BACKGROUND_AFTER, BUILDS_AT_ONCE, CONCURRENCY, TRIALS_AT_ONCE
from ..parsing.formats import FORMATS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import TypeAlias

    Commands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
    """Where a command's parser is added."""

DEFAULT_FORMAT = "markdown"
"""The ``--format`` of ``parse`` and ``run``: the name of :data:`fencecall.parsing.MARKDOWN`
(written out so that ``--help`` loads no format to learn it; a test checks it)."""

COMMANDS = ("parse", "run", "chat", "list", "rewind", "stats", "export", "tools", "mcp",
            "batch", "eval", "acp")
OUTPUT_FORMATS = ("text", "json", "stream-json")
SANDBOX_POLICIES = ("read-only", "workspace-write", "off")
"""Strictest first: ``--resume`` restores no policy looser than the one in force."""
KEEP_WORKSPACES = ("all", "failed", "none")
"""``--keep-workspaces`` (:data:`fencecall.batch._runner.KeepPolicy`; named here so that
``--help`` imports nothing heavy)."""


def _at_least(minimum: float, kind: type[int] | type[float] = int
              ) -> Callable[[str], float]:
    """An argparse type: a number of ``kind`` no smaller than ``minimum``."""

    def convert(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum:g}, got {text}")
        return value

    return convert


def _path(text: str) -> Path:
    """An argparse type: ``pathlib.Path(text)`` (which takes any text), with pathlib
    imported only when a path is given."""
    import pathlib

    return pathlib.Path(text)


def _add_tool_options(parser: argparse.ArgumentParser, default_format: str | None) -> None:
    parser.add_argument("--format", "-f", choices=list(FORMATS), default=default_format,
                        help="how tool calls are written (default: markdown)")
    parser.add_argument("--tools", "-t", metavar="LIST",
                        help="comma-separated allowlist: names, globs (mcp.*), hint:TAG, "
                             "or .py files")
    parser.add_argument("-y", "--yes", action="store_true",
                        help="confirm every tool call without asking")
    parser.add_argument("--workspace", "-w", type=_path, default=None,
                        help="folder the tools work in (default: current folder; created "
                             "if missing)")
    parser.add_argument("--root", action="append", type=_path, default=[],
                        help="another folder file tools may touch (repeatable)")
    parser.add_argument("--sandbox", choices=SANDBOX_POLICIES, default=None,
                        help="what shell and python commands may do, enforced by bubblewrap: "
                             "read-only, workspace-write (default: writes only in the "
                             "workspace and --root folders), or off")
    parser.add_argument("--network", action="store_true", default=None,
                        help="let sandboxed commands reach the network")
    _add_environment(parser)
    parser.add_argument("--background-after", type=_at_least(0.0, float), default=None,
                        metavar="SECONDS",
                        help="a shell command still running after SECONDS goes on as a "
                             "background job instead of being killed (default: "
                             f"{BACKGROUND_AFTER:g}; 0: never)")
    parser.add_argument("--mcp", action="append", default=[], metavar="NAME=COMMAND",
                        help="use an MCP server's tools (as NAME.TOOL): a command started "
                             "over stdio, or a Streamable HTTP URL (repeatable)")
    _add_permission_rules(parser)


def _add_environment(parser: argparse.ArgumentParser) -> None:
    """``--environment`` (``--env``) and ``--container-cli``."""
    parser.add_argument("--environment", "--env", metavar="WHERE", default=None,
                        help="where shell and python run and whose files the file tools "
                             "touch: host, sandbox (default), or container:IMAGE (a "
                             "container of IMAGE, removed at the end; a task's image wins)")
    parser.add_argument("--container-cli", choices=("auto", "podman", "docker"), default=None,
                        help="podman or docker for --env container:IMAGE (default: auto, "
                             "the first that answers)")


def _add_permission_rules(parser: argparse.ArgumentParser) -> None:
    """``--allow`` and ``--deny``, which add to the configuration's ``[permissions]``."""
    parser.add_argument("--allow", action="append", default=[], metavar="RULE",
                        help="run calls the rule matches without asking, e.g. "
                             "'shell(git status *)', 'save(src/**)', 'read' (repeatable)")
    parser.add_argument("--deny", action="append", default=[], metavar="RULE",
                        help="refuse calls the rule matches, even with -y, e.g. "
                             "'shell(rm *)', 'read(**/.env)' (repeatable)")


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    """The model, its limits and its sampling: for the chat and the editors' agent."""
    parser.add_argument("--model", "-m", help="provider/name, e.g. openai/gpt-4o or local/qwen")
    parser.add_argument("--max-steps", type=_at_least(1), metavar="N",
                        help="model replies per prompt before stopping (exit status 1)")
    parser.add_argument("--budget-usd", type=_at_least(1e-9, float), metavar="USD",
                        help="stop before a request that could take the spend past USD "
                             "(exit status 3)")
    parser.add_argument("--budget-tokens", type=_at_least(1), metavar="N",
                        help="stop before a request that could take input and output tokens "
                             "past N (exit status 3)")
    parser.add_argument("--time-limit", type=_at_least(0.001, float), metavar="SECONDS",
                        help="stop once the run has taken SECONDS (exit status 4)")
    parser.add_argument("--max-tokens", type=_at_least(1), metavar="N",
                        help="output tokens asked of the model per reply")
    _add_request_timeout(parser, old="--timeout")
    parser.add_argument("--retries", type=_at_least(0), metavar="N",
                        help="tries again after a failed request or a broken reply stream")
    parser.add_argument("--temperature", type=_at_least(0.0, float), metavar="T",
                        help="sampling temperature (sent only when set)")
    parser.add_argument("--top-p", type=_at_least(0.0, float), metavar="P",
                        help="nucleus sampling (sent only when set)")
    parser.add_argument("--stop", action="append", default=None, metavar="TEXT",
                        help="a stop sequence (repeatable; sent only when set)")
    _add_logprobs(parser)
    parser.add_argument("--context-window", type=_at_least(256), metavar="TOKENS",
                        help="tokens the model holds: the prompt, history and reply must fit")
    parser.add_argument("--compaction", choices=("summary", "drop", "off"), default=None,
                        help="when the history outgrows the context window: replace older "
                             "exchanges by the model's summary (default), leave them out, or "
                             "send requests as they are (off)")
    parser.add_argument("--prompt", choices=("full", "compact"), default=None,
                        dest="prompt_mode",
                        help="system prompt form (default: compact for a context window of "
                             "8192 tokens or less, else full)")


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    """How a run with a prompt talks to a script: JSON out, and JSON prompts in."""
    parser.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text",
                        help="text for a person (default); json: only the final result "
                             "object; stream-json: one JSON event per line as it happens "
                             "(nobody is asked: without -y, calls that need a yes are "
                             "declined)")
    parser.add_argument("--include-partial", action="store_true",
                        help="with --output-format stream-json: the reply's text as it "
                             "streams too (text_delta events)")
    parser.add_argument("--input-format", choices=("text", "stream-json"), default="text",
                        help="stream-json: read user messages as JSON lines on stdin, one "
                             "prompt each, each answered by a result line")


def _add_logprobs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--logprobs", action="store_true", default=None,
                        help="ask an OpenAI-compatible server for each generated token's log "
                             "probability (and token id, where vLLM gives it), kept in the log "
                             "and in ATIF exports")


def _add_request_timeout(parser: argparse.ArgumentParser, old: str | None = None) -> None:
    """``--request-timeout``, the ``request_timeout`` of the configuration; ``old`` is the
    flag's former name, kept working but no longer shown."""
    seconds = _at_least(0.001, float)
    parser.add_argument("--request-timeout", type=seconds, metavar="SECONDS",
                        help="how long to wait for the model's server")
    if old is not None:
        parser.add_argument(old, type=seconds, dest="request_timeout", help=argparse.SUPPRESS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fencecall",
        description="An agent runtime in which a model's plain text is the tool call. "
                    "A bare `fencecall [PROMPT]` means `fencecall chat [PROMPT]`.")
    parser.add_argument("--version", action="version", version=f"fencecall {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_reply_commands(commands)  # in the order --help lists them
    _add_chat_commands(commands)
    _add_mcp(commands)
    _add_batch(commands)
    _add_eval(commands)
    _add_editor_commands(commands)
    return parser


def _add_reply_commands(commands: Commands) -> None:
    """``parse`` and ``run``: a saved reply's calls, listed or run (no model)."""
    parse = commands.add_parser(
        "parse", help="list the tool calls found in a saved model reply",
        description="List the tool calls found in FILE (a saved model reply; - for stdin), "
                    "and what was meant as a call but cannot run (exit status 1).")
    parse.add_argument("file", metavar="FILE")
    parse.add_argument("--format", "-f", choices=list(FORMATS), default=DEFAULT_FORMAT,
                       help="how the calls are written")
    parse.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parse.set_defaults(handler="fencecall.cli._parse_cmd:run")

    run = commands.add_parser(
        "run", help="execute the tool calls in a saved model reply",
        description="Execute the tool calls in REPLY (a saved model reply; - for stdin) and "
                    "print their results. Exits 1 if any call failed, was blocked or declined.")
    run.add_argument("reply", metavar="REPLY")
    run.add_argument("--json", action="store_true", help="print the results as a JSON list")
    run.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text",
                     help="json: only a final result object; stream-json: the calls and "
                          "results as JSON events, one per line (default: text)")
    _add_tool_options(run, DEFAULT_FORMAT)
    run.set_defaults(handler="fencecall.cli._run_cmd:run")


def _add_chat_commands(commands: Commands) -> None:
    """``chat``, ``stats`` of its conversations, and ``tools``, what a session would get."""
    chat = commands.add_parser(
        "chat", help="chat with a model that uses tools (the default command)",
        description="Chat with a model that uses tools. With PROMPT, work on it and exit.")
    chat.add_argument("prompt", nargs="*", help="run non-interactively on this prompt")
    chat.add_argument("--name", help="name for a new conversation")
    resume = chat.add_mutually_exclusive_group()
    resume.add_argument("--resume", "-r", metavar="NAME", help="continue a conversation")
    resume.add_argument("--continue", "-c", dest="continue_latest", action="store_true",
                        help="continue the latest conversation")
    _add_model_options(chat)
    _add_output_options(chat)
    chat.add_argument("--autonomous", action=argparse.BooleanOptionalAction, default=None,
                      help="with PROMPT: only the complete tool ends the run done; a reply "
                           "without a tool call gets a reminder (default: the config's "
                           "autonomous; not for an interactive chat)")
    _add_tool_options(chat, None)
    chat.set_defaults(handler="fencecall.cli._chat_cmd:run")

    _add_rewind(commands)
    stats = commands.add_parser(
        "stats", help="tool failures, durations, tokens and cost of conversations",
        description="Per tool: calls, failures, denials and p50/p95 duration; per model: "
                    "replies, tokens and cost. Of the named conversations, or all of them.")
    stats.add_argument("conversations", nargs="*", metavar="CONVERSATION")
    stats.add_argument("--json", action="store_true", help="print JSON instead of tables")
    stats.set_defaults(handler="fencecall.cli._stats_cmd:run")
    _add_export(commands)

    tools = commands.add_parser(
        "tools", help="list the tools a session would get, and why a known one is missing",
        description="List the tools a session would load (built-in, plugins, tool packages, "
                    "MCP servers) with their hints, the known tools it would leave out and "
                    "why, and the state of each MCP server.")
    _add_tool_options(tools, None)
    tools.set_defaults(handler="fencecall.cli._tools_cmd:run")


def _add_rewind(commands: Commands) -> None:
    """``rewind``: a conversation and its workspace back to before one of its turns."""
    rewind = commands.add_parser(
        "rewind", help="list a conversation's turns, or go back to before one",
        description="Without TURN, list the turns of CONVERSATION. With TURN, remove that "
                    "turn and those after it, and put the workspace's files back as they "
                    "were before it (from the checkpoints recorded before each call that "
                    "could write). Refuses when a file changed since it was recorded, "
                    "naming it, unless --force.")
    rewind.add_argument("conversation", metavar="CONVERSATION")
    rewind.add_argument("turn", metavar="TURN", nargs="?", type=_at_least(1), default=None)
    rewind.add_argument("--force", action="store_true",
                        help="overwrite files changed since they were recorded")
    rewind.set_defaults(handler="fencecall.cli._rewind:run")


def _add_export(commands: Commands) -> None:
    """``export``: a conversation as a trajectory (ATIF), a transcript or a page."""
    export = commands.add_parser(
        "export", help="export a conversation as ATIF, markdown or HTML",
        description="Write CONVERSATION (a name `fencecall list` shows) as a trajectory in "
                    "Harbor's ATIF (JSON), a markdown transcript (the default) or one "
                    "self-contained HTML page.")
    export.add_argument("conversation", metavar="CONVERSATION")
    export.add_argument("--format", choices=("atif", "markdown", "html"), default="markdown",
                        help="what to write (default: markdown)")
    export.add_argument("-o", "--output", type=_path, metavar="FILE",
                        help="write to FILE instead of standard output")
    export.set_defaults(handler="fencecall.cli._export_cmd:run")


def _add_mcp(commands: Commands) -> None:
    """``mcp serve``: the toolchain as an MCP server."""
    mcp = commands.add_parser("mcp", help="serve fencecall's tools over MCP",
                              description="Model Context Protocol commands.")
    mcp_commands = mcp.add_subparsers(dest="mcp_command", metavar="COMMAND", required=True)
    serve = mcp_commands.add_parser(
        "serve", help="expose the toolchain as an MCP server (stdio, or Streamable HTTP)",
        description="Serve the toolchain to MCP clients over stdio (default) or Streamable "
                    "HTTP. Each client session gets its own shell, interpreter and state. "
                    "Calls that need confirmation ask the client (MCP elicitation) where it "
                    "can; otherwise only read-only calls run, or every call with -y.")
    _add_tool_options(serve, None)
    serve.add_argument("--http", metavar="HOST:PORT",
                       help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio "
                            "(a bare PORT binds 127.0.0.1; a non-loopback HOST needs "
                            "--token-env)")
    serve.add_argument("--token-env", metavar="VAR",
                       help="require 'Authorization: Bearer <token>' over HTTP, the token "
                            "read from environment variable VAR")
    serve.set_defaults(handler="fencecall.cli._serve_cmd:run")


def _add_batch(commands: Commands) -> None:
    """``batch``: its files, the settings of tasks that give none, and its limits."""
    batch = commands.add_parser(
        "batch", help="run many tasks from a JSONL file, each in a session of its own",
        description="Run each task of TASKS (JSONL: id, prompt, and optionally workspace, "
                    "model, tools, format, max_steps, task_timeout, metadata) in a session "
                    "of its own (a copy of its workspace, its own shell, interpreter and log), "
                    "many at once, and append one line per finished task to RESULTS. Run it "
                    "again with the same --out to resume: finished tasks are skipped. Nobody "
                    "is asked: with -y every call runs (in the sandbox), without it calls "
                    "that need a yes are declined.")
    batch.add_argument("tasks", metavar="TASKS", type=_path, help="the tasks (JSONL; - for stdin)")
    batch.add_argument("--out", "-o", type=_path, required=True, metavar="RESULTS",
                       help="results file (JSONL), appended to; its tasks are not run again")
    batch.add_argument("--concurrency", "-j", type=_at_least(1), default=CONCURRENCY,
                       metavar="N",
                       help=f"tasks at once (default {CONCURRENCY}; per shard with --ray)")
    batch.add_argument("--model", "-m", help="provider/name for tasks that name none")
    batch.add_argument("--format", "-f", choices=list(FORMATS), default=None,
                       help="how tool calls are written, for tasks that say not")
    batch.add_argument("--tools", "-t", metavar="LIST",
                       help="comma-separated allowlist, for tasks that give none")
    batch.add_argument("-y", "--yes", action="store_true",
                       help="run every call (in the sandbox); without it, calls that need a "
                            "yes are declined and the model is told so")
    batch.add_argument("--sandbox", choices=SANDBOX_POLICIES, default=None,
                       help="what shell and python commands may do (default: the "
                            "configuration's, workspace-write)")
    batch.add_argument("--network", action="store_true", default=None,
                       help="let sandboxed commands reach the network")
    _add_environment(batch)
    batch.add_argument("--mcp", action="append", default=[], metavar="NAME=COMMAND",
                       help="an MCP server whose tools tasks may use (as NAME.TOOL), besides "
                            "the configured ones; each task gets its own connection "
                            "(repeatable)")
    batch.add_argument("--max-steps", type=_at_least(1), metavar="N",
                       help="model replies per task, for tasks that say not")
    batch.add_argument("--autonomous", action=argparse.BooleanOptionalAction, default=None,
                       help="a task ends done only when its model calls the complete tool, "
                            "whose summary is the result's final; a reply without a tool "
                            "call gets a reminder (default: the config's autonomous)")
    batch.add_argument("--max-tokens", type=_at_least(1), metavar="N",
                       help="output tokens asked of the model per reply")
    _add_permission_rules(batch)
    _add_batch_limits(batch)
    _add_batch_records(batch)
    _add_request_timeout(batch)
    batch.add_argument("--retries", type=_at_least(0), metavar="N",
                       help="tries again after a failed request or a broken reply stream")
    batch.add_argument("--dir", type=_path, default=None, metavar="DIR",
                       help="folder for the tasks' workspaces and logs (default: RESULTS.d)")
    batch.add_argument("--keep-workspaces", choices=KEEP_WORKSPACES, default=KEEP_WORKSPACES[0],
                       help="whose workspaces stay after their result: all (default), failed "
                            "(tasks not done), or none; logs and diffs always stay")
    batch.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                       help="run shards of tasks on Ray: a new local instance, or the cluster "
                            "at ADDRESS (needs pip install 'fencecall[ray]')")
    batch.add_argument("--shard-size", type=_at_least(1), metavar="N",
                       help="tasks per Ray shard (default: 4 x --concurrency)")
    batch.set_defaults(handler="fencecall.cli._batch_cmd:run")


def _add_batch_records(batch: argparse.ArgumentParser) -> None:
    """What a batch keeps of each task beyond its log: scored tokens, an ATIF trajectory."""
    _add_logprobs(batch)
    batch.add_argument("--trajectories", action="store_true",
                       help="write each finished task's trajectory in ATIF beside its log "
                            "(trajectory.json; its path in the result's trajectory)")


def _add_batch_limits(batch: argparse.ArgumentParser) -> None:
    """Each task's time (``--task-timeout``, once ``--timeout``) and budget, and the whole
    batch's limits (``--budget-*``, ``--time-limit``, as a single run's flags are named)."""
    seconds = _at_least(0.001, float)
    batch.add_argument("--task-timeout", type=seconds, metavar="SECONDS", dest="task_timeout",
                       help="time limit of one task, for tasks that give none (default: none)")
    batch.add_argument("--timeout", type=seconds, dest="task_timeout", help=argparse.SUPPRESS)
    batch.add_argument("--budget-usd", type=_at_least(1e-9, float), metavar="USD",
                       dest="batch_budget_usd",
                       help="cap the whole batch's spend: no request is sent that could take "
                            "it past USD, and no task starts once it cannot (exit status 3)")
    batch.add_argument("--budget-tokens", type=_at_least(1), metavar="N",
                       dest="batch_budget_tokens",
                       help="the same for the whole batch's input and output tokens")
    batch.add_argument("--time-limit", type=seconds, metavar="SECONDS",
                       dest="batch_time_limit",
                       help="wall clock for the whole batch: running tasks stop and no task "
                            "starts after SECONDS (exit status 4)")
    batch.add_argument("--task-budget-usd", type=_at_least(1e-9, float), metavar="USD",
                       dest="budget_usd", help="cap each task's spend")
    batch.add_argument("--task-budget-tokens", type=_at_least(1), metavar="N",
                       dest="budget_tokens", help="cap each task's input and output tokens")


def _add_eval(commands: Commands) -> None:
    """``eval``: Harbor tasks, each trial in a container of its task's image, graded."""
    evaluate = commands.add_parser(
        "eval", help="run Harbor tasks in containers and grade them with their tests",
        description="Run each Harbor task in PATH (a task folder, or a folder of them) -k "
                    "times: its environment/Dockerfile built once (kept as "
                    "fencecall-task:HASH), the agent in a container of it, then its tests "
                    "for the reward. One line per trial is appended to RESULTS; run it again "
                    "with the same --out to resume. Exit status 0 when every trial ran to a "
                    "reward (whatever its value), 1 when some could not (a build, the "
                    "container, the agent or the verifier failed), 2 for a usage error, "
                    "130/143 when Ctrl-C/SIGTERM stopped it (the same command resumes).")
    evaluate.add_argument("paths", nargs="+", metavar="PATH", type=_path,
                          help="a task folder (with task.toml), or a folder of them")
    evaluate.add_argument("--out", "-o", type=_path, required=True, metavar="RESULTS",
                          help="results file (JSONL), appended to; its trials are not run "
                               "again")
    evaluate.add_argument("--agent", choices=("model", "oracle"), default="model",
                          help="model (default): --model works on the instruction; oracle: "
                               "the task's solution/solve.sh, to check a task set")
    evaluate.add_argument("--model", "-m", help="provider/name of the model")
    evaluate.add_argument("-k", "--trials", type=_at_least(1), default=1, metavar="N",
                          help="trials of each task (pass@k for k up to N; default 1)")
    evaluate.add_argument("--concurrency", "-j", type=_at_least(1), default=TRIALS_AT_ONCE,
                          metavar="N", help=f"trials at once (default {TRIALS_AT_ONCE})")
    evaluate.add_argument("--max-builds", type=_at_least(1), default=BUILDS_AT_ONCE,
                          metavar="N", help=f"image builds at once (default {BUILDS_AT_ONCE})")
    evaluate.add_argument("--dir", type=_path, default=None, metavar="DIR",
                          help="folder for the trials' logs, trajectories and the build logs "
                               "(default: RESULTS.d)")
    evaluate.add_argument("--format", "-f", choices=list(FORMATS), default=None,
                          help="how the model writes tool calls")
    evaluate.add_argument("--max-steps", type=_at_least(1), metavar="N",
                          help="model replies per trial")
    evaluate.add_argument("--max-tokens", type=_at_least(1), metavar="N",
                          help="output tokens asked of the model per reply")
    _add_request_timeout(evaluate)
    evaluate.add_argument("--retries", type=_at_least(0), metavar="N",
                          help="tries again after a failed request or a broken reply stream")
    evaluate.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                          help="run shards of trials on Ray: a new local instance, or the "
                               "cluster at ADDRESS (needs pip install 'fencecall[ray]'); "
                               "-j and --max-builds then hold per shard and per machine")
    evaluate.add_argument("--shard-size", type=_at_least(1), metavar="N",
                          help="trials per Ray shard (default: --concurrency)")
    evaluate.set_defaults(handler="fencecall.cli._eval_cmd:run")


def _add_editor_commands(commands: Commands) -> None:
    """``acp``, the agent for editors, and ``list``, the saved conversations."""
    editors = commands.add_parser(
        "acp", help="be an agent for editors (Agent Client Protocol over stdio)",
        description="Serve the Agent Client Protocol on stdin and stdout, for an editor "
                    "(Zed, say) that starts fencecall as its agent. Each session is a "
                    "conversation (fencecall list shows it) working in the editor's folder "
                    "unless --workspace; every call the terminal would confirm is asked of "
                    "the editor's user.")
    _add_model_options(editors)
    _add_tool_options(editors, None)
    editors.set_defaults(handler="fencecall.acp._command:run")

    listing = commands.add_parser(
        "list", help="list saved conversations, or delete them",
        description="The saved conversations, most recently changed first: name, time of the "
                    "last change, messages and the first prompt.")
    listing.add_argument("--json", action="store_true", help="one JSON object a line")
    listing.add_argument("--delete", nargs="+", metavar="NAME",
                         help="delete these conversations (their logs and files)")
    listing.set_defaults(handler="fencecall.cli._chat_cmd:list_conversations")
