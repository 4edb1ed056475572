"""Per-call overhead of the shell and python tools against a bare ``subprocess.run`` floor,
and against gptme's own shell and ipython tools when gptme is importable.

Run: ``python -m benchmarks.tools``. "tool call" goes through the whole pipeline (parse,
hooks, confirmation, execution, formatting); "session" is the persistent process alone.
gptme's rows call ``ToolUse.execute``, its whole pipeline; its ipython tool runs in-process
(IPython), fencecall's in a persistent subprocess. Cases of a group take turns (see
:func:`benchmarks.timing.compare`), the same number of runs each.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fencecall import telemetry
from fencecall.execution import Session, auto_yes
from fencecall.tools import Toolchain
from fencecall.tools.runtime.python_session import PythonSession
from fencecall.tools.runtime.shell_session import ShellSession

from . import gptme_adapter
from .timing import compare

CALLS = 100


def _telemetry_off() -> None:
    """What the pipeline pays for telemetry per call while it is off, 1000 times over."""
    for _ in range(1000):
        telemetry.current().tool("shell", call_id=None, description="", fmt="markdown",
                                 langtag="shell").end("ok", None)


def rows(calls: int = CALLS) -> Iterator[dict[str, Any]]:
    """One row per case: median and best milliseconds over the same number of runs."""
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        shell = ShellSession(workspace)
        python = PythonSession(workspace)
        session = Session(Toolchain.build(["shell", "ipython"]), workspace=workspace,
                          confirm=auto_yes)
        try:
            groups: list[dict[str, Callable[[], object]]] = [
                {"shell: subprocess.run(['bash', '-c', 'echo hi'])": lambda: subprocess.run(
                    ["bash", "-c", "echo hi"], capture_output=True),
                 "shell: fencecall persistent session run('echo hi')":
                    lambda: shell.run("echo hi"),
                 "shell: fencecall tool call ```shell echo hi```":
                    lambda: list(session.execute("```shell\necho hi\n```"))},
                {"python: subprocess.run([python, '-c', '1+1'])": lambda: subprocess.run(
                    [sys.executable, "-c", "1+1"], capture_output=True),
                 "python: fencecall persistent session run('1+1')": lambda: python.run("1+1"),
                 "python: fencecall tool call ```ipython 1+1```":
                    lambda: list(session.execute("```ipython\n1+1\n```"))},
                {"telemetry off: a tool call's span and metric (1000 calls)": _telemetry_off},
            ]
            for tool, code, index in (("shell", "echo hi", 0), ("ipython", "1+1", 1)):
                theirs = gptme_adapter.tool_call(tool, code)
                if theirs is not None:
                    groups[index][f"{tool}: gptme tool call "
                                  f"ToolUse('{tool}', [], '{code}').execute()"] = theirs
            for group in groups:
                for case, timing in compare(group, budget=3.0, min_runs=10,
                                            max_runs=calls).items():
                    yield {"case": case, "runs": timing.runs, "median ms": timing.median * 1000,
                           "best ms": timing.min * 1000}
        finally:
            shell.close()
            python.close()
            session.close()


def print_table(table: list[dict[str, Any]]) -> None:
    print(f"{'case':<62}{'runs':>6}{'median ms':>11}{'best ms':>9}")
    for row in table:
        print(f"{row['case']!s:<62}{row['runs']:>6}{row['median ms']:>11.2f}"
              f"{row['best ms']:>9.2f}")


if __name__ == "__main__":
    print_table(list(rows()))
