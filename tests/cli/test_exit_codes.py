"""A script branches on how a run ended: each ending has its exit status (the runs behind
each one are in test_chat_cmd, test_autonomous, test_budgets and test_small_model_cli)."""

from __future__ import annotations

from fencecall import Outcome


def test_each_way_a_run_ends_has_its_own_exit_status() -> None:
    assert {outcome: outcome.exit_code for outcome in Outcome} == {
        Outcome.DONE: 0,
        Outcome.ERROR: 1,  # the model's server failed
        Outcome.BUDGET: 3,  # 3 to 5: a limit
        Outcome.TIME_LIMIT: 4,
        Outcome.STEP_LIMIT: 5,
        Outcome.GAVE_UP: 6,
        Outcome.INTERRUPTED: 130,
        Outcome.TIMEOUT: 1,  # a batch task's endings: the batch sums them up
        Outcome.STOPPED: 1,
    }
