"""How fencecall keeps a long session inside the model's context window, and the cache warm.

Run: ``python -m benchmarks.long_session`` (``--steps N`` for a shorter session, ``--json
PATH`` to save the rows). One scripted session is replayed against the fake
OpenAI-compatible server (:class:`tests.fakeserver.FakeModelServer`, in this process), which
counts each request's input with a tokenizer denser than three characters a token and refuses
(HTTP 400, "maximum context length") a request whose input and ``max_tokens`` exceed its
window. The agent is fencecall's own (a real :class:`~fencecall.Session` with the shell tool,
sandbox off, in a temporary workspace; the server's tokenizer as the counter). Each step the
scripted model calls ``cat`` on a data file written beforehand: a few KB of dense text
(log lines, compact JSON, minified code, Russian, Chinese), its kind and size drawn from a
seeded RNG and kept under the size at which a result is saved to a file instead, so every
output enters the history whole and the history grows to several times the window. Asked
for a summary, the model writes one; after the last step it answers.

The same script runs under each policy, with the same window, reply size, budget
(:attr:`~fencecall.agent._context.Window.budget`) and counter:

- summary: fencecall's compaction (older exchanges replaced once by the model's summary);
- drop: fencecall's compaction without a summary (older exchanges left out, with a note);
- naive: every request refit on its own by leaving out the oldest whole exchanges after the
  task (with a note of how many) until it fits the budget: what fencecall did before and what
  many agents do (:class:`DropOldest`, the only difference from the others);
- off: no compaction: the server refuses the first request that outgrows the window.

The prefix-cache proxy: for each request, the longest run of leading messages it shares with
the request sent just before it (summary requests included), in tokens (each message's
tokens by the server's tokenizer, plus the server's 4 a message), is what a prefix cache
holding the previous request could serve. A real cache (vLLM's, Anthropic's) may hold more
than one request, or may have evicted the last; this counts neither. What a step adds (its
reply and the tool's output) is never cached, so even a history that only grows stays below
100%: about 80% here, where a step adds a seventh of the budget.

The whole run takes a few seconds (wall times are of one run each).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from tests.fakeserver import FakeModelServer, Reply, Served, dense_tokens

from fencecall import Agent, AgentSettings, Session, Toolchain, auto_yes
from fencecall.accounting import ServerCounter
from fencecall.accounting.tokens import server_root
from fencecall.agent._context import (
    SUMMARY_REQUEST,
    ContextOverflow,
    exchanges,
    head_length,
    is_compaction,
)
from fencecall.agent.conversation import Conversation
from fencecall.config import Compaction
from fencecall.message import Message
from fencecall.providers import ChatRequest, ProviderError
from fencecall.providers._openai_provider import OpenAIProvider

from .real_replies import _revision

STEPS = 60
WINDOW = 8192
REPLY = 1024
SEED = 20261205
SIZES = (300, 1700)
"""The range of a data file's tokens (the server's tokenizer): the largest stays under the
share of the window (a quarter: 2,048 of 8,192) above which a result is saved to a file."""
COMPACTION: dict[str, Compaction] = {"summary": "summary", "drop": "drop", "naive": "drop",
                                     "off": "off"}
"""Each policy's ``compaction`` setting (naive's keeps the window, and thus the saving of
huge results to files, as the others do: only how a request is fitted differs)."""
POLICIES = tuple(COMPACTION)
F = "```"
Row = dict[str, Any]


# The data files: a few KB of dense text each, deterministic.

_WORDS = ("request", "worker", "queue", "timeout", "retry", "cache", "shard", "replica",
          "commit", "index", "lease", "batch", "token", "stream", "socket", "handler")
_RUSSIAN = ("запрос", "обработчик", "очередь", "повтор", "ошибка", "сервер", "журнал",
            "задача", "выполнена", "превышено", "время", "ожидания", "данные", "сохранены",
            "соединение", "закрыто", "пользователь", "отчёт")
_CHINESE = ("请求处理超时重试缓存分片副本提交索引租约批量令牌数据流连接关闭用户报告错误服务器"
            "日志任务完成等待保存读取写入配置更新版本模型上下文窗口摘要压缩")


def _log_line(rng: random.Random) -> str:
    return (f"2026-12-05T{rng.randrange(24):02}:{rng.randrange(60):02}:{rng.randrange(60):02}."
            f"{rng.randrange(1000):03}Z {rng.choice(('INFO', 'WARN', 'ERROR', 'DEBUG'))} "
            f"{rng.choice(_WORDS)}-{rng.randrange(16)} {rng.choice(_WORDS)} "
            f"id={rng.getrandbits(48):012x} took={rng.randrange(1, 5000)}ms "
            f"{rng.choice(_WORDS)}={rng.randrange(10**6)}")


def _json_line(rng: random.Random) -> str:
    record = {"id": rng.getrandbits(32), "user": f"u{rng.randrange(10**5)}",
              "tags": rng.sample(_WORDS, 3), "score": round(rng.random() * 100, 3),
              "ok": rng.random() < 0.8, "at": rng.randrange(1_700_000_000, 1_800_000_000),
              "path": f"/v1/{rng.choice(_WORDS)}/{rng.randrange(1000)}"}
    return json.dumps(record, separators=(",", ":"))


def _code_line(rng: random.Random) -> str:
    a, b, c = (rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(3))
    n = rng.randrange(2, 97)
    return (f"function {a}{n}({b},{c}){{return {b}.map(x=>x*{n}+{c}).filter(y=>y%{n + 1}!==0)"
            f".reduce((s,v)=>s+v,0)}};var {c}{n}={a}{n}([{n},{n * 3},{n * 7}],{n % 5});"
            f"if({c}{n}>{rng.randrange(1000)}){{console.log(\"{rng.choice(_WORDS)}\",{c}{n})}}")


def _russian_line(rng: random.Random) -> str:
    return " ".join(rng.choice(_RUSSIAN) for _ in range(rng.randrange(6, 14))).capitalize() + "."


def _chinese_line(rng: random.Random) -> str:
    return "".join(rng.choice(_CHINESE) for _ in range(rng.randrange(12, 30))) + "。"


KINDS: dict[str, Callable[[random.Random], str]] = {
    "log": _log_line, "json": _json_line, "minified js": _code_line, "russian": _russian_line,
    "chinese": _chinese_line}


@dataclass(frozen=True, slots=True)
class Part:
    """One step's data file."""

    name: str
    kind: str
    text: str

    @property
    def tokens(self) -> int:
        return len(dense_tokens(self.text))


