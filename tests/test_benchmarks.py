"""The benchmark code keeps working (no timings are asserted: numbers live in benchmarks/)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from benchmarks import file_access, gptme_adapter, long_session, real_replies, run, targets
from benchmarks.inputs import SHAPES, reply_ending_in_a_call
from benchmarks.timing import compare

from fencecall import StreamParser, Toolchain
from fencecall.parsing import parse_calls


@pytest.mark.parametrize("fmt", sorted(SHAPES))
def test_shapes_have_calls_and_stream_like_whole_text(fmt: str) -> None:
    for make in SHAPES[fmt].values():
        text = make(10_000)
        assert len(text) >= 10_000 or fmt == "markdown"
        whole = parse_calls(text, fmt)
        assert whole
        parser = StreamParser(fmt)
        streamed = [c for i in range(0, len(text), 8) for c in parser.feed(text[i : i + 8])]
        assert streamed + parser.finish() == whole


def test_compare_gives_every_case_the_same_runs() -> None:
    timings = compare({"a": lambda: None, "b": lambda: sum(range(100))}, budget=0.01,
                      min_runs=4, max_runs=6)
    assert {t.runs for t in timings.values()} in ({4}, {5}, {6})
    assert all(t.min <= t.median for t in timings.values())


def test_sections_smoke_run_on_small_inputs() -> None:
    rows = list(run.parse_rows({"tiny": 2_000}, budget=0.01))
    assert len(rows) == sum(len(shapes) for shapes in SHAPES.values())
    assert all(row["fc calls"] > 0 and row["fc/floor"] > 0 for row in rows)
    streamed = list(run.stream_rows({"a": 2_000, "b": 4_000}, budget=0.01))
    assert streamed[1]["x time for 2x text"] is not None
    [chat] = run.chat_loop_rows({"tiny": 2_000}, budget=0.01)
    assert chat["fencecall ms"] > 0


def test_the_chat_loop_stops_at_the_first_tool_call() -> None:
    text = reply_ending_in_a_call(3_000)
    assert run.until_first_call(run.chunks_of(text)) == len(text)  # only the end completes it
    assert len(text) < run.until_first_call(run.chunks_of(text + "More.\n")) <= len(text) + 8
    assert run.MinimalConsumer().feed("a\nb") == []


def test_results_are_written_after_every_row(tmp_path: Path) -> None:
    results = run.Results({"python": "3"}, tmp_path / "r.json")
    results.add("S", {"case": "a"})
    assert json.loads((tmp_path / "r.json").read_text())["sections"] == {"S": [{"case": "a"}]}
    results.add("S", {"case": "b"})
    assert len(json.loads((tmp_path / "r.json").read_text())["sections"]["S"]) == 2


def test_table_printing(capsys: pytest.CaptureFixture[str]) -> None:
    run.print_table("T", [{"case": "a", "value": 1.5, "none": None, "flag": True}])
    out = capsys.readouterr().out
    assert "## T" in out and "1.50" in out and "-" in out and "yes" in out


def test_executables_come_from_the_running_environment() -> None:
    assert Path(run._executable("fencecall")).parent == Path(sys.executable).parent


def test_gptme_comparison_is_optional() -> None:
    if gptme_adapter.available():
        pytest.skip("gptme is installed here")
    assert gptme_adapter.whole_parser("markdown") is None
    assert gptme_adapter.chat_loop_stream() is None
    assert gptme_adapter.tool_call("shell", "true") is None
    assert gptme_adapter.version() is None


def test_targets_are_judged_from_the_rows_measured() -> None:
    parse: list[dict[str, object]] = [
        {"format": "markdown", "shape": "realistic reply", "size": "1 MB", "fc/floor": 0.6,
         "speedup": 12.0},
        {"format": "markdown", "shape": "many small blocks", "size": "1 MB", "speedup": 4.0},
        {"format": "markdown", "shape": "many small blocks", "size": "10 KB", "speedup": 6.0},
        {"format": "xml", "shape": "a", "size": "1 MB", "speedup": "differs"},
        {"format": "xml", "shape": "b", "size": "1 MB", "speedup": 5.5}]
    stream = [{"format": "markdown", "shape": "realistic reply", "fc/floor": 2.5,
               "x time for 2x text": 2.1, "floor x for 2x text": 2.3}]
    judged = {row["target"].split(":")[0]: row for row in targets.rows(
        {"parse_rows": parse, "stream_rows": stream,
         "memory_rows": [{"case": "fencecall: parse", "peak / reply size": 0.8}]})}
    assert judged["realistic reply, 1 MB"]["met"] == "yes"
    tiny = judged["back-to-back tiny blocks"]
    assert tiny["met"] == "no" and tiny["measured"] == "4.00x-6.00x"
    assert judged["xml calls"]["met"] == "yes" and "1 rows find different calls" in \
        judged["xml calls"]["measured"]
    assert judged["tool calls"]["met"] is None  # no rows: not measured, not guessed
    streaming = [row for row in targets.rows({"stream_rows": stream})
                 if row["target"].startswith("streaming")]
    assert [row["met"] for row in streaming] == ["no", "yes"]
    assert "the floor itself 2.30x" in streaming[1]["measured"]
    assert judged["peak memory for a 10 MB reply"]["met"] == "yes"
    assert all(row["met"] is None for row in targets.rows({}))


def test_file_access_rows_compare_each_way_of_opening() -> None:
    rows = file_access.table(budget=0.01, min_runs=2)
    names = [str(row["case"]) for row in rows]
    assert "read deep: by descriptor" in names and "tool call: save deep" in names
    assert all(row["x by name"] for row in rows if "by descriptor" in str(row["case"]))


def test_real_replies_compares_a_call_with_what_the_agent_ran() -> None:
    toolchain = Toolchain.build(list(real_replies.TOOLS))

    def judged(agent: str, text: str, ref: Mapping[str, object], fmt: str = "markdown") -> str:
        reply = real_replies.Reply(1, "m", agent, text, ref)
        reading = real_replies.Reader(fmt, toolchain).read(text)
        return real_replies.judge(reply, reading, toolchain).outcome

    ran = {"action": "ls -la", "error": None}
    assert judged("mini-swe-agent bash", "Look.\n\n```bash\nls -la  \n```\n", ran) == "same call"
    assert judged("mini-swe-agent bash", "```bash\nls\n```\n", ran) == "wrong call"
    erred = {"action": None, "error": "FormatError: found 2 actions"}
    assert judged("mini-swe-agent bash", "```bash\nls\n```\n```bash\npwd\n```\n",
                  erred) == "call, ref erred"
    assert judged("mini-swe-agent bash", "Nothing to run.", erred) == "quiet"
    native = {"n_tool_calls": 1, "error": None}
    assert judged("mini-swe-agent toolcall (native)", "```sh\nls\n```\n", native) == "wrong call"
    view = {"function": "str_replace_editor", "error": None,
            "action": "str_replace_editor view /a.py  --view_range 1 50"}
    written = ("<tool_call>\n<function=str_replace_editor>\n<parameter=command>view</parameter>\n"
               "<parameter=path>/a.py</parameter>\n<parameter=view_range>[1, 50]</parameter>\n"
               "</function>\n</tool_call>\n")
    assert judged("SWE-agent xml_function_calling", written, view, "qwen3-coder") == "same call"
    assert judged("SWE-agent xml_function_calling", written.replace("50", "60"), view,
                  "qwen3-coder") == "wrong call"
    assert real_replies.call_like("```\npython x.py\n```\n", toolchain) == \
        "bare ``` block starting 'python x.py'"
    assert real_replies.call_like("<function=bash>\n</function>", toolchain) == "<function="
    assert real_replies.call_like("````md\n```bash\nls\n```\n````\n@shell(", toolchain) == "@shell("
    assert real_replies.call_like("Use ```bash``` inline; ```text\nls\n```", toolchain) is None


def test_real_replies_table_adds_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not real_replies.CORPUS.is_file():
        pytest.skip(f"no real-replies corpus at {real_replies.CORPUS} (../shared beside the "
                    "clone)")
    saved = tmp_path / "real.json"
    real_replies.main(["--limit", "4", "--budget", "0.01", "--json", str(saved)])
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("# python -m benchmarks.real_replies, ") and "cores" in out[0]
    assert "20 replies" in out[0] and out[1] == ""
    rows = json.loads(saved.read_text())["rows"]
    table = out[2:]
    assert len(table) == 2 + len(rows) == 2 + 7  # header, rule, 6 model rows and the total
    assert all(line.count("|") == len(real_replies.COLUMNS) + 1 for line in table)
    for row in rows:
        assert sum(row[outcome] for outcome in real_replies.OUTCOMES) == row["replies"]
        assert row["agrees"] <= row["replies"] and row["MB/s median"] > 0
    *models, total = rows
    assert {row["format"] for row in models} == {"markdown", "qwen3-coder", "auto"}
    firsts = [row for row in models if row["format"] != "auto"]
    for column in ("replies", *real_replies.OUTCOMES, "agrees", "stream diffs"):
        assert total[column] == sum(row[column] for row in firsts)
    assert total["replies"] == 20  # the first 4 replies of each of the 5 models


def test_long_session_compares_the_policies(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "long.json"
    long_session.main(["--steps", "20", "--json", str(saved)])
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("# python -m benchmarks.long_session, ") and "20 steps" in out[0]
    table = out[2 : 4 + len(long_session.POLICIES)]
    assert [cell.strip() for cell in table[0].strip("| ").split(" | ")] == \
        list(long_session.COLUMNS)
    assert all(line.count("|") == len(long_session.COLUMNS) + 1 for line in table)
    rows = {row["policy"]: row for row in json.loads(saved.read_text())["rows"]}
    assert list(rows) == list(long_session.POLICIES)
    naive = rows["naive"]
    assert naive["outcome"] == "done" and naive["over-window"] == 0 and naive["compactions"]
    for policy in ("summary", "drop"):
        row = rows[policy]
        assert row["outcome"] == "done" and row["steps"] == 20 and row["over-window"] == 0
        assert row["compactions"] >= 1 and row["prefix breaks"] == row["compactions"]
        assert row["prefix share mean"] > naive["prefix share mean"]
        assert row["cached / input"] > naive["cached / input"]
    assert rows["summary"]["summary requests"] == rows["summary"]["compactions"]
    assert rows["drop"]["summary requests"] == 0
    off = rows["off"]
    assert off["over-window"] == 1 and off["steps"] < 20 and off["input x naive"] is None
    assert off["outcome"].startswith("ProviderError, HTTP 400")
