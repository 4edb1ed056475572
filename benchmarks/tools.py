"""Per-call overhead of the shell and python tools against a bare ``subprocess.run`` floor.

Run: ``python -m benchmarks.tools``. "tool call" goes through the whole pipeline (parse,
hooks, confirmation, execution, formatting); "session" is the persistent process alone.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fencecall import telemetry
from fencecall.execution import Session, auto_yes
from fencecall.tools import Toolchain
from fencecall.tools.runtime.python_session import PythonSession
from fencecall.tools.runtime.shell_session import ShellSession

CALLS = 200


def median_ms(fn: Callable[[], object], calls: int = CALLS) -> float:
    fn()  # warm up (starts the persistent process)
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _telemetry_off() -> None:
    """What the pipeline pays for telemetry per call while it is off, 1000 times over."""
    for _ in range(1000):
        telemetry.current().tool("shell", call_id=None, description="", fmt="markdown",
                                 langtag="shell").end("ok", None)


def measure() -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        shell = ShellSession(workspace)
        python = PythonSession(workspace)
        session = Session(Toolchain.build(["shell", "ipython"]), workspace=workspace,
                          confirm=auto_yes)
        try:
            rows = [
                ("shell: subprocess.run(['bash', '-c', 'echo hi'])",
                 median_ms(lambda: subprocess.run(["bash", "-c", "echo hi"],
                                                  capture_output=True))),
                ("shell: persistent session run('echo hi')",
                 median_ms(lambda: shell.run("echo hi"))),
                ("shell: tool call ```shell echo hi```",
                 median_ms(lambda: list(session.execute("```shell\necho hi\n```")))),
                ("python: subprocess.run([python, '-c', '1+1'])",
                 median_ms(lambda: subprocess.run([sys.executable, "-c", "1+1"],
                                                  capture_output=True), calls=30)),
                ("python: persistent session run('1+1')",
                 median_ms(lambda: python.run("1+1"))),
                ("python: tool call ```ipython 1+1```",
                 median_ms(lambda: list(session.execute("```ipython\n1+1\n```")))),
                ("telemetry off: a tool call's span and metric (1000 calls)",
                 median_ms(_telemetry_off)),
            ]
        finally:
            shell.close()
            python.close()
            session.close()
    return [{"case": case, "median_ms": ms} for case, ms in rows]


def print_table(rows: list[dict[str, object]]) -> None:
    print(f"{'case':<52}{'median ms':>10}")
    for row in rows:
        print(f"{row['case']!s:<52}{row['median_ms']:>10.2f}")


if __name__ == "__main__":
    print_table(measure())
