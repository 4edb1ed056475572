"""Counting what a run spends and holding it to its limits: tokens counted where the
provider reported none (:mod:`.tokens`), prices (:mod:`.prices`), and the limits checked
before each request (:mod:`.budget`)."""

from .budget import Limits, Refusal, Spend
from .prices import Price, Pricing, list_price
from .tokens import (
    BpeCounter,
    Estimate,
    Exactness,
    ServerCounter,
    TokenCounter,
    counter_for,
    request_tokens,
)

__all__ = [
    "BpeCounter",
    "Estimate",
    "Exactness",
    "Limits",
    "Price",
    "Pricing",
    "Refusal",
    "ServerCounter",
    "Spend",
    "TokenCounter",
    "counter_for",
    "list_price",
    "request_tokens",
]
