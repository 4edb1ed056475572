"""The python tool's interpreter starts in the workspace but imports nothing from it for
itself, and puts no folder first on ``sys.path``, even with the sandbox off."""

from __future__ import annotations

from pathlib import Path

from fencecall.tools.runtime.python_session import DRIVER

from ..support import tool_session


def test_the_interpreter_imports_nothing_planted_in_the_workspace(workspace: Path,
                                                                 tmp_path: Path) -> None:
    marker = tmp_path / "planted-code-ran"
    for name in ("json", "ast", "traceback", "sitecustomize", "usercustomize"):
        (workspace / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r})\n")
    first = ("", str(workspace), str(DRIVER.parent))
    code = f"import json, sys\n[p for p in sys.path if p in {first!r}], json.dumps(1)"
    with tool_session(workspace, ["ipython"], sandbox="off") as session:
        [result] = session.execute(f"```ipython\n{code}\n```\n")
    assert "Result:\n```\n([], '1')\n```" in result.content
    assert not marker.exists()
