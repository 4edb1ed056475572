"""Small-model settings through the real CLI and the real OpenAI client: sampling sent only
when set, the compact prompt, and the exit status when replies keep running nothing."""

from __future__ import annotations

from pathlib import Path

from ..fakeserver import FakeModelServer, Reply
from ..support import F
from .conftest import CLI, cli_env, log_of


def test_sampling_is_sent_only_when_set(fencecall: CLI) -> None:
    with FakeModelServer([Reply("Hi."), Reply("Hi.")]) as server:
        plain = fencecall("--model", "local/m", "hi", base_url=server.openai_url)
        tuned = fencecall("--model", "local/m", "--temperature", "0.2", "--top-p", "0.9",
                          "--stop", "<|im_end|>", "hi", base_url=server.openai_url)
    assert plain.returncode == tuned.returncode == 0, plain.stderr + tuned.stderr
    first, second = (request.body for request in server.requests)
    assert not {"temperature", "top_p", "stop"} & set(first)
    assert (second["temperature"], second["top_p"], second["stop"]) == (0.2, 0.9, ["<|im_end|>"])


def test_model_table_in_config_and_compact_prompt(fencecall: CLI, tmp_path: Path) -> None:
    config = tmp_path / "config" / "fencecall" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[models."local/small"]\ntemperature = 0.1\nmax_tokens = 256\n'
                      "context_window = 4096\n")
    with FakeModelServer([Reply("Hi.")]) as server:
        result = fencecall("--model", "local/small", "hi", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    body = server.requests[0].body
    assert body["temperature"] == 0.1 and body["max_tokens"] == 256
    prompt = body["messages"][0]["content"]
    assert "Example:" in prompt and "### Examples" not in prompt  # compact: window <= 8192


def test_replies_that_keep_running_nothing_exit_6(fencecall: CLI, tmp_path: Path) -> None:
    replies = [Reply(f"{F}python\nprint({i})\n{F}\n") for i in range(4)]
    with FakeModelServer(replies) as server:
        result = fencecall("--model", "local/m", "--name", "nm", "compute",
                           base_url=server.openai_url)
    assert result.returncode == 6, result.stderr  # gave up
    assert "3 replies in a row" in result.stdout
    records = log_of(tmp_path, "nm")
    assert sum("near_miss" in r.get("metadata", {}) for r in records) == 3
    assert len(server.requests) == 3


def test_a_window_too_small_for_the_prompt_is_a_clear_error(fencecall: CLI,
                                                            tmp_path: Path) -> None:
    with FakeModelServer([Reply("Hi.")]) as server:
        result = fencecall("--model", "local/m", "--context-window", "600", "--prompt", "full",
                           "hi", base_url=server.openai_url,
                           env=cli_env(tmp_path, server.openai_url))
    assert result.returncode == 2
    assert "do not fit the context window of 600 tokens" in result.stderr
    assert server.requests == []


def test_the_context_window_comes_from_the_server_when_it_says(fencecall: CLI) -> None:
    models = [{"id": "other", "object": "model", "max_model_len": 999},
              {"id": "small", "object": "model", "max_model_len": 4096}]
    with FakeModelServer([Reply("Hi.")], models=models) as server:
        result = fencecall("--model", "local/small", "hi", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    body = server.requests[-1].body
    assert body["max_tokens"] == 1024  # a quarter of the served window
    assert "Example:" in body["messages"][0]["content"]  # compact, as for a small window


def test_llama_cpp_props_give_the_window_and_silence_leaves_it_unset(fencecall: CLI) -> None:
    props = {"default_generation_settings": {"n_ctx": 2048}}
    with FakeModelServer([Reply("Hi.")], props=props) as server:
        result = fencecall("--model", "local/m", "hi", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert server.requests[-1].body["max_tokens"] == 512
    with FakeModelServer([Reply("Hi.")]) as server:
        result = fencecall("--model", "local/m", "hi", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert server.requests[-1].body["max_tokens"] == 4096
    assert "### Examples" in server.requests[-1].body["messages"][0]["content"]
