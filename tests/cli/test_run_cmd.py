"""``fencecall run`` on saved replies, as a user runs it (a real subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "reply.md"


def fencecall(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fencecall.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_run_example_reply_with_yes(tmp_path: Path) -> None:
    result = fencecall("run", "-y", "--workspace", str(tmp_path / "ws"), str(EXAMPLE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "ws" / "hello.py").read_text() == 'print("hello from fencecall")\n'
    assert "hello from fencecall" in result.stdout
    assert "Created hello.py" in result.stdout


def test_run_without_terminal_declines_changes(tmp_path: Path) -> None:
    result = fencecall("run", "--workspace", str(tmp_path), str(EXAMPLE))
    assert result.returncode == 1
    assert "not confirmed" in result.stdout and "pass -y" in result.stdout
    assert not (tmp_path / "hello.py").exists()


def test_run_json_xml_format_and_tool_allowlist(tmp_path: Path) -> None:
    reply = tmp_path / "reply.xml"
    reply.write_text("<tool-use><save args='a.txt'>one</save></tool-use>\n"
                     "<tool-use><shell>cat a.txt</shell></tool-use>\n")
    result = fencecall("run", "-y", "--json", "--format", "xml", "--tools", "save,shell",
                       "-w", str(tmp_path), str(reply))
    assert result.returncode == 0, result.stderr
    results = json.loads(result.stdout)
    assert [r["tool"] for r in results] == ["save", "shell"]
    assert "one" in results[1]["content"]


def test_run_reports_failures_and_bad_options(tmp_path: Path) -> None:
    reply = tmp_path / "reply.md"
    reply.write_text("```save ../outside.txt\nx\n```\n")
    result = fencecall("run", "-y", "-w", str(tmp_path / "ws"), str(reply))
    assert result.returncode == 1 and "outside the workspace" in result.stdout
    result = fencecall("run", "--tools", "nosuchtool", str(reply))
    assert result.returncode == 2
    assert "unknown tool 'nosuchtool'" in result.stderr and "Traceback" not in result.stderr
    empty = tmp_path / "empty.md"
    empty.write_text("just prose\n")
    assert "No tool calls found" in fencecall("run", str(empty), "-w", str(tmp_path)).stdout


def test_run_names_the_blocks_of_tools_not_loaded(tmp_path: Path) -> None:
    result = fencecall("run", "-t", "read", "-w", str(tmp_path), str(EXAMPLE))
    assert result.returncode == 1, result.stdout + result.stderr
    said = " ".join(result.stdout.split())  # as a terminal of any width wraps it
    for tool, line in (("shell", 3), ("save", 7), ("shell", 11)):
        assert (f"The {tool} tool is not loaded in this run, so the ```{tool} block on line "
                f"{line} did not run. Loaded tools: read.") in said
    assert "No tool calls found" not in said
    assert "calls of tools this run did not load (save, shell); name them in --tools" in said
    assert not (tmp_path / "hello.py").exists()
    result = fencecall("run", "-t", "read", "--json", "-w", str(tmp_path), str(EXAMPLE))
    assert result.returncode == 1
    results = json.loads(result.stdout)
    assert [(r["tool"], r["metadata"]["unloaded"], r["metadata"]["line"]) for r in results] == [
        ("shell", ["shell"], 3), ("save", ["save"], 7), ("shell", ["shell"], 11)]
    assert all(r["metadata"]["status"] == "error" for r in results)
    assert "did not load (save, shell)" in " ".join(result.stderr.split())


def test_run_tells_nothing_of_plain_code_blocks(tmp_path: Path) -> None:
    reply = tmp_path / "reply.md"
    reply.write_text("The data:\n```json\n{\"a\": 1}\n```\n\n```diff\n-a\n+b\n```\n")
    result = fencecall("run", "-t", "read", "-w", str(tmp_path), str(reply))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No tool calls found." in result.stdout and "not loaded" not in result.stdout
