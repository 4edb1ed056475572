"""ToolUse: a parsed call resolved to a tool, and the pipeline that runs it.

``execute`` runs: argument binding → pre-execute hooks (which may add messages or block) →
confirmation → the tool itself (a single message or a generator of them, timed) →
post-execute hooks. Every failure on the way, an exception inside a tool included, becomes a
``system`` message for the model; the agent loop never dies of a tool.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..message import Message, system
from ..parsing import ToolCall, ToolFormat, parse_calls, render
from ..tools.arguments import ArgumentError
from .confirm import ConfirmRequest
from .hooks import (
    MESSAGE_POST_PROCESS,
    MESSAGE_PRE_PROCESS,
    TOOL_POST_EXECUTE,
    TOOL_PRE_EXECUTE,
    MessagePostProcess,
    MessagePreProcess,
    ToolPostExecute,
    ToolPreExecute,
)

if TYPE_CHECKING:
    from ..tools.registry import Toolchain
    from ..tools.spec import ExecuteResult, ToolSpec
    from .session import Session

_current: ContextVar[ToolInvocation | None] = ContextVar("fencecall_current_call", default=None)


def current_invocation() -> ToolInvocation | None:
    """The call being executed in this context (thread or task), if any."""
    return _current.get()


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A :class:`ToolCall` resolved to the tool ``tool`` (``py`` blocks resolve to ipython)."""

    tool: str
    call: ToolCall

    @property
    def args(self) -> tuple[str, ...]:
        return self.call.args

    @property
    def argline(self) -> str:
        return self.call.argline

    @property
    def content(self) -> str:
        return self.call.content

    @property
    def kwargs(self) -> Mapping[str, Any]:
        return self.call.kwargs

    @property
    def call_id(self) -> str | None:
        return self.call.call_id

    @property
    def start(self) -> int:
        return self.call.start

    @property
    def format(self) -> ToolFormat:
        return self.call.format

    @classmethod
    def from_call(cls, call: ToolCall, toolchain: Toolchain) -> ToolUse | None:
        """Resolve a call. A markdown block with no matching tool is plain code (None); a
        named call (XML, tool format) to an unknown tool stays, so the model hears of it."""
        if call.format is ToolFormat.MARKDOWN:
            spec = toolchain.for_langtag(call.name)
            return None if spec is None else cls(spec.name, call)
        spec = toolchain.get(call.name)
        return cls(spec.name if spec else call.name, call)

    @classmethod
    def iter_from_content(cls, text: str, toolchain: Toolchain,
                          fmt: ToolFormat | str = ToolFormat.MARKDOWN) -> Iterator[ToolUse]:
        """The tool uses in ``text``, in order of position."""
        for call in parse_calls(text, fmt):
            use = cls.from_call(call, toolchain)
            if use is not None:
                yield use

    def to_output(self, fmt: ToolFormat | str, toolchain: Toolchain) -> str:
        """This call written in ``fmt`` (e.g. to show a tool-format call as markdown)."""
        spec = toolchain.get(self.tool)
        if spec is None:
            return render(self.call, ToolFormat(fmt))
        kwargs = spec.bind(self.argline, self.content, self.kwargs)
        return render_call(spec, kwargs, ToolFormat(fmt), self.call_id)

    def execute(self, session: Session) -> Iterator[Message]:
        """Run the call; yield its result messages, tagged with the call id."""
        for message in self._execute(session):
            yield message.tagged(self.call_id, self.tool)

    def _execute(self, session: Session) -> Iterator[Message]:
        spec = session.toolchain.get(self.tool)
        if spec is None:
            known = ", ".join(session.toolchain.names()) or "none"
            yield system(f"Unknown tool {self.tool!r}. Available tools: {known}.",
                         status="error")
            return
        if not spec.is_runnable:
            return
        try:
            kwargs = spec.bind(self.argline, self.content, self.kwargs)
        except ArgumentError as err:
            yield system(f"Invalid call: {err}", status="error")
            return
        invocation = ToolInvocation(self, spec, kwargs, session)
        token = _current.set(invocation)
        results: list[Message] = []
        started = time.monotonic()
        error: BaseException | None = None
        try:
            for message in invocation.run():
                results.append(message)
                yield message
        except KeyboardInterrupt as err:
            error = err
            message = system(f"Interrupted: the {self.tool} call was stopped by the user "
                             "(Ctrl-C).", status="interrupted")
            results.append(message)
            yield message
        except Exception as err:
            error = err
            message = system(f"Error while running {self.tool}: {type(err).__name__}: {err}",
                             status="error", exception=type(err).__name__)
            results.append(message)
            yield message
        finally:
            # A generator closed from another context cannot reset; the value dies with it.
            with contextlib.suppress(ValueError):
                _current.reset(token)
        post = session.hooks.run(TOOL_POST_EXECUTE, ToolPostExecute(
            invocation, tuple(results), time.monotonic() - started, error))
        yield from post.messages