def parts(steps: int, seed: int = SEED) -> list[Part]:
    """The data files of a session of ``steps`` steps: kinds and sizes from a seeded RNG."""
    rng = random.Random(seed)
    made = []
    for step in range(1, steps + 1):
        kind = rng.choice(sorted(KINDS))
        target = rng.randint(*SIZES)
        lines: list[str] = []
        tokens = 0
        while True:
            line = KINDS[kind](rng)
            cost = len(dense_tokens(line)) + 1  # and the line end
            if tokens + cost > target and lines:
                break
            lines.append(line)
            tokens += cost
        made.append(Part(f"data/part_{step:03}.txt", kind, "\n".join(lines) + "\n"))
    return made


# The scripted model.

def task(steps: int) -> str:
    return (f"Read the data files data/part_001.txt to data/part_{steps:03}.txt in order, one "
            "a step, with cat, and say what each holds. Rule: never change or delete a file.")


def _last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[-1]["content"] if users else ""
    return content if isinstance(content, str) else json.dumps(content)


def is_summary(served: Served) -> bool:
    return SUMMARY_REQUEST in _last_user_text(served.body)


def scripted(data: Sequence[Part]) -> Callable[[dict[str, Any]], Reply]:
    """A model that reads one file a step, writes a summary when asked, then answers."""
    done = [0]

    def respond(body: dict[str, Any]) -> Reply:
        step = done[0]
        if SUMMARY_REQUEST in _last_user_text(body):
            return Reply(_summary(data, step), chunk_size=256)
        done[0] += 1
        if step >= len(data):
            return Reply(f"All {len(data)} files are read; each holds the data its kind says.",
                         chunk_size=256)
        part = data[step]
        before = f"Step {step}: that file held {data[step - 1].kind}. " if step else ""
        return Reply(f"{before}Next, file {step + 1} of {len(data)}.\n{F}shell\ncat {part.name}"
                     f"\n{F}\n", chunk_size=256)

    return respond


