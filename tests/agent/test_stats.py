"""Usage and cost from conversation logs."""

from __future__ import annotations

from decimal import Decimal

from fencecall.agent.stats import collect, jobs_left_running
from fencecall.message import CallRecord, JobEnded, Message, ReplyRecord, Status, Usage, system


def result(tool: str, outcome: str, duration: float) -> Message:
    status = None if outcome == "ok" else Status(outcome)
    return Message("system", "…", tool=tool, call=CallRecord(tool, status, duration))


def reply(model: str, provider: str, url: str | None, **usage: int) -> Message:
    return Message("assistant", "…", reply=ReplyRecord(model, provider, url, Usage(**usage)))


def test_tools_are_counted_per_call_with_percentiles() -> None:
    first = [result("shell", "ok", d) for d in (0.1, 0.2, 0.3, 0.4)]
    second = [result("shell", "error", 2.0), result("save", "declined", 0.0),
              result("save", "ok", 0.01), Message("system", "a note without a record")]
    stats = collect([first, second])
    shell, save = stats.tools["shell"], stats.tools["save"]
    assert (shell.calls, shell.failures, shell.denials) == (5, 1, 0)
    assert (shell.percentile(0.5), shell.percentile(0.95)) == (0.3, 2.0)
    assert (save.calls, save.failures, save.denials, save.durations) == (2, 0, 1, [0.01])


def test_known_models_are_priced_and_local_ones_are_unknown() -> None:
    priced = reply("gpt-4o", "openai", "https://api.openai.com/v1/", input_tokens=1000,
                   output_tokens=0, cache_read_tokens=1000, cache_write_tokens=0)
    stats = collect([[priced, priced]])
    model = stats.models["openai/gpt-4o"]
    assert model.replies == 2 and model.tokens["cache_read_tokens"] == 2000
    assert model.cost is not None and model.cost > 0
    assert stats.cost == model.cost
    local = reply("qwen", "local", "http://127.0.0.1:8080/v1/", input_tokens=5, output_tokens=5)
    mixed = collect([[priced, local]])
    assert mixed.models["local/qwen"].cost is None and mixed.cost is None


def test_a_reply_without_usage_makes_the_cost_unknown() -> None:
    bare = Message("assistant", "…", reply=ReplyRecord("gpt-4o", "openai"))
    assert collect([[bare]]).models["openai/gpt-4o"].cost is None
    assert collect([[]]).cost == Decimal(0)


def test_a_command_that_exited_non_zero_is_a_failure() -> None:
    shell = [Message("system", "…", tool="shell", call=CallRecord("shell", None, 0.1, None, code))
             for code in (0, 2, None, 1)]
    assert collect([shell]).tools["shell"].failures == 2


def test_jobs_left_running_are_those_started_and_never_heard_to_end() -> None:
    log = [system("started", tool="shell", job=1), system("started", tool="shell", job=2),
           system("started", tool="shell", job=3), system("started", tool="shell", job=4),
           system("Job 2 is still running.", tool="jobs", job=2, job_state="running"),
           system("Job 3 ended.", tool="jobs", job=3, job_state="ended"),
           system("Background job 4 was stopped.", note=JobEnded(4, "stopped"))]
    assert jobs_left_running(log) == [1, 2]
    assert jobs_left_running([]) == []
