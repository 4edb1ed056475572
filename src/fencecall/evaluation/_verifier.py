"""The verifier, as Harbor runs it: after the agent, in the same container, ``tests/`` is
copied to ``/tests`` (a step's own on top of the task's) and ``/tests/test.sh`` runs in the
working folder as the ``[verifier] user`` with its ``env``, its output in
``/logs/verifier/test-stdout.txt``; stale reward files are removed first, so nothing the
agent wrote there counts (on the host: the folder is mounted from there). That takes a
``cp`` and two ``exec``s: the tests, and one read of their output and both reward files
after they ended.

The rewards are ``/logs/verifier/reward.json`` (a table of named numbers) where it exists,
else ``/logs/verifier/reward.txt`` (one number, the ``reward``); an empty, unreadable or
non-finite one is the verifier's error, as in Harbor. The primary reward is ``reward``, or
the only one a table holds.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from ._container import VERIFIER_LOGS, TrialContainer
from ._steps import Step

TESTS = "/tests"
REWARD_JSON = f"{VERIFIER_LOGS}/reward.json"
REWARD_TXT = f"{VERIFIER_LOGS}/reward.txt"
TEST_OUTPUT = f"{VERIFIER_LOGS}/test-stdout.txt"
OUTPUT_TAIL = 2000
"""Characters of the test's output a result keeps (of as many as four times the bytes:
UTF-8's longest character)."""
REWARD_LIMIT = 1 << 18
"""Bytes of a reward file read (of a longer one, its tail, which then cannot be read)."""


class RewardError(Exception):
    """The reward file is missing or cannot be read as Harbor reads it."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the verifier said: the rewards (None where it gave none, and ``error`` says
    why), its exit status (None: it ran past its timeout), its output's tail."""

    rewards: Mapping[str, float] | None
    exit_status: int | None
    output: str = ""
    error: str | None = None
    seconds: float = 0.0
    reward: float | None = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "reward", primary(self.rewards))


def primary(rewards: Mapping[str, float] | None) -> float | None:
    if not rewards:
        return None
    if "reward" in rewards:
        return rewards["reward"]
    return next(iter(rewards.values())) if len(rewards) == 1 else None


def verify(container: TrialContainer, step: Step, env: Mapping[str, str]) -> Verdict:
    """Run the step's tests in ``container`` (blocking) and read the rewards."""
    clock = time.monotonic()
    folders = [folder for folder in step.tests if folder.is_dir()]
    if not any((folder / "test.sh").is_file() for folder in folders):
        return Verdict(None, None, error=" or ".join(f"{folder}/test.sh" for folder in
                                                     step.tests) + " does not exist")
    container.remove_logs(REWARD_JSON, REWARD_TXT)
    container.upload(folders, TESTS, "test.sh")
    ran = container.run(f"({TESTS}/test.sh) > {TEST_OUTPUT} 2>&1",
                        timeout=step.verifier_timeout, env=env, user=step.verifier_user)
    found = container.read({TEST_OUTPUT: 4 * OUTPUT_TAIL, REWARD_JSON: REWARD_LIMIT,
                            REWARD_TXT: REWARD_LIMIT})
    output = (found[TEST_OUTPUT] or "")[-OUTPUT_TAIL:]
    seconds = round(time.monotonic() - clock, 3)
    if ran.timed_out:
        return Verdict(None, None, output, f"the tests ran past their timeout of "
                       f"{step.verifier_timeout:g} s", seconds)
    try:
        rewards = read_rewards(found[REWARD_JSON], found[REWARD_TXT])
    except RewardError as err:
        return Verdict(None, ran.exit_status, output, str(err), seconds)
    return Verdict(rewards, ran.exit_status, output, seconds=seconds)


def read_rewards(json_text: str | None, txt_text: str | None) -> dict[str, float]:
    """The rewards from ``reward.json``'s text, else ``reward.txt``'s (None: no such
    file)."""
    if json_text is not None:
        if not json_text.strip():
            raise RewardError(f"{REWARD_JSON} is empty")
        try:
            found = json.loads(json_text)
        except ValueError as err:
            raise RewardError(f"{REWARD_JSON} is not JSON ({err})") from None
        if not isinstance(found, dict):
            raise RewardError(f"{REWARD_JSON} is not a table of named rewards")
        return {str(key): _number(value, REWARD_JSON) for key, value in found.items()}
    if txt_text is not None:
        if not txt_text.strip():
            raise RewardError(f"{REWARD_TXT} is empty")
        try:
            value = float(txt_text)
        except ValueError:
            raise RewardError(f"{REWARD_TXT} holds no number: {txt_text[:80]!r}") from None
        return {"reward": _number(value, REWARD_TXT)}
    raise RewardError(f"the tests wrote no reward ({REWARD_TXT} or {REWARD_JSON})")


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RewardError(f"{where}: {value!r} is not a number")
    if not math.isfinite(value):
        raise RewardError(f"{where}: {value!r} is not a finite number")
    return float(value)