def _summary(data: Sequence[Part], read: int) -> str:
    kinds: dict[str, list[int]] = {}
    for number, part in enumerate(data[:read], 1):
        kinds.setdefault(part.kind, []).append(number)
    held = "; ".join(f"{kind}: files {', '.join(map(str, numbers))}"
                     for kind, numbers in sorted(kinds.items()))
    return (f"Task: read data/part_001.txt to data/part_{len(data):03}.txt in order, one a "
            "step, with cat, and say what each holds. Rule (the user's, word for word): never "
            f"change or delete a file.\nDone: files 1 to {read} were read with cat; none was "
            f"changed. What they held, by kind: {held}.\nFound: the log files hold timed "
            "requests of workers (INFO to ERROR), the JSON files one compact record a line "
            "(id, user, tags, score, ok, at, path), the minified JS files one function a line, "
            "the Russian and Chinese files prose about requests, queues and servers.\nLeft: "
            f"files {read + 1} to {len(data)}, then the answer.\nNo call was unfinished.")


# The naive policy.

class DropOldest(Agent):
    """Every request refit on its own: the oldest whole exchanges after the task left out,
    with a note of how many, until it fits the same budget (fencecall's policy before it
    compacted). Counts as the agent does (the provider's count of the last request where this
    one extends it, else the counter's)."""

    refits = 0
    """Requests sent with exchanges left out."""

    def _fitting(self) -> Generator[Any, object, ChatRequest]:
        yield from ()  # the agent's steps: this refit never waits
        return self._refit()

    def _refit(self) -> ChatRequest:
        request = self._request()
        window = self.context.window
        assert window is not None
        if self.billing.next_input(request) <= window.budget:
            return request
        messages = request.messages
        head = head_length(messages)
        starts = exchanges(messages, head)
        for start in starts[1:]:
            note = Message("system", f"[{start - head} earlier messages were left out to fit "
                                     "the context window]")
            fitted = replace(request, messages=(*messages[:head], note, *messages[start:]))
            if self.billing.next_input(fitted) <= window.budget:
                self.refits += 1
                return fitted
        raise ContextOverflow("the task and the latest exchange do not fit the budget")


# One session, and what its requests show.

def message_tokens(message: dict[str, Any]) -> int:
    """A wire message's tokens as the server counts them (its texts, and 4 a message)."""
    content = message.get("content")
    texts = [content] if isinstance(content, str) else [
        part.get("text", "") for part in content or () if isinstance(part, dict)]
    texts += [call.get("function", {}).get("arguments", "")
              for call in message.get("tool_calls") or ()]
    return sum(len(dense_tokens(text)) for text in texts) + 4


def cached_prefix(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]) -> int:
    """The tokens of the leading messages ``after`` shares with ``before``."""
    tokens = 0
    for old, new in zip(before, after, strict=False):
        if old != new:
            break
        tokens += message_tokens(new)
    return tokens


def failure(err: Exception) -> str:
    """What stopped a run, in short: for the server's refusal, what the request asked."""
    text = str(err)
    limit = re.search(r"maximum context length is (\d+) tokens", text)
    asked = re.search(r"you requested (\d+) tokens", text)
    if limit and asked:
        return (f"{type(err).__name__}, HTTP 400: {int(asked[1]):,} tokens asked, window "
                f"{int(limit[1]):,}")
    return f"{type(err).__name__}: {text.split('. ')[0]}"


