"""The shell tool: commands in one persistent bash per conversation."""

from __future__ import annotations

from typing import Any

from ...errors import ToolError
from ...message import Message, Status, system
from ...parsing import FormatLike
from .._parameters import Parameter
from ..runtime.output import fenced
from ..runtime.shell_policy import is_read_only
from ..runtime.shell_session import DISK_LIMIT, ShellResult, ShellSession
from ..spec import Example, Hint, ToolInvocation, ToolSpec
from ..tool_context import SHELL
from .jobs import how_to_follow

DEFAULT_TIMEOUT = 60


def _shell(invocation: ToolInvocation) -> ShellSession:
    context = invocation.context
    return context.resource(SHELL, lambda: ShellSession(
        context.workspace, env=context.tool_env(), output_limit=context.output_limit,
        sandbox=context.sandbox, jobs=context.jobs, environment=context.environment))


def runs_read_only(invocation: ToolInvocation) -> bool:
    """Whether the call runs unasked, in a one-shot read-only sandbox: the classifier must
    call it read-only *and* the sandbox must be enforced, so a command the classifier gets
    wrong still cannot write anything or reach the network. Where every call is approved
    anyway (``-y``), it runs in the persistent shell as a confirmed call would: a sandbox of
    its own would cost a process tree per command and protect nothing more."""
    context = invocation.context
    return (context.sandbox.enforced and not context.approves_every_call
            and is_read_only(invocation.kwargs["command"]))


def _where(result: ShellResult) -> str:
    """Where a stopped command was, and that nothing after it ran."""
    running = result.stopped_at
    if running is not None:
        running = running if len(running) <= 80 else running[:77] + "..."
        running = f"`{running}`" if "`" not in running else running
    at = f" while it ran {running}" if running else ""
    return (f"{at} as a whole: nothing after that part ran, and every process it started "
            "was killed")


def format_result(command: str, result: ShellResult, timeout: float,
                  fmt: FormatLike = "markdown", disk_limit: int = DISK_LIMIT) -> str:
    first_line = command.strip().split("\n")[0]  # only \n ends a line for bash
    shown = first_line if len(first_line) <= 80 else first_line[:77] + "..."
    parts = [f"Ran command: `{shown}`" if "`" not in shown else f"Ran command: {shown}"]
    if result.stdout:
        parts.append(fenced("stdout", result.stdout))
    if result.stderr:
        parts.append(fenced("stderr", result.stderr))
    if not result.stdout and not result.stderr:
        parts.append("No output.")
    if result.job is not None:
        if result.running_for is not None:
            parts.append(f"Still running after {result.running_for:g} s: it goes on in the "
                         f"background as job {result.job}.")
        else:
            parts.append(f"Exit code: {result.exit_code}, and it left processes running in "
                         f"the background: they are job {result.job}.")
        parts.append(how_to_follow(result.job, fmt))
    elif result.overflowed:
        parts.append(f"The command wrote more than {disk_limit // 2**20} MB of output and was "
                     f"stopped{_where(result)}; write big output to a file in the workspace "
                     "and look at parts of it.")
    elif result.timed_out:
        parts.append(f"Timed out after {timeout:g} s; the command was stopped{_where(result)}.")
    else:
        parts.append(f"Exit code: {result.exit_code}")
    if result.note:
        parts.append(result.note)
    if result.restarted:
        parts.append(f"The shell was restarted ({result.restarted}).")
    return "\n\n".join(parts)


def execute_shell(invocation: ToolInvocation) -> Message:
    command = invocation.kwargs["command"]
    if not command.strip():
        raise ToolError("shell: the command is empty; put the command in the block.")
    given = invocation.kwargs.get("timeout")
    if given is not None and given <= 0:
        raise ToolError("shell: timeout must be a positive number of seconds.")
    timeout = DEFAULT_TIMEOUT if given is None else given
    left = invocation.context.time_left()
    if left is not None and left < timeout:  # the run's time limit ends the command too
        timeout = max(left, 0.001)
    # a timeout the model gave is a deadline; without one, a long command becomes a job
    background_after = invocation.context.jobs.background_after if given is None else None
    result = _shell(invocation).run(command, timeout=timeout,
                                    read_only=runs_read_only(invocation),
                                    background_after=background_after)
    job: dict[str, Any] = {"job": result.job} if result.job is not None else {}
    stopped = result.timed_out or result.overflowed  # a one-shot run exits non-zero then
    return system(format_result(command, result, timeout, invocation.call.format,
                                invocation.context.sandbox.limits.output),
                  Status.ERROR if stopped else None,
                  exit_code=result.exit_code, timed_out=result.timed_out, **job)


tool = ToolSpec(
    name="shell",
    desc="Run commands in a persistent bash shell (cwd and variables persist between calls).",
    instructions=(
        "Commands run in the workspace without a terminal; stdin is empty, so avoid "
        "interactive programs (use flags like -y, and `git --no-pager`). A long command goes "
        "on as a background job (see jobs), or is killed at its timeout if given; long output "
        "is cut in the middle."),
    execute=execute_shell,
    block_types=("shell", "bash", "sh"),
    parameters=(
        Parameter("command", description="The commands to run."),
        Parameter("timeout", "integer",
                  "Seconds before the command is killed (else a long one becomes a job).",
                  required=False),
    ),
    content_param="command",
    load_priority=-30,  # the tools most tasks need come first in the prompt
    confirm=lambda invocation: not runs_read_only(invocation),
    preview=lambda invocation: invocation.kwargs["command"],
    hints=frozenset({Hint.EXEC}),
    requires=("jobs",),  # its background jobs are read and ended there
    examples=(
        Example.user("list the files"),
        Example.call(command="ls"),
        Example.result("Ran command: `ls`\n\nstdout:\n```\nREADME.md\nsrc\n```\n\nExit code: 0"),
    ),
)
