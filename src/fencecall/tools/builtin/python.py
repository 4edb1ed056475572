"""The python tool: a persistent interpreter per conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ToolError
from ...message import Message, system
from ...sandbox import ResourceLimits
from .._parameters import Parameter
from ..runtime.output import fenced
from ..spec import Example, Hint, ToolInvocation, ToolSpec
from ..tool_context import PYTHON

if TYPE_CHECKING:  # the interpreter's machinery is imported by the first python call
    from ..runtime.python_session import PythonResult

DEFAULT_TIMEOUT = 60


def format_result(result: PythonResult, timeout: float, *, time_limit: bool = False,
                  disk_limit: int = ResourceLimits().output) -> str:
    """The result for the model; ``time_limit``: the timeout was the time the run had left.
    The session already cut every text to the output limit."""
    parts = [fenced(label, text) for label, text in (
        ("stdout", result.stdout), ("stderr", result.stderr), ("Result", result.result),
        ("Error", result.error)) if text]
    stopped = _stopped(result)
    if result.overflowed:
        parts.append(f"The code wrote more than {disk_limit // 2**20} MB of output; {stopped}. "
                     "Write big output to a file in the workspace and look at parts of it.")
    elif result.timed_out and time_limit:
        parts.append(f"The run's time limit ended the code after {timeout:g} s; {stopped}.")
    elif result.timed_out:
        parts.append(f"Timed out after {timeout:g} s; {stopped}.")
    if result.restarted:
        parts.append(f"The interpreter was restarted ({result.restarted}).")
    return "\n\n".join(parts) or "Executed; no output."


def _stopped(result: PythonResult) -> str:
    """What a stop did."""
    done = "the code was stopped (the rest of the block did not run)"
    if result.killed == 1:
        return f"{done} and the process it started was killed"
    if result.killed:
        return f"{done} and the {result.killed} processes it started were killed"
    return done


def execute_python(invocation: ToolInvocation) -> Message:
    code = invocation.kwargs["code"]
    if not code.strip():
        raise ToolError("python: the code is empty; put the code in the block.")
    timeout = invocation.kwargs.get("timeout", DEFAULT_TIMEOUT)
    context = invocation.context
    left, time_limit = context.time_left(), False
    if left is not None and left < timeout:  # the run's time limit ends the code too
        timeout, time_limit = max(left, 0.001), True
    from ..runtime.python_session import PythonSession

    interpreter = context.resource(
        PYTHON, lambda: PythonSession(context.workspace, context.functions(),
                                        env=context.tool_env(), sandbox=context.sandbox,
                                        output_limit=context.output_limit,
                                        environment=context.environment))
    result = interpreter.run(code, timeout=timeout)
    return system(format_result(result, timeout, time_limit=time_limit,
                                disk_limit=context.sandbox.limits.output),
                  raised=result.error is not None)


tool = ToolSpec(
    name="ipython",
    desc="Run Python code in a persistent interpreter (variables persist between calls).",
    instructions=(
        "The value of a final expression is shown, like in a REPL; print() output and "
        "tracebacks come back too. Functions provided by other tools can be called directly."),
    execute=execute_python,
    block_types=("ipython", "py"),
    parameters=(
        Parameter("code", description="Python code to run."),
        Parameter("timeout", "integer", "Seconds before the code is stopped.",
                  required=False, default=DEFAULT_TIMEOUT),
    ),
    content_param="code",
    load_priority=-20,
    confirm=True,
    preview=lambda invocation: invocation.kwargs["code"],
    hints=frozenset({Hint.EXEC}),
    examples=(
        Example.user("what is 2**100?"),
        Example.call(code="2**100"),
        Example.result("Result:\n```\n1267650600228229401496703205376\n```"),
    ),
)
