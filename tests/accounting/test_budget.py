"""Limits are checked against a request's worst case before it is sent."""

from __future__ import annotations

from decimal import Decimal

from fencecall.accounting import Limits, Price, Pricing, Spend
from fencecall.message import Usage

PRICED = Pricing("m", "local", "http://127.0.0.1:1/v1", Price(Decimal(1000), Decimal(2000)))


def test_a_request_is_refused_when_its_worst_case_does_not_fit_the_tokens_left() -> None:
    spend = Spend(PRICED, Limits(tokens=1_000))
    assert spend.refusal(400, 500) is None
    spend.add(Usage(100, 50))
    refused = spend.refusal(400, 500)
    assert refused is not None and refused.kind == "budget-tokens"
    assert str(refused) == ("Stopped by the token budget: spent 150 tokens of 1,000 tokens; "
                            "the next request could take 900 tokens.")


def test_the_usd_budget_prices_the_worst_case_and_an_unknown_price_is_refused() -> None:
    spend = Spend(PRICED, Limits(usd=2.0))
    assert spend.refusal(1_000, 500) is None  # $1 + $1 fits $2 exactly
    spend.add(Usage(1, 0), estimated=True)
    refused = spend.refusal(1_000, 500)
    assert refused is not None and refused.kind == "budget-usd"
    assert "(some counts estimated, high)" in refused.spent
    unpriced = Spend(Pricing("m", "local", "http://127.0.0.1:1/v1"), Limits(usd=100.0))
    refused = unpriced.refusal(1, 1)
    assert refused is not None and refused.needed == "an unknown amount"


def test_the_time_limit_counts_from_the_start() -> None:
    now = [100.0]
    spend = Spend(PRICED, Limits(time=5), clock=lambda: now[0])
    assert spend.refusal(1, 1) is None and spend.deadline == 105
    now[0] = 105.0
    refused = spend.refusal(1, 1)
    assert refused is not None and refused.kind == "time-limit"
    assert not Limits() and Limits(time=1)


def test_a_reply_may_take_what_the_budgets_leave_after_its_input() -> None:
    assert Spend(PRICED).output_room() is None  # no budget: nothing to cut a reply at
    spend = Spend(PRICED, Limits(usd=2.0, tokens=10_000))
    assert spend.reserve(1_000, 200) is None
    assert spend.output_room() == 500  # the input costs $1, which leaves $1: 500 out
    spend.add(Usage(1_000, 480))
    refused = spend.ran_out()  # the reply was cut there
    assert refused.kind == "budget-usd"
    assert str(refused) == ("Stopped by the USD budget: spent $1.9600 of $2; the next request "
                            "could take more than is left.")
    tokens = Spend(PRICED, Limits(tokens=1_000))
    assert tokens.reserve(400, 100) is None and tokens.output_room() == 600