def session(policy: str, data: Sequence[Part], workspace: Path, log: Path, *,
            window: int = WINDOW, reply: int = REPLY) -> Row:
    """Run the scripted session under ``policy`` against a fresh server: its row."""
    steps = len(data)
    with FakeModelServer(respond=scripted(data), tokenizer=dense_tokens,
                         window=window) as server:
        provider = OpenAIProvider(api_key=None, base_url=server.openai_url, name="local",
                                  max_retries=0)
        tools = Session(Toolchain.build(["shell"]), workspace=workspace, confirm=auto_yes,
                        sandbox="off")
        conversation = Conversation(log)
        kind: type[Agent] = DropOldest if policy == "naive" else Agent
        settings = AgentSettings(max_steps=steps + 5, max_tokens=reply, context_window=window,
                                 compaction=COMPACTION[policy])
        agent = kind(provider, "m", tools, conversation, settings,
                     counter=ServerCounter(server_root(server.openai_url), "m"))
        started = time.perf_counter()
        try:
            outcome = str(agent.send(task(steps)))
        except (ProviderError, ContextOverflow) as err:
            outcome = failure(err)
        finally:
            wall = time.perf_counter() - started
            tools.close()
        requests = list(server.requests)
        over = len(server.over_window)
    messages = agent.conversation.messages
    main = [r for r in requests if not is_summary(r)]
    shares, cached = [], 0
    for index, request in enumerate(requests):
        hit = cached_prefix(requests[index - 1].body["messages"] if index else [],
                            request.body["messages"])
        cached += hit
        if index and not is_summary(request):
            shares.append(hit / request.input_tokens)
    breaks = sum(1 for before, after in pairwise(main)
                 if after.body["messages"][: len(before.body["messages"])]
                 != before.body["messages"])
    sent = sum(r.input_tokens for r in requests)
    return {
        "policy": policy, "outcome": outcome,
        "steps": sum(m.tool == "shell" for m in messages),
        "main requests": len(main), "summary requests": len(requests) - len(main),
        "compactions": (agent.refits if isinstance(agent, DropOldest)
                        else sum(is_compaction(m) for m in messages)),
        "prefix breaks": breaks, "over-window": over,
        "prefix share mean": statistics.fmean(shares) if shares else 0.0,
        "cached / input": cached / sent if sent else 0.0,
        "input tokens": sent, "uncached tokens": sent - cached,
        "largest request": max((r.input_tokens for r in requests), default=0),
        "wall s": wall,
    }


def measure(steps: int = STEPS, *, window: int = WINDOW, reply: int = REPLY, seed: int = SEED,
            policies: Sequence[str] = POLICIES,
            progress: Callable[[Row], None] | None = None) -> list[Row]:
    """One session per policy, on the same script: the rows, with the ratios to naive's."""
    data = parts(steps, seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="fencecall-long-") as folder:
        workspace = Path(folder) / "workspace"
        for part in data:
            path = workspace / part.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(part.text, encoding="utf-8")
        for policy in policies:
            rows.append(session(policy, data, workspace, Path(folder) / policy / "log",
                                window=window, reply=reply))
            if progress is not None:
                progress(rows[-1])
    naive = next((row for row in rows if row["policy"] == "naive"), None)
    for row in rows:  # a run that stopped short is no comparison
        compared = naive is not None and row["outcome"] == naive["outcome"] == "done"
        for column in ("input", "uncached"):
            base = naive[f"{column} tokens"] if compared and naive else 0
            row[f"{column} x naive"] = row[f"{column} tokens"] / base if base else None
    return rows


COLUMNS = ("policy", "outcome", "steps", "main requests", "summary requests", "compactions",
           "prefix breaks", "over-window", "prefix share mean", "cached / input", "input tokens",
           "uncached tokens", "input x naive", "uncached x naive", "largest request", "wall s")
_SHARES = ("prefix share mean", "cached / input")


