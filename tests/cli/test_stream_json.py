"""``--output-format json|stream-json`` and ``--input-format stream-json``: the real CLI
against the scripted model server. Every stdout line is JSON valid against the shipped
schema, stderr holds only JSON lines, and the final ``result`` agrees with the log."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fencecall.accounting import Price
from fencecall.agent import Conversation
from fencecall.agent._context import SUMMARY_REQUEST
from fencecall.agent.stats import collect
from fencecall.cli._stream_json import SCHEMA
from fencecall.message import Status

from ..fakeserver import FakeModelServer, Reply, dense_tokens
from ..support import F
from .conftest import CLI, cli_env

VALIDATOR = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
PRICE = '[models."local/m"]\nprice = {input = 2, output = 8}\n'


def events_of(stdout: str) -> list[dict[str, Any]]:
    """Each stdout line, parsed and checked against the schema."""
    events = [json.loads(line) for line in stdout.splitlines()]
    for event in events:
        VALIDATOR.validate(event)
    return events


def stderr_lines(stderr: str) -> list[dict[str, Any]]:
    """stderr of a JSON run: JSON lines only (a notice, a warning, an error)."""
    lines = [json.loads(line) for line in stderr.splitlines()]
    stderr_schema = {**json.loads(SCHEMA.read_text())["$defs"]["stderr_line"]}
    for line in lines:
        jsonschema.validate(line, stderr_schema)
    return lines


def configure(tmp_path: Path, text: str) -> None:
    config = tmp_path / "config" / "fencecall" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def shell(command: str, before: str = "Running it.") -> Reply:
    return Reply(f"{before}\n{F}shell\n{command}\n{F}\n")


def scripted_session(body: dict[str, Any], asked: list[int]) -> Reply:
    """A job, a failed call, a near miss, then big outputs until the window compacts, then
    an answer; a summary request gets a summary."""
    last = body["messages"][-1]["content"]
    if isinstance(last, str) and SUMMARY_REQUEST in last:
        return Reply("Summary: a job ran, a read failed, numbers were printed.")
    asked[0] += 1
    step = asked[0]
    if step == 1:
        return shell("sleep 2; echo slept", "A slow one first.")
    if step == 2:
        return Reply(f"Reading.\n{F}read missing.txt\n{F}\n")
    if step == 3:
        return Reply(f"Listing.\n{F}zsh\nls\n{F}\n")
    if step <= 12:
        return shell(f"seq {step * 10_000} {step * 10_000 + 250}")
    return Reply("All done: the numbers are printed.")


def test_a_stream_json_run_is_valid_json_events_and_its_result_matches_the_log(
        fencecall: CLI, tmp_path: Path) -> None:
    configure(tmp_path, PRICE)
    asked = [0]
    with FakeModelServer(respond=lambda body: scripted_session(body, asked),
                         tokenizer=dense_tokens, window=4096) as server:
        result = fencecall("-y", "--model", "local/m", "--name", "sj", "--sandbox", "off",
                           "--tools", "shell,read", "--context-window", "4096",
                           "--max-tokens", "512", "--background-after", "1",
                           "--output-format", "stream-json", "--include-partial",
                           "print the numbers", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    stderr_lines(result.stderr)
    events = events_of(result.stdout)
    init, last = events[0], events[-1]
    assert (init["type"], init["subtype"], init["session_id"]) == ("system", "init", "sj")
    assert init["model"] == "local/m" and "shell" in init["tools"]
    assert init["sandbox"] == {"policy": "off", "network": False}
    assert {event["session_id"] for event in events} == {"sj"}
    calls = of_type(events, "tool_call")
    first = calls[0]
    assert (first["tool"], first["arguments"]["command"]) == ("shell", "sleep 2; echo slept")
    assert first["raw"] == f"{F}shell\nsleep 2; echo slept\n{F}"
    reply = of_type(events, "assistant")[0]["text"]
    assert reply[first["span"][0]:first["span"][1]] == first["raw"]
    finals = {e["call_id"]: e for e in of_type(events, "tool_result") if e["final"]}
    assert set(finals) == {call["call_id"] for call in calls}  # every call answered
    read = next(call for call in calls if call["tool"] == "read")
    assert finals[read["call_id"]]["status"] == Status.ERROR.value
    assert [job["event"] for job in of_type(events, "job")][:1] == ["started"]
    assert any(f["kind"] == "near-miss" and "zsh" in f["text"]
               for f in of_type(events, "feedback"))
    assert of_type(events, "compaction")
    deltas = "".join(e["text"] for e in of_type(events, "text_delta"))
    assert "A slow one first." in deltas
    # the result: Claude Code's names, the same figures as the log
    assert (last["type"], last["subtype"], last["is_error"], last["exit_code"]) == (
        "result", "success", False, 0)
    assert last["result"] == "All done: the numbers are printed."
    logged = Conversation.open(tmp_path / "home", "sj").messages
    assert last["num_turns"] == sum(m.role == "assistant" for m in logged)
    stats = collect([logged], lambda model: None if model != "local/m" else _price())
    tokens = {kind: sum(m.tokens[kind] for m in stats.models.values())
              for kind in ("input_tokens", "output_tokens")}
    assert last["usage"]["input_tokens"] == tokens["input_tokens"] > 0
    assert last["usage"]["output_tokens"] == tokens["output_tokens"] > 0
    assert stats.cost is not None
    assert last["total_cost_usd"] == pytest.approx(float(stats.cost))
    per_request = sum(e["cost_usd"] for e in of_type(events, "usage"))
    assert per_request == pytest.approx(last["total_cost_usd"])


def _price() -> Price:
    return Price(Decimal(2), Decimal(8))


def test_a_budget_stop_ends_the_stream_with_its_result_and_exit_status(
        fencecall: CLI, tmp_path: Path) -> None:
    replies = [shell(f"seq {n * 1000} {n * 1000 + 200}") for n in range(30)]
    with FakeModelServer(replies) as server:
        result = fencecall("-y", "--model", "local/m", "--sandbox", "off", "--budget-tokens",
                           "6000", "--max-tokens", "300", "--output-format", "stream-json",
                           "count", base_url=server.openai_url)
    assert result.returncode == 3, result.stderr
    events = events_of(result.stdout)
    [limit] = of_type(events, "limit")
    assert limit["kind"] == "budget-tokens"
    last = events[-1]
    assert (last["subtype"], last["is_error"], last["exit_code"]) == (
        "error_max_budget_tokens", True, 3)


def test_json_prints_only_the_result_and_a_declined_call_is_told(
        fencecall: CLI, tmp_path: Path, workspace: Path) -> None:
    replies = [shell("touch made"), Reply("It was not allowed.")]
    with FakeModelServer(replies) as server:
        result = fencecall("--model", "local/m", "--output-format", "json", "make a file",
                           base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    [only] = events_of(result.stdout)
    assert (only["type"], only["result"], only["num_turns"]) == (
        "result", "It was not allowed.", 2)
    assert not (workspace / "made").exists()  # nobody to ask: declined
    told = server.requests[-1].body["messages"][-1]["content"]
    assert "not confirmed" in told


def test_stream_json_input_drives_a_session_of_several_prompts(
        fencecall: CLI, tmp_path: Path) -> None:
    prompts = [{"type": "user", "message": {"role": "user", "content": "first"}},
               "not json", {"type": "user", "message": {
                   "role": "user", "content": [{"type": "text", "text": "second"}]}}]
    stdin = "".join((p if isinstance(p, str) else json.dumps(p)) + "\n" for p in prompts)
    with FakeModelServer([Reply("One."), Reply("Two.")]) as server:
        result = fencecall("--model", "local/m", "--name", "multi", "--input-format",
                           "stream-json", "--output-format", "stream-json",
                           base_url=server.openai_url, stdin=stdin)
    events = events_of(result.stdout)
    results = of_type(events, "result")
    assert [(r["subtype"], r["result"]) for r in results][::2] == [
        ("success", "One."), ("success", "Two.")]
    assert results[1]["subtype"] == "error_input" and "input line 2" in results[1]["result"]
    assert result.returncode == 0  # the last prompt's
    assert [e["message"] for e in stderr_lines(result.stderr) if e["type"] == "error"] == [
        results[1]["result"]]
    sent = [m["content"] for m in server.requests[-1].body["messages"] if m["role"] == "user"]
    assert sent[-2:] == ["first", "second"]  # one conversation


def test_errors_are_json_too(fencecall: CLI, tmp_path: Path) -> None:
    with FakeModelServer([]) as server:
        result = fencecall("--output-format", "stream-json", "hi", base_url=server.openai_url,
                           env={**cli_env(tmp_path, server.openai_url)})
    assert result.returncode == 2
    [error] = stderr_lines(result.stderr)
    assert error["type"] == "error" and "model" in error["message"]
    [only] = events_of(result.stdout)
    assert (only["subtype"], only["exit_code"]) == ("error_usage", 2)
    with FakeModelServer([Reply(status=500), Reply(status=500), Reply(status=500)]) as server:
        failed = fencecall("--model", "local/m", "--retries", "0", "--output-format", "json",
                           "hi", base_url=server.openai_url)
    assert failed.returncode == 1
    [only] = events_of(failed.stdout)
    assert (only["subtype"], only["is_error"]) == ("error_during_execution", True)


def test_run_writes_its_calls_and_results_as_events(fencecall: CLI, tmp_path: Path,
                                                     workspace: Path) -> None:
    reply = tmp_path / "reply.md"
    reply.write_text(f"Two calls.\n{F}read nope.txt\n{F}\n\n{F}shell\necho hi\n{F}\n")
    result = fencecall("run", str(reply), "--output-format", "stream-json", "--sandbox", "off",
                       base_url="http://127.0.0.1:9")
    assert result.returncode == 1, result.stderr
    events = events_of(result.stdout)
    statuses = [(e["tool"], e["status"]) for e in of_type(events, "tool_result")]
    # a saved reply: every call runs; unsandboxed, the shell needs a yes nobody gives
    assert statuses == [("read", "error"), ("shell", "declined")]
    assert events[-1]["subtype"] == "error_during_execution"


def test_the_schema_knows_every_status_and_ending() -> None:
    from fencecall.cli._stream_json import _BUDGET_SUBTYPES, _SUBTYPES

    schema = json.loads(SCHEMA.read_text())["$defs"]
    statuses = set(schema["tool_result"]["properties"]["status"]["enum"])
    assert statuses == {"ok", *(status.value for status in Status)}
    subtypes = set(schema["result"]["properties"]["subtype"]["enum"])
    assert {*_SUBTYPES.values(), *_BUDGET_SUBTYPES.values()} <= subtypes


def test_every_kind_of_recorded_message_becomes_a_valid_event() -> None:
    from io import StringIO

    from fencecall.agent import ToolResult
    from fencecall.cli._stream_json import JsonLines, RunEvents
    from fencecall.message import JobEnded, LimitReached, Nudge, Outcome, system

    out = StringIO()
    events = RunEvents(JsonLines(out, streaming=True, session_id="s"), lambda model: None)
    for message in (system("Job 3 ended (exit 0).", note=JobEnded(3, "ended")),
                    system("Stopped by the time limit.", ending=Outcome.TIME_LIMIT,
                           note=LimitReached("time-limit")),
                    system("Stopped: 3 replies in a row…", ending=Outcome.GAVE_UP),
                    system("Go on.", note=Nudge.REMINDER),
                    system("a hook's note", tool="shell")):
        events(ToolResult(message))
    said = events_of(out.getvalue())
    assert [(e["type"], e.get("kind") or e.get("event")) for e in said] == [
        ("job", "ended"), ("limit", "time-limit"), ("limit", "gave-up"),
        ("feedback", "reminder"), ("notice", None)]


def test_the_rules_in_force_are_in_init_and_a_refused_call_is_a_blocked_result(
        fencecall: CLI, workspace: Path) -> None:
    replies = [shell("echo hi; touch made"), shell("echo hi"), Reply("Done.")]
    with FakeModelServer(replies) as server:
        result = fencecall("--model", "local/m", "--sandbox", "off", "--allow",
                           "shell(echo *)", "--deny", "shell(touch *)", "--output-format",
                           "stream-json", "try", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    events = events_of(result.stdout)
    assert events[0]["permissions"] == {"allow": ["shell(echo *)"], "deny": ["shell(touch *)"]}
    assert [e["status"] for e in of_type(events, "tool_result")] == ["blocked", "ok"]
    assert not (workspace / "made").exists()


def test_ctrl_c_ends_the_stream_with_an_interrupted_result(tmp_path: Path,
                                                           workspace: Path) -> None:
    import signal
    import subprocess
    import sys

    with FakeModelServer([Reply("thinking for a long while", latency=60)]) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fencecall.cli.main", "--model", "local/m", "-w",
             str(workspace), "--output-format", "stream-json", "think"],
            env=cli_env(tmp_path, server.openai_url), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the init line: the run has started
        proc.send_signal(signal.SIGINT)
        rest, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    events = events_of(first + rest)
    assert events[-1]["subtype"] == "error_interrupted" and events[-1]["exit_code"] == 130
    stderr_lines(stderr)
