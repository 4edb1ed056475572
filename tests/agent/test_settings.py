"""One resolver owns every run setting's precedence and every derived rule."""

from __future__ import annotations

from pathlib import Path

from fencecall.agent.settings import Overrides, resolve
from fencecall.config import Config, load_config

CONFIG = """
max_steps = 12
max_tokens = 2000
retries = 4
[models."local/small"]
temperature = 0.2
stop = ["<|end|>"]
context_window = 4096
[models."local/big"]
max_tokens = 900
context_window = 100000
"""


def config_in(tmp_path: Path) -> Config:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    return load_config({"FENCECALL_CONFIG": str(path), "FENCECALL_HOME": str(tmp_path)})


def test_the_first_source_that_says_wins_then_the_model_then_the_file(tmp_path: Path) -> None:
    config = config_in(tmp_path)
    plain = resolve(config, "local/small")
    assert (plain.max_steps, plain.retries, plain.sampling.temperature, plain.sampling.stop) == (
        12, 4, 0.2, ("<|end|>",))
    task, options = Overrides(max_steps=3), Overrides(max_steps=7, retries=0, temperature=0.9)
    chosen = resolve(config, "local/small", task, options)
    assert (chosen.max_steps, chosen.retries, chosen.sampling.temperature) == (3, 0, 0.9)
    assert resolve(config, "local/small", Overrides(), options).max_steps == 7
    assert resolve(config, "local/small", Overrides(stop=("STOP",))).sampling.stop == ("STOP",)


def test_derived_rules_reply_share_compact_prompt_and_the_servers_window(
        tmp_path: Path) -> None:
    config = config_in(tmp_path)
    small = resolve(config, "local/small")
    assert (small.context_window, small.max_tokens, small.compact) == (4096, 1024, True)
    assert not resolve(config, "local/small", Overrides(prompt="full")).compact
    big = resolve(config, "local/big")
    assert (big.max_tokens, big.compact) == (900, False)  # its own limit, a large window
    asked: list[tuple[str, str]] = []

    def served(base_url: str, model: str) -> int | None:
        asked.append((base_url, model))
        return 2048

    other = resolve(config, "local/other", ask_server=True, served=served)
    assert asked == [(config.providers["local"].base_url, "other")]
    assert (other.context_window, other.max_tokens, other.compact) == (2048, 512, True)
    assert resolve(config, "local/other", served=served).context_window is None  # not asked
    resolve(config, "local/small", ask_server=True, served=served)  # configured: not asked
    assert len(asked) == 1
    flagged = resolve(config, "local/other", Overrides(context_window=32000, max_tokens=100),
                      ask_server=True, served=served)
    assert (flagged.context_window, flagged.max_tokens, len(asked)) == (32000, 100, 1)
