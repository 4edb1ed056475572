"""The command line imports what a command needs and nothing else, and the start-up
benchmark keeps working (no timings are asserted: numbers live in benchmarks/startup.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks import startup

from fencecall.cli import _arguments as arguments
from fencecall.parsing import FORMATS, MARKDOWN

ROOT = Path(__file__).parent.parent
REPLY = ROOT / "examples" / "reply.md"

HEAVY = ("openai", "anthropic", "mcp", "opentelemetry", "jsonschema", "prompt_toolkit")
"""Packages no command imports unless it uses them (a provider, MCP, telemetry, a tool's
schema, the interactive prompt)."""
NOT_FOR_HELP = (*HEAVY, "rich", "pygments", "fencecall.parsing._scanner",
                "fencecall.parsing.formats._markdown", "fencecall.tools", "fencecall.config")
"""``--help`` builds the parser and prints it: no terminal rendering, parser or tools."""
NOT_FOR_A_RUN = ("openai", "anthropic", "mcp", "opentelemetry", "asyncio",
                 "fencecall.environments._container", "fencecall.tools.mcp",
                 "fencecall.tools.user_hooks._adapters", "fencecall.accounting._billing",
                 "fencecall.accounting.tokens", "fencecall.agent.loop", "fencecall.providers",
                 "fencecall.checkpoints")
"""A saved reply's run uses no model, container, MCP server, user hook or checkpoint."""

_MODULES_AFTER = """
import json, sys
{body}
print("\\n" + json.dumps(sorted(sys.modules)))
"""


def _modules_after(body: str, tmp_path: Path) -> set[str]:
    """The modules a new interpreter holds after running ``body`` (with a configuration and
    fencecall home of its own, and no telemetry asked for)."""
    (tmp_path / "config").mkdir(exist_ok=True)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "FENCECALL_HOME": str(tmp_path / "home")}
    for name in ("FENCECALL_CONFIG", "FENCECALL_TELEMETRY", "FENCECALL_MODEL"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", _MODULES_AFTER.format(body=body)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    modules: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return set(modules)


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` (packages or modules) are among ``modules``."""
    return [name for name in names
            if any(m == name or m.startswith(name + ".") for m in modules)]


def test_importing_the_cli_imports_no_heavy_package(tmp_path: Path) -> None:
    modules = _modules_after("import fencecall.cli.main", tmp_path)
    assert "fencecall.cli.main" in modules
    assert _loaded(modules, NOT_FOR_HELP) == []


def test_help_imports_no_subcommand_and_no_heavy_package(tmp_path: Path) -> None:
    modules = _modules_after(
        "from fencecall.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass", tmp_path)
    assert _loaded(modules, NOT_FOR_HELP) == []
    assert [m for m in modules if m.startswith("fencecall.cli.") and m.endswith("_cmd")] == []


def test_a_run_imports_no_provider_mcp_or_telemetry(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    modules = _modules_after(
        "from fencecall.cli.main import main\n"
        f"code = main(['run', '-y', '--workspace', {str(workspace)!r}, {str(REPLY)!r}])\n"
        "assert code == 0, code", tmp_path)
    assert "fencecall.cli._run_cmd" in modules
    assert _loaded(modules, NOT_FOR_A_RUN) == []
    assert (workspace / "hello.py").exists()  # the calls did run


def test_a_json_run_imports_no_terminal_rendering(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    modules = _modules_after(
        "from fencecall.cli.main import main\n"
        f"code = main(['run', '-y', '--output-format', 'json', '--workspace', "
        f"{str(workspace)!r}, {str(REPLY)!r}])\n"
        "assert code == 0, code", tmp_path)
    assert _loaded(modules, (*NOT_FOR_A_RUN, "rich")) == []
    assert (workspace / "hello.py").exists()


def test_listing_the_formats_loads_none_of_them(tmp_path: Path) -> None:
    modules = _modules_after(
        "from fencecall.parsing import FORMATS\nassert list(FORMATS)", tmp_path)
    assert [m for m in modules if m.startswith("fencecall.parsing.formats.")] == []
    assert "fencecall.parsing._scanner" not in modules


def test_the_lazy_format_table_is_the_formats_themselves() -> None:
    assert all(FORMATS[name].name == name for name in FORMATS)
    assert FORMATS["markdown"] is MARKDOWN and len(FORMATS) == len(list(FORMATS))
    assert "nope" not in FORMATS and FORMATS.get("nope") is None
    with pytest.raises(TypeError):
        FORMATS["x"] = MARKDOWN  # type: ignore[index]


def test_the_grammar_names_the_default_format_without_loading_it() -> None:
    assert MARKDOWN.name == arguments.DEFAULT_FORMAT


def test_the_benchmark_runs_with_tiny_repeats(capsys: pytest.CaptureFixture[str]) -> None:
    rows = startup.measure(runs=1, warmup=0)
    assert [row.case for row in rows] == ["python -c pass", "fencecall --help",
                                         "fencecall run -y examples/reply.md"]
    assert all(row.runs == 1 and row.min_ms <= row.median_ms for row in rows)
    assert rows[0].ratio == 1.0 and rows[0].met is None
    assert rows[1].met is not None and rows[2].met is not None
    startup.print_table(rows)
    out = capsys.readouterr().out
    assert "fencecall --help" in out and "x floor" in out


def test_the_targets_are_judged_against_the_floor_and_the_baseline() -> None:
    assert startup.judge("help", 4 * 10.0, 10.0)[1] is True
    assert startup.judge("help", 4 * 10.0 + 0.1, 10.0)[1] is False
    assert startup.judge("run", startup.RUN_BASELINE_MS / 2, 10.0)[1] is True
    assert startup.judge("run", startup.RUN_BASELINE_MS / 2 + 0.1, 10.0)[1] is False
    assert startup.judge("", 1.0, 10.0) == ("", None)
    assert startup.RUN_BASELINE_MS > 0
