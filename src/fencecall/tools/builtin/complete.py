"""The complete tool: the model says the task is done.

In an autonomous run (``--autonomous``: a prompt nobody watches, a batch task) a reply
without a call is not an answer, since real replies stop short (``TH``, a ``THOUGHT:`` cut
at its first backtick, a sentence cut off); the run ends done only when the model calls
``complete``, and the summary it gives is the run's answer. The tool is off by default: it
loads with the mode, or when ``--tools`` names it. Its spec says it ends the run, so the
pipeline marks its result as the :class:`~fencecall.message.Completion` the loop ends on.
"""

from __future__ import annotations

from ...message import Message, system
from ...parsing import FormatLike, get_format
from .._parameters import Parameter
from ..spec import Example, Hint, ToolInvocation, ToolSpec, render_call

NAME = "complete"
NO_SUMMARY = "The task is complete (no summary was given)."
FORM_SUMMARY = "A short summary of what was done."
"""The summary shown in the form the model is taught and reminded of."""


def execute_complete(invocation: ToolInvocation) -> Message:
    summary = invocation.kwargs.get("summary", "").strip()
    return system(summary or NO_SUMMARY)


def how_to_finish(fmt: FormatLike) -> str:
    """The sentence telling a model how to end the task, with the exact call in ``fmt`` (a
    model with native function calling is told the function's name)."""
    target = get_format(fmt)
    if target.native:
        return ("When the task is done, call the complete function with a short summary of "
                "what was done.")
    return ("When the task is done, end it with a complete call holding a short summary of "
            "what was done:\n" + render_call(tool, {"summary": FORM_SUMMARY}, target))


tool = ToolSpec(
    name=NAME,
    desc="End the task once it is done, with a short summary of what was done.",
    instructions=(
        "Call it as the last step, once the work is done and checked: it ends the work, and "
        "the summary (what was done, what was found, anything left open) is the answer the "
        "user gets."),
    execute=execute_complete,
    parameters=(Parameter("summary", description="What was done, in a few sentences.",
                          required=False, default=""),),
    content_param="summary",
    ends_run=True,
    disabled_by_default=True,  # loaded by autonomous runs, or when named in --tools
    load_priority=50,  # the last step of a task: said last in the prompt
    hints=frozenset({Hint.READ_ONLY}),  # changes nothing: runs without asking
    examples=(
        Example.call(summary="Added test_args.py; it passes."),
        Example.result("Added test_args.py; it passes."),
    ),
)
