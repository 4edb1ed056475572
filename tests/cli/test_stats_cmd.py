"""``fencecall stats`` over conversations the real CLI wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..fakeserver import FakeModelServer, Reply
from .conftest import CLI, cli_env

F = "```"


def test_stats_say_which_tool_fails_and_what_it_cost(fencecall: CLI, tmp_path: Path) -> None:
    replies = [Reply(f"{F}read missing.txt\n{F}\n", usage=(100, 10)),
               Reply(f"{F}shell\necho hi\n{F}\n", usage=(150, 12)),
               Reply("Done.", usage=(200, 3))]
    with FakeModelServer(replies) as server:
        assert fencecall("-y", "--model", "local/m", "--name", "s1", "go",
                         base_url=server.openai_url).returncode == 0
        result = fencecall("stats", "s1", "--json", base_url=server.openai_url)
        table = fencecall("stats", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["tools"]["read"] == {**stats["tools"]["read"], "calls": 1, "failures": 1}
    assert stats["tools"]["shell"]["failures"] == 0 and stats["tools"]["shell"]["p50_s"] > 0
    assert stats["models"]["local/m"] == {
        "replies": 3, "unmetered": 1, "input_tokens": 300, "output_tokens": 13,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0, "cost_usd": None}
    assert stats["cost_usd"] is None
    assert table.returncode == 0
    assert "read" in table.stdout and "unknown" in table.stdout


def test_help_never_loads_prices_or_telemetry(tmp_path: Path) -> None:
    code = ("import sys\nfrom fencecall.cli.main import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules\n"
            "             if m.startswith(('genai_prices', 'pydantic', 'opentelemetry'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=cli_env(tmp_path, "http://127.0.0.1:9"), check=True).stdout
    assert out.strip().endswith("[]")