def _cell(column: str, value: object) -> str:
    if value is None:
        return "-"
    if column in _SHARES and isinstance(value, float):
        return f"{value:.1%}"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(rows: Sequence[Row]) -> str:
    """The rows as a markdown table, numbers right-aligned."""
    align = ["---" if column in ("policy", "outcome") else "---:" for column in COLUMNS]
    lines = ["| " + " | ".join(COLUMNS) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_cell(column, row.get(column)) for column in COLUMNS) + " |"
              for row in rows]
    return "\n".join(lines)


LEGEND = """\
- steps: shell calls run (the script has one a step); outcome: how the run ended (done, or
  the error that stopped it).
- main / summary requests: chat requests the server answered (summary requests ask for a
  compaction's summary); over-window: requests the server refused for exceeding its window.
- compactions: compaction records in the log (summary, drop); for naive, the requests sent
  with exchanges left out (it refits each request on its own).
- prefix breaks: main requests whose messages do not start with the previous main request's.
- prefix share mean: over main requests after the first, the share of a request's input
  tokens in the leading messages it shares with the request sent before it (what a prefix
  cache holding that request serves); cached / input: those tokens over all input tokens sent
  (summary requests included, each compared with the request before it).
- input tokens: every request's input as the server counted it (summary requests included);
  uncached tokens: input tokens less the cached prefixes; x naive: the ratio to naive's.
- largest request: the largest input of a request sent (budget: window - reply - headroom).
- wall s: the session's wall time, one run per policy (the fake server runs in this process,
  answers at once, and its tokenizer counts every request: mostly fencecall's and the
  server's overhead, no model time)."""


def header(data: Sequence[Part], window: int, reply: int, seed: int) -> str:
    tokens = sum(part.tokens for part in data)
    size = sum(len(part.text.encode()) for part in data)
    return (f"# python -m benchmarks.long_session, {datetime.now(UTC):%Y-%m-%d}, "
            f"{os.cpu_count() or 0} cores {platform.machine()}, Python "
            f"{platform.python_version()}, fencecall {_revision()}, {len(data)} steps (seed "
            f"{seed}), window {window:,}, reply {reply:,}: tool outputs {size / 1e3:,.0f} KB, "
            f"{tokens:,} tokens ({tokens / window:.1f}x the window)")


def main(argv: Sequence[str] | None = None) -> None:
    options = argparse.ArgumentParser(prog="python -m benchmarks.long_session",
                                      description=__doc__.split("\n")[0] if __doc__ else None)
    options.add_argument("--steps", type=int, default=STEPS, metavar="N",
                         help="steps of the scripted session (default: %(default)s)")
    options.add_argument("--window", type=int, default=WINDOW,
                         help="the model's context window (default: %(default)s)")
    options.add_argument("--reply", type=int, default=REPLY,
                         help="max_tokens of a reply (default: %(default)s)")
    options.add_argument("--seed", type=int, default=SEED, help="the script's seed")
    options.add_argument("--policies", default=",".join(POLICIES),
                         help="comma-separated (default: %(default)s)")
    options.add_argument("--json", type=Path, default=None, metavar="PATH",
                         help="also save the header and rows here")
    args = options.parse_args(argv)
    policies = [policy for policy in args.policies.split(",") if policy]
    unknown = set(policies) - set(POLICIES)
    if unknown or args.steps < 1:
        options.error(f"unknown policies {sorted(unknown)}" if unknown else "steps < 1")
    top = header(parts(args.steps, args.seed), args.window, args.reply, args.seed)
    print(top + "\n", flush=True)
    rows = measure(args.steps, window=args.window, reply=args.reply, seed=args.seed,
                   policies=policies,
                   progress=lambda row: print(f"  {row['policy']}: {row['wall s']:.1f} s",
                                              file=sys.stderr, flush=True))
    print(table(rows))
    print()
    print(LEGEND)
    if args.json:
        args.json.write_text(json.dumps({"header": top, "columns": COLUMNS, "rows": rows},
                                        indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
