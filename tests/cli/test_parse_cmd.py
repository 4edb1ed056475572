"""``fencecall parse`` as a user runs it: a real subprocess on real files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "reply.md"


def fencecall(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fencecall.cli.main", *args], input=stdin
                          and stdin.decode(), capture_output=True, text=True, timeout=60)


def test_parse_json_lists_calls_with_lines() -> None:
    result = fencecall("parse", str(EXAMPLE), "--json")
    assert result.returncode == 0, result.stderr
    parsed = json.loads(result.stdout)
    assert parsed["diagnostics"] == []
    calls = parsed["calls"]
    assert [(c["name"], c["argline"], c["line"]) for c in calls] == [
        ("shell", "", 3), ("save", "hello.py", 7), ("shell", "", 11)]


def test_parse_table_and_format_option(tmp_path: Path) -> None:
    reply = tmp_path / "reply.txt"
    reply.write_text('@shell(c1): {"command": "ls"}\n')
    result = fencecall("parse", str(reply), "--format", "tool")
    assert result.returncode == 0, result.stderr
    assert "1 call(s)" in result.stdout and "c1" in result.stdout and "shell" in result.stdout


def test_parse_stdin_and_binary_input(tmp_path: Path) -> None:
    result = fencecall("parse", "-", "--json", stdin=b"```shell\nls\n```\n")
    assert json.loads(result.stdout)["calls"][0]["content"] == "ls"
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\xff\xfe\n```shell\n\x00ls\n```\n")
    result = fencecall("parse", str(binary), "--json")
    assert result.returncode == 0
    assert "looks binary" in result.stderr
    assert json.loads(result.stdout)["calls"][0]["name"] == "shell"


def test_parse_reports_diagnostics_and_exits_1(tmp_path: Path) -> None:
    reply = tmp_path / "broken.md"
    reply.write_text('Running it.\n```shell\nls\n```\nand then\n```shell\nrm -rf build\n')
    result = fencecall("parse", str(reply), "--json")
    assert result.returncode == 1
    parsed = json.loads(result.stdout)
    assert [c["content"] for c in parsed["calls"]] == ["ls"]
    [diagnostic] = parsed["diagnostics"]
    assert (diagnostic["kind"], diagnostic["line"], diagnostic["name"]) == ("unclosed", 6, "shell")
    table = fencecall("parse", str(reply))
    assert table.returncode == 1
    assert "line 6: The ```shell block opened on line 6 was never closed" in table.stdout


def test_parse_missing_file_and_bad_format_are_clear_errors(tmp_path: Path) -> None:
    result = fencecall("parse", str(tmp_path / "nope.md"))
    assert result.returncode == 2
    assert "no such file" in result.stderr and "Traceback" not in result.stderr
    result = fencecall("parse", str(tmp_path))
    assert "is a directory" in result.stderr
    result = fencecall("parse", str(EXAMPLE), "--format", "yaml")
    assert result.returncode == 2 and "invalid choice" in result.stderr
