"""The python tool, driven by real markdown replies."""

from __future__ import annotations

import time
from pathlib import Path

from fencecall.execution import Session, auto_yes
from fencecall.tools import Toolchain, ToolSpec, builtin_tools

from ..support import F
from .conftest import Run


def py(code: str, tag: str = "ipython") -> str:
    return f"{F}{tag}\n{code}\n{F}\n"


def test_state_persists_and_last_expression_is_shown(run: Run) -> None:
    run(py("x = 20\ndef double(v):\n    return 2 * v"))
    [result] = run(py("print('working')\ndouble(x) + 2", tag="py"))
    assert "stdout:\n```\nworking\n```" in result.content
    assert "Result:\n```\n42\n```" in result.content


def test_exceptions_come_back_as_tracebacks(run: Run) -> None:
    [result] = run(py("def f():\n    return 1 / 0\nf()"))
    assert "Traceback (most recent call last):" in result.content
    assert 'File "<input>", line 2, in f' in result.content
    assert "ZeroDivisionError: division by zero" in result.content
    assert "python_driver" not in result.content


def test_timeout_interrupts_but_keeps_state(run: Run) -> None:
    run(py("kept = 'yes'"))
    started = time.monotonic()
    [result] = run(f"{F}ipython 1\nimport time\nwhile True: time.sleep(0.01)\n{F}\n")
    assert time.monotonic() - started < 8
    assert "KeyboardInterrupt" in result.content and "Timed out after 1 s" in result.content
    [after] = run(py("kept"))
    assert "'yes'" in after.content


def test_a_crashed_interpreter_is_restarted(run: Run) -> None:
    [result] = run(py("import os\nos._exit(1)"))
    assert "restarted" in result.content
    [after] = run(py("1 + 1"))
    assert "2" in after.content


def test_output_of_child_processes_is_captured(run: Run) -> None:
    [result] = run(py("import subprocess\nsubprocess.run(['echo', 'from child'])\nNone"))
    assert "from child" in result.content


def test_long_output_is_truncated(run: Run) -> None:
    [result] = run(py("print('x' * 100000)"))
    assert "bytes cut" in result.content and len(result.content) < 20_000


def test_functions_registered_by_tools_are_callable(workspace: Path) -> None:
    calls: list[str] = []

    def lookup(word: str) -> dict[str, object]:
        calls.append(word)
        return {"word": word, "length": len(word)}

    helper = ToolSpec("dictionary", "Looks words up.", functions={"lookup": lookup})
    chain = Toolchain((*builtin_tools(), helper))
    with Session(chain, workspace=workspace, confirm=auto_yes) as session:
        [result] = list(session.execute(py("lookup('fence')['length'] * 10")))
        assert "50" in result.content and calls == ["fence"]
        [error] = list(session.execute(py("lookup()")))
        assert "RuntimeError: TypeError" in error.content


def test_working_directory_is_the_workspace(run: Run, workspace: Path) -> None:
    [result] = run(py("import os\nos.getcwd()"))
    assert str(workspace) in result.content


def test_real_ctrl_c_interrupts_the_code_and_keeps_state(run: Run) -> None:
    import os
    import signal
    import threading

    run(py("kept = 41"))
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    [result] = run(py("import time\ntime.sleep(30)"))
    timer.join()
    assert "Interrupted" in result.content
    [after] = run(py("kept + 1"))
    assert "42" in after.content
