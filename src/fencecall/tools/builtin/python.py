"""The python tool: a persistent interpreter per conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ToolError
from ...message import Message, system
from ..arguments import Parameter
from ..runtime.output import DEFAULT_LIMIT, fenced, truncate_middle
from ..spec import Example, ToolInvocation, ToolSpec

if TYPE_CHECKING:  # the interpreter's machinery is imported by the first python call
    from ..runtime.python_session import PythonResult

DEFAULT_TIMEOUT = 60


def format_result(result: PythonResult, timeout: float, limit: int = DEFAULT_LIMIT) -> str:
    parts = []
    if result.stdout:
        parts.append(fenced("stdout", truncate_middle(result.stdout, limit)))
    if result.stderr:
        parts.append(fenced("stderr", truncate_middle(result.stderr, limit)))
    if result.result is not None:
        parts.append(fenced("Result", truncate_middle(result.result, limit)))
    if result.error is not None:
        parts.append(fenced("Error", truncate_middle(result.error, limit)))
    if result.timed_out:
        parts.append(f"Timed out after {timeout:g} s and was interrupted.")
    if result.restarted:
        parts.append(f"The interpreter was restarted ({result.restarted}).")
    return "\n\n".join(parts) or "Executed; no output."


def execute_python(invocation: ToolInvocation) -> Message:
    code = invocation.kwargs["code"]
    if not code.strip():
        raise ToolError("python: the code is empty; put the code in the block.")
    timeout = invocation.kwargs.get("timeout", DEFAULT_TIMEOUT)
    context = invocation.context
    left = context.time_left()
    if left is not None and left < timeout:  # the run's time limit ends the code too
        timeout = max(left, 0.001)
    from ..runtime.python_session import PythonSession

    interpreter = context.resource(
        "python", lambda: PythonSession(context.workspace, context.functions(),
                                        env=context.tool_env(), sandbox=context.sandbox))
    result = interpreter.run(code, timeout=timeout)
    return system(format_result(result, timeout, invocation.context.output_limit),
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
        Parameter("timeout", "integer", "Seconds before the code is interrupted.",
                  required=False, default=DEFAULT_TIMEOUT),
    ),
    content_param="code",
    load_priority=-20,
    confirm=True,
    preview=lambda invocation: invocation.kwargs["code"],
    hints=frozenset({"exec"}),
    examples=(
        Example.user("what is 2**100?"),
        Example.call(code="2**100"),
        Example.result("Result:\n```\n1267650600228229401496703205376\n```"),
    ),
)
