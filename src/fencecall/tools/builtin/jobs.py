"""The jobs tool: the conversation's background jobs (shell commands that went on running),
listed, read, waited for and killed.

A wait happens in fencecall, not in the model: ``jobs wait 1 600`` costs one call however long
the job takes. Nothing here starts a process, so no call is confirmed.
"""

from __future__ import annotations

import math
from typing import Any

from ...errors import ToolError
from ...message import Message, system
from ...parsing import FormatLike
from .._parameters import Parameter
from ..runtime.job_manager import JobError, JobView
from ..runtime.output import fenced
from ..spec import Command, Example, ToolInvocation, ToolSpec, render_call
from ..tool_context import ToolContext

NAME = "jobs"
LOG_FOLDER = "jobs"
"""The folder of a conversation's folder that holds its jobs' logs."""
DEFAULT_WAIT = 60
_ACTIONS = ("list", "output", "wait", "kill")


def _shown(command: str) -> str:
    first_line = command.strip().split("\n")[0]
    shown = first_line if len(first_line) <= 60 else first_line[:57] + "..."
    return f"`{shown}`" if "`" not in shown else shown


def _state(view: JobView) -> str:
    runtime = f"{view.runtime:.0f} s"
    return {"running": f"running for {runtime}",
            "ended": f"ended after {runtime}",
            "killed": f"killed after {runtime}",
            "overflowed": f"stopped after {runtime} (too much output)",
            "stopped": f"stopped after {runtime}"}[view.state]


def listing(views: list[JobView]) -> str:
    """One line per job: id, state, runtime, exit status, command."""
    if not views:
        return "No background jobs."
    lines = []
    for view in views:
        status = "" if view.running else f", exit code {_code(view)}"
        lines.append(f"{view.id}  {_state(view)}{status}  {_shown(view.command)}")
    return "Jobs (id, state, command):\n" + "\n".join(lines)


def _code(view: JobView) -> str:
    return "unknown" if view.exit_code is None else str(view.exit_code)


def describe(view: JobView, *, waited: float | None = None, disk_limit: int = 0) -> str:
    """A read of ``view`` as the shell reports a command: what it wrote since the last read,
    then how it stands."""
    head = f"Job {view.id} ({_shown(view.command)})"
    if view.running:
        head += (f" is still running after a wait of {waited:g} s ({view.runtime:.0f} s in all)."
                 if waited is not None else f" is still running ({view.runtime:.0f} s).")
    elif view.state == "ended":
        head += f" ended after {view.runtime:.0f} s."
    elif view.state == "killed":
        head += " was killed, with its child processes."
    elif view.state == "overflowed":
        head += (f" wrote more than {disk_limit // 2**20} MB of output and was stopped, with "
                 "its child processes.")
    else:
        head += " was stopped when the conversation or its time limit ended."
    parts = [head, fenced("output", view.output) if view.output else "No new output."]
    if view.state == "ended":
        parts.append(f"Exit code: {_code(view)}")
    if view.output and view.log is not None and "cut ...]" in view.output:
        parts.append(f"All of its output is kept in {view.log}.")
    return "\n\n".join(parts)


def ended_notice(view: JobView) -> str:
    """The line telling the model that a job ended while it was not looking."""
    if view.state == "ended":
        how = f"ended after {view.runtime:.0f} s with exit code {_code(view)}"
    elif view.state == "overflowed":
        how = "was stopped: it wrote too much output"
    else:
        how = "was stopped"
    return f"Background job {view.id} ({_shown(view.command)}) {how}."


def left_notice(job: int) -> str:
    """The line telling the model that a job of an earlier run of the conversation ended
    with it."""
    return (f"Background job {job} was stopped when the conversation was left earlier; it is "
            "not running now.")


def how_to_follow(job: int, fmt: FormatLike) -> str:
    """The calls that read, wait for and end job ``job``, written in ``fmt``."""
    def written(**kwargs: Any) -> str:
        text = render_call(tool, kwargs, fmt)
        return text.replace("\n\n```", "\n```") if text.endswith("\n\n```") else text

    return (f"Its output is kept. To see what it writes next:\n"
            f"{written(action='output', job=job)}\n"
            f"To wait up to {DEFAULT_WAIT} s for it to end:\n"
            f"{written(action='wait', job=job, seconds=DEFAULT_WAIT)}\n"
            f"To end it:\n{written(action='kill', job=job)}")


def execute_jobs(invocation: ToolInvocation) -> Message:
    context = invocation.context
    action = invocation.kwargs.get("action", "list")
    if action == "list":
        return system(listing(context.jobs.views()))
    job = invocation.kwargs.get("job")
    if job is None:
        example = render_call(tool, {"action": action, "job": 1}, invocation.call.format)
        raise ToolError(f"jobs: {action} needs a job id, as in\n{example}")
    waited = None
    try:
        if action == "output":
            view = context.jobs.output(job)
        elif action == "wait":
            waited = invocation.kwargs.get("seconds", DEFAULT_WAIT)
            if not (math.isfinite(waited) and waited > 0):
                raise ToolError("jobs: wait needs a positive number of seconds.")
            left = context.time_left()
            if left is not None:  # the run's time limit ends the wait too
                waited = min(waited, left)
            view = context.jobs.wait(job, waited)
        else:
            view = context.jobs.kill(job)
    except JobError as err:
        raise ToolError(f"jobs: {err}") from None
    ended: dict[str, Any] = {"exit_code": view.exit_code} if view.state == "ended" else {}
    return system(describe(view, waited=waited, disk_limit=context.jobs.disk_limit),
                  job=view.id, job_state=view.state, **ended)


def _slash_jobs(context: ToolContext, _: str) -> str:
    return listing(context.jobs.views())


tool = ToolSpec(
    name=NAME,
    desc="List, read, wait for and end the shell's background jobs.",
    instructions=(
        "A shell command still running after a while (a server, a watcher, a long build), or "
        "one put in the background with `&`, goes on as a job with a number. `list` shows "
        "the jobs; `output N` what job N wrote since you last looked; `wait N SECONDS` waits "
        "for it to end (no need to poll); `kill N` ends it with its child processes. Jobs end "
        "with the conversation."),
    execute=execute_jobs,
    parameters=(
        Parameter("action", description="What to do.", required=False, default="list",
                  enum=_ACTIONS),
        Parameter("job", "integer", "The job's number.", required=False),
        Parameter("seconds", "number", "How long wait waits at most.", required=False),
    ),
    load_priority=-29,  # beside the shell, whose jobs these are
    commands=(Command("jobs", _slash_jobs, "list the background jobs"),),
    examples=(
        Example.user("is the dev server (job 1) still answering?"),
        Example.call(action="output", job=1),
        Example.result("Job 1 (`npm run dev`) is still running (95 s).\n\noutput:\n```\n"
                       "GET / 200 in 12ms\n```"),
    ),
)
