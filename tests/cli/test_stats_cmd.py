"""``fencecall stats`` over conversations the real CLI wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

from ..fakeserver import FakeModelServer, Reply, dense_tokens
from ..support import F
from .conftest import CLI, cli_env


def test_stats_say_which_tool_fails_and_what_it_cost(fencecall: CLI, tmp_path: Path) -> None:
    """Replies cut at their first call report no usage: fencecall counts them with the
    server's tokenizer, so every reply has a count and, with a configured price, a cost."""
    config = tmp_path / "config" / "fencecall" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[models."local/m"]\nprice = {input = 1.0, output = 2.0}\n')
    replies = [Reply(f"{F}read missing.txt\n{F}\nand more"), Reply(f"{F}shell\necho hi\n{F}\n"),
               Reply("Done.")]
    with FakeModelServer(replies, tokenizer=dense_tokens) as server:
        assert fencecall("-y", "--model", "local/m", "--name", "s1", "go",
                         base_url=server.openai_url).returncode == 0
        result = fencecall("stats", "s1", "--json", base_url=server.openai_url)
        table = fencecall("stats", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["tools"]["read"] == {**stats["tools"]["read"], "calls": 1, "failures": 1}
    assert stats["tools"]["shell"]["failures"] == 0 and stats["tools"]["shell"]["p50_s"] > 0
    model = stats["models"]["local/m"]
    assert (model["replies"], model["unmetered"], model["estimated"]) == (3, 0, 0)
    assert model["counted"] >= 1  # the cut replies, counted by the server's tokenizer
    billed_input = sum(r.input_tokens for r in server.requests)
    # the reported reply is the server's count, the cut ones fencecall's count of what it
    # sent (the wire wraps tool results a little differently): within 2% of what was billed
    assert abs(model["input_tokens"] - billed_input) <= billed_input * 0.02
    expected = (Decimal(model["input_tokens"]) * 1 + Decimal(model["output_tokens"]) * 2) \
        / 1_000_000
    assert Decimal(stats["cost_usd"]) == expected > 0
    assert table.returncode == 0
    assert "read" in table.stdout and "unknown" not in table.stdout
    assert "Counted replies" in table.stdout


def test_help_never_loads_prices_or_telemetry(tmp_path: Path) -> None:
    code = ("import sys\nfrom fencecall.cli.main import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules\n"
            "             if m.startswith(('genai_prices', 'pydantic', 'opentelemetry'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=cli_env(tmp_path, "http://127.0.0.1:9"), check=True).stdout
    assert out.strip().endswith("[]")
