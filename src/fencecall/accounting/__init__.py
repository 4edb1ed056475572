"""Counting what a run spends and holding it to its limits: each request billed
(:mod:`._billing`), tokens counted where the provider reported none (:mod:`.tokens`), prices
(:mod:`.prices`), and the limits checked before each request (:mod:`._budget`), with a budget
shared by a batch's tasks (:mod:`._ledger`); what a server says it spent, and what it sends,
checked against what is possible (:mod:`.checks`)."""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._billing import Billing, Report, Request, Wire
    from ._budget import Spend
    from ._ledger import Account, Hold, Ledger
    from ._limits import Limits, Refusal
    from .prices import Price, Pricing, list_price
    from .tokens import (
        AnthropicCounter,
        BpeCounter,
        Estimate,
        Exactness,
        ServerCounter,
        TokenCounter,
        counter_for,
        request_tokens,
    )
else:
    __getattr__, __dir__ = lazy_names(__name__, {
        "._billing": ("Billing", "Report", "Request", "Wire"),
        "._budget": ("Spend",),
        "._ledger": ("Account", "Hold", "Ledger"),
        "._limits": ("Limits", "Refusal"),
        ".prices": ("Price", "Pricing", "list_price"),
        ".tokens": ("AnthropicCounter", "BpeCounter", "Estimate", "Exactness", "ServerCounter",
                    "TokenCounter", "counter_for", "request_tokens"),
    })

__all__ = [
    "Account",
    "AnthropicCounter",
    "Billing",
    "BpeCounter",
    "Estimate",
    "Exactness",
    "Hold",
    "Ledger",
    "Limits",
    "Price",
    "Pricing",
    "Refusal",
    "Report",
    "Request",
    "ServerCounter",
    "Spend",
    "TokenCounter",
    "Wire",
    "counter_for",
    "list_price",
    "request_tokens",
]
