"""Billing a run's requests: each one counted into its :class:`~._budget.Spend`, and the
input of the next one known before it is sent.

A provider that reports usage is believed for the record, but a limit is charged the larger
of the report and fencecall's own count (a report is no proof). Where no usage comes, the
:class:`~.tokens.TokenCounter` counts the request and the reply. What a chat template adds
beyond that count (a default system prompt, say) is learned from the last reported request,
and a request that extends the last reported one is known from that report plus a count of
what was added: the count never drifts far from the provider's.

The billing reads a request as the provider layer builds it (a system prompt, messages,
tool schemas) through :class:`Request`, and is given ``wire``, the text of each message as
the chat API shows it: accounting sits below the providers and imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..images import messages_image_tokens
from ..message import Message, Usage
from ..telemetry import ChatRun
from ._budget import Spend
from ._limits import Refusal
from .checks import larger
from .tokens import MESSAGE_OVERHEAD, Exactness, TokenCounter, request_tokens

Wire = Callable[[Sequence[Message]], list[str]]
"""The text of each message as the chat API shows it: what the model's server counts."""


class Request(Protocol):
    """What billing reads of a chat request."""

    @property
    def system(self) -> str: ...

    @property
    def messages(self) -> tuple[Message, ...]: ...

    @property
    def tools(self) -> tuple[dict[str, Any], ...]: ...


Report = tuple[Request, Usage]
"""A request and the usage its provider reported for it."""


class Billing:
    """Counts each request of one run into ``spend``, with ``counter`` where the provider
    reported nothing. ``logged`` is the last report of a resumed conversation, from which
    the template's share is learned until a report of this run replaces it."""

    def __init__(self, spend: Spend, counter: TokenCounter, wire: Wire,
                 logged: Report | None = None):
        self.spend = spend
        self.counter = counter
        self._wire = wire
        self._reported = logged
        self._template: int | None = None
        """What the chat template adds beyond the counter's count, once counted."""
        self._live = False
        """Whether ``_reported`` is a request of this run: the log does not keep the system
        prompt and tools a logged request was sent with (a resumed run may have others), so
        a logged report is no base to count a longer request from."""
        self._carried = Usage()
        """What requests that left no reply cost: counted into the next reply's record."""

    @property
    def counts_slowly(self) -> bool:
        """Whether counting tokens may wait (on a tokenizer server, or a large vocabulary's
        work): the event loop then leaves it to a thread. A counter that estimates (one
        whose server gave no count, too) counts at once."""
        return self.counter.exactness != "estimate"

    @property
    def reserving_waits(self) -> bool:
        """Whether reserving a request may wait: on a shared account, or a slow count."""
        return self.spend.account is not None or (self.spend.limited and self.counts_slowly)

    def charging_waits(self, reported: Usage | None) -> bool:
        """Whether charging a reply counts tokens (no usage came, or a limit charges the
        larger of it and the count) with a counter that may wait."""
        return (reported is None or self.spend.limited) and self.counts_slowly

    def input_tokens(self, request: Request) -> int:
        """The input tokens of ``request``: the counter's count plus what the template adds."""
        if self._template is None:
            self._template = 0 if self._reported is None else max(
                0, self._reported[1].all_input - self._counted(self._reported[0]))
        return self._template + self._counted(request)

    def next_input(self, request: Request) -> int:
        """The input tokens of ``request``: the provider's count of the last request it
        reported in this run, when that request is a prefix of this one, plus a count of
        what was added since; else :meth:`input_tokens`."""
        if self._reported is not None and self._live:
            last, usage = self._reported
            known = len(last.messages)
            if last.system == request.system and last.tools == request.tools \
                    and request.messages[:known] == last.messages:
                added = self._wire(request.messages)[known:]
                added_tokens: int = sum(self.counter.count(text) + MESSAGE_OVERHEAD
                                        for text in added)
                return (usage.all_input + added_tokens
                        + messages_image_tokens(request.messages[known:]))
        return self.input_tokens(request)

    def refusal(self, request: Request, max_output: int) -> Refusal | None:
        """Why ``request`` must not be sent, or None once its worst case is reserved (its
        input is counted only under a limit)."""
        if not self.spend.limited:
            return None
        return self.spend.reserve(self.input_tokens(request), max_output)

    def charge(self, request: Request, reported: Usage | None, output: str, run: ChatRun,
               **ending: str | None) -> tuple[Usage, Exactness | None]:
        """Count one request into the spend and end its telemetry: the usage the provider
        reported, else the request's input and the ``output`` received as the counter counts
        them (and how they were counted). A limit is charged the larger of a report and that
        count: a report is no proof."""
        def own() -> Usage:
            return Usage(self.input_tokens(request), self.counter.count(output))

        if reported is None:
            usage = charged = own()
            counted: Exactness | None = self.counter.exactness
        else:
            usage, counted = reported, None
            charged = larger(reported, own()) if self.spend.limited else reported
            self._reported, self._template, self._live = (request, reported), None, True
        cost = self.spend.add(charged, estimated=charged != reported
                              and self.counter.exactness == "estimate")
        run.end(usage=usage.as_dict(), counted=counted,
                cost_usd=None if cost is None else float(cost), **ending)
        return usage, counted

    def charge_lost(self, request: Request, reported: Usage | None, output: str,
                    run: ChatRun, **ending: str | None) -> None:
        """:meth:`charge` a request that leaves no reply (its stream broke, it was stopped):
        what it cost goes into the next reply's record."""
        lost, _ = self.charge(request, reported, output, run, **ending)
        self.carry(lost)

    def carry(self, usage: Usage) -> None:
        """Keep ``usage`` of a request with no reply of its own for the next reply's record."""
        self._carried += usage

    def with_carried(self, usage: Usage,
                     counted: Exactness | None) -> tuple[Usage, Exactness | None]:
        """A reply's ``usage`` (and how it was counted) with what the requests before it
        that left no reply cost, counted by fencecall; the carried usage is then settled."""
        if self._carried == Usage():
            return usage, counted
        usage, self._carried = usage + self._carried, Usage()
        return usage, counted or self.counter.exactness

    def refused(self, run: ChatRun, error: BaseException) -> None:
        """A request the provider refused (an HTTP error) is not billed: its reservation is
        given back."""
        self.spend.release()
        run.end(error_type=type(error).__name__)

    def _counted(self, request: Request) -> int:
        return request_tokens(self.counter, request.system, self._wire(request.messages),
                              request.tools) + messages_image_tokens(request.messages)
