"""A batch's ledger: requests reserve their worst case before they are sent and settle
after, so runs going at once never spend past the cap together."""

from __future__ import annotations

import random
import threading
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from fencecall.accounting import Hold, Ledger, Limits, Price, Pricing, Refusal, Spend
from fencecall.message import Usage

PRICED = Pricing("m", "local", "http://127.0.0.1:1/v1", Price(Decimal(1000), Decimal(1000)))
"""A dollar per thousand tokens, in and out."""


def test_a_reservation_waits_while_others_hold_the_rest_and_is_refused_when_it_never_fits(
        ) -> None:
    ledger = Ledger(Limits(tokens=1_000))
    first = ledger.reserve(None, 600)
    assert isinstance(first, Hold)
    assert ledger.reserve(None, 600) is None  # fits once the first settles: wait
    ledger.settle(first, None, 300)
    second = ledger.reserve(None, 600)
    assert isinstance(second, Hold)
    ledger.settle(second, None, 600)
    assert ledger.spent() == (Decimal(0), 900)
    refused = ledger.reserve(None, 200)  # 900 + 200 > 1000, with nothing in flight
    assert isinstance(refused, Refusal) and refused.kind == "budget-tokens"
    assert refused.scope == "batch"
    assert str(refused).startswith("Stopped by the batch's token budget: spent 900 tokens")
    # closed for good: a request that would fit is refused too, and schedulers are told
    assert ledger.reserve(None, 1) == refused and ledger.closed() == refused


def test_a_usd_cap_refuses_an_unknown_price_and_counts_what_the_results_spent_before() -> None:
    ledger = Ledger(Limits(usd=1.0), spent_usd=Decimal("0.75"), spent_tokens=10)
    assert ledger.spent() == (Decimal("0.75"), 10)
    assert isinstance(ledger.reserve(Decimal("0.25"), 5), Hold)
    ledger = Ledger(Limits(usd=1.0))
    refused = ledger.reserve(None, 5)
    assert isinstance(refused, Refusal) and refused.needed == "an unknown amount"


def test_settling_an_unknown_cost_keeps_the_held_worst_case_and_twice_counts_once() -> None:
    ledger = Ledger(Limits(usd=1.0))
    hold = ledger.reserve(Decimal("0.4"), 10)
    assert isinstance(hold, Hold)
    ledger.settle(hold, None, 10)
    ledger.settle(hold, Decimal("0.1"), 10)
    assert ledger.spent() == (Decimal("0.4"), 10)


def test_the_batch_time_limit_closes_the_ledger() -> None:
    now = [1000.0]
    ledger = Ledger(Limits(time=5), clock=lambda: now[0])
    assert ledger.closed() is None and ledger.time_left() == 5
    now[0] = 1005.0
    closed = ledger.closed()
    assert closed is not None and closed.kind == "time-limit"
    assert str(closed) == "Stopped by the batch's time limit of 5 s."
    assert isinstance(ledger.reserve(Decimal(0), 1), Refusal)


def test_a_spend_holds_its_request_in_the_shared_account_and_settles_what_it_cost() -> None:
    ledger = Ledger(Limits(usd=2.0))
    spend = Spend(PRICED, account=ledger)
    assert spend.limited and spend.reserve(1_000, 500) is None  # $1.50 held
    other = Spend(PRICED, account=ledger, wait=lambda s: ledger.settle(*_settle_first(spend)))
    # the other run waits until the first request settles at $0.30, then its $1.50 fits
    assert other.reserve(1_000, 500) is None
    assert ledger.spent() == (Decimal("0.3"), 300)
    other.release()  # refused by the provider unbilled: nothing spent, the hold given back
    assert ledger.spent() == (Decimal("0.3"), 300)
    assert isinstance(ledger.reserve(Decimal("1.7"), 1), Hold)


def _settle_first(spend: Spend) -> tuple[Hold, Decimal, int]:
    hold = spend._hold
    assert hold is not None
    spend._hold = None
    return hold, Decimal("0.3"), 300


def test_a_request_asked_for_again_holds_its_worst_case_once() -> None:
    ledger = Ledger(Limits(tokens=1_000))
    spend = Spend(PRICED, account=ledger)
    assert spend.reserve(100, 500) is None
    assert spend.reserve(100, 500) is None  # the retry: the first hold was given back
    spend.add(Usage(100, 20))
    assert ledger.spent() == (Decimal("0.12"), 120)


def test_the_batch_time_limit_bounds_the_run_time_limit() -> None:
    ledger = Ledger(Limits(time=3))
    assert Spend(PRICED, Limits(time=60), account=ledger).limits.time is not None
    assert Spend(PRICED, Limits(time=60), account=ledger).limits.time <= 3  # type: ignore[operator]
    assert Spend(PRICED, Limits(time=1), account=ledger).limits.time == 1


@settings(max_examples=30, deadline=None)
@given(cap=st.integers(1_000, 20_000), seed=st.integers(0, 2**32 - 1))
def test_runs_going_at_once_never_spend_past_the_cap(cap: int, seed: int) -> None:
    """Threads reserve random worst cases and settle at most that; the total settled never
    passes the cap, and once a reservation is refused none is granted."""
    ledger = Ledger(Limits(tokens=cap))
    refused_at: list[int] = []
    granted_after_refusal: list[Hold] = []
    lock = threading.Lock()

    def run(index: int) -> None:
        rng = random.Random(seed + index)
        for _ in range(40):
            worst = rng.randint(1, cap // 4 + 1)
            while (answer := ledger.reserve(None, worst)) is None:
                threading.Event().wait(0.0005)
            if isinstance(answer, Refusal):
                with lock:
                    refused_at.append(index)
                return
            with lock:
                if refused_at:
                    granted_after_refusal.append(answer)
            ledger.settle(answer, None, rng.randint(0, worst))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert ledger.spent()[1] <= cap
    assert not granted_after_refusal