@dataclass(frozen=True, slots=True)
class ToolInvocation:
    """A call being executed: the use, its tool, its typed arguments and the session."""

    use: ToolUse
    spec: ToolSpec
    kwargs: Mapping[str, Any]
    session: Session

    @property
    def content(self) -> str:
        return self.use.content

    @property
    def argline(self) -> str:
        return self.use.argline

    @property
    def args(self) -> tuple[str, ...]:
        return self.use.args

    def confirm(self, question: str, preview: str | None = None) -> bool:
        """Ask the session's confirm function (tools call this for extra confirmations)."""
        return self.session.confirm(ConfirmRequest(self, question, preview))

    def run(self) -> Iterator[Message]:
        pre = self.session.hooks.run(TOOL_PRE_EXECUTE, ToolPreExecute(self))
        yield from pre.messages
        if pre.blocked is not None:
            yield system(f"The {self.spec.name} call was blocked: {pre.blocked.reason}",
                         status="blocked")
            return
        if self._needs_confirmation():
            preview = self.spec.preview(self) if self.spec.preview else None
            if not self.confirm(f"Run {self.spec.name}?", preview):
                yield system(f"The {self.spec.name} call was not confirmed, so it did not run.",
                             status="declined")
                return
        assert self.spec.execute is not None
        yield from _messages(self.spec.execute(self))

    def _needs_confirmation(self) -> bool:
        rule = self.spec.confirm
        return bool(rule(self)) if callable(rule) else rule


def _messages(result: ExecuteResult) -> Iterator[Message]:
    if result is None:
        return
    items: Iterable[Message | str] = [result] if isinstance(result, Message | str) else result
    for item in items:
        yield item if isinstance(item, Message) else system(item)


def render_call(spec: ToolSpec, kwargs: Mapping[str, Any], fmt: ToolFormat,
                call_id: str | None = None) -> str:
    """Write a call of ``spec`` with named arguments ``kwargs`` in ``fmt``."""
    if fmt is ToolFormat.TOOL:
        return render(ToolCall(spec.name, kwargs=kwargs, call_id=call_id, format=fmt), fmt)
    argline, content, rest = spec.unbind(kwargs)
    name = spec.block_types[0] if fmt is ToolFormat.MARKDOWN else spec.name
    return render(ToolCall(name, argline, content, rest, call_id, format=fmt), fmt)


def execute_msg(message: Message, session: Session) -> Iterator[Message]:
    """Run every runnable call in ``message`` in order; stop early if one is interrupted."""
    pre = session.hooks.run(MESSAGE_PRE_PROCESS, MessagePreProcess(session, message))
    yield from pre.messages
    if pre.blocked is not None:
        yield system(f"The message's tool calls were not run: {pre.blocked.reason}")
        return
    results: list[Message] = []
    for use in ToolUse.iter_from_content(message.content, session.toolchain, session.format):
        spec = session.toolchain.get(use.tool)
        if spec is not None and not spec.is_runnable:
            continue
        interrupted = False
        for result in use.execute(session):
            results.append(result)
            interrupted = interrupted or result.metadata.get("status") == "interrupted"
            yield result
        if interrupted:
            break
    post = session.hooks.run(MESSAGE_POST_PROCESS,
                             MessagePostProcess(session, message, tuple(results)))
    yield from post.messages
