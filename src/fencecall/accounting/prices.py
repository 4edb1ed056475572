"""What tokens cost: a price from the configuration, else ``genai-prices``' list prices."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from ..message import Usage

MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens (``[models."local/NAME"] price = {input = 0.15, output = 0.6,
    cache_read = 0.075}``); cache reads and writes cost as input where not given."""

    input: Decimal
    output: Decimal
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None

    def cost(self, usage: Usage) -> Decimal:
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_read_tokens * read + usage.cache_write_tokens * write) / MILLION


def list_price(usage: Usage, model: str, provider: str, url: str | None) -> Decimal | None:
    """What ``usage`` costs at ``genai-prices``' list price, or None where it does not know
    the model (a model served on this machine has none)."""
    if (url and is_local(url)) or (model, provider, url) in _UNLISTED:
        return None
    from genai_prices import Usage as Tokens  # imported only when asked: it is large
    from genai_prices import calc_price

    tokens = Tokens(input_tokens=usage.all_input, output_tokens=usage.output_tokens,
                    cache_read_tokens=usage.cache_read_tokens,
                    cache_write_tokens=usage.cache_write_tokens)
    try:
        if url:
            return Decimal(calc_price(tokens, model, provider_api_url=url).total_price)
        return Decimal(calc_price(tokens, model, provider_id=provider).total_price)
    except (LookupError, ValueError):
        _UNLISTED.add((model, provider, url))
        return None


_UNLISTED: set[tuple[str, str, str | None]] = set()
"""Models the price library was asked for and does not list: not looked up again (the agent
asks after every reply)."""


def is_local(url: str) -> bool:
    """A model served on this machine has no list price."""
    return any(host in url for host in ("://127.", "://localhost", "://[::1]", "://0.0.0.0"))


@dataclass(frozen=True, slots=True)
class Pricing:
    """The price of one model: the configured one wins over the list price."""

    model: str
    provider: str
    url: str | None = None
    configured: Price | None = None

    def cost(self, usage: Usage) -> Decimal | None:
        if self.configured is not None:
            return self.configured.cost(usage)
        return list_price(usage, self.model, self.provider, self.url)

    @property
    def key(self) -> str:
        """``provider/model``, as the configuration and ``fencecall stats`` name it."""
        return f"{self.provider}/{self.model}"

    @property
    def known(self) -> bool:
        return self.cost(Usage(1, 1)) is not None


def listed_window(model: str, provider: str, url: str | None = None) -> int | None:
    """The context window ``genai-prices``' model table gives ``model`` (None where it does
    not list it, or for a model served on this machine)."""
    if url and is_local(url):
        return None
    from genai_prices import data_snapshot  # imported only when asked: it is large

    try:
        _, info = data_snapshot.get_snapshot().find_provider_model(
            model, None, None if url else provider, url)
    except (LookupError, ValueError):
        return None
    return info.context_window
