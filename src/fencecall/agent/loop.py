"""The agent loop: stream a reply, stop at the first complete call, run it, repeat.

Generation stops as soon as the incremental parser reports a complete runnable call: the
model cannot write past its own call (hallucinating the result) and no tokens are wasted.
Native calls (``tool`` format) are collected until the stream ends. Results are appended as
system messages and the loop continues until a reply has no call or the step limit is hit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from ..execution import Session, ToolUse
from ..message import Message, system
from ..parsing import StreamParser, ToolCall, ToolFormat
from ..providers import ChatRequest, NativeCall, Provider, TextDelta
from ..tools import Toolchain
from .conversation import Conversation
from .prompt import system_prompt


@dataclass(frozen=True, slots=True)
class ReplyText:
    """A piece of the model's reply as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class ReplyDone:
    """The model's reply is complete (``stopped_early`` when cut at a call)."""

    message: Message
    stopped_early: bool


@dataclass(frozen=True, slots=True)
class ToolResult:
    message: Message


@dataclass(frozen=True, slots=True)
class StepLimit:
    steps: int


AgentEvent = ReplyText | ReplyDone | ToolResult | StepLimit
EventSink = Callable[[AgentEvent], None]


class Agent:
    """Runs a conversation against a model with the tools of a session."""

    def __init__(self, provider: Provider, model: str, session: Session,
                 conversation: Conversation, *, max_steps: int = 30,
                 on_event: EventSink | None = None):
        self.provider = provider
        self.model = model
        self.session = session
        self.conversation = conversation
        self.max_steps = max_steps
        self._emit = on_event or (lambda event: None)
        self._system = system_prompt(session)

    def send(self, prompt: str) -> None:
        """Add a user message and work until the model answers without a call."""
        self.conversation.append(Message("user", prompt))
        self.resume()

    def resume(self) -> None:
        """Continue from the current state (after a resume, or after tool results)."""
        for _ in range(self.max_steps):
            reply, uses = self._generate()
            self.conversation.append(reply)
            if not uses:
                return
            for use in uses:
                if self._run(use):
                    return
        self._emit(StepLimit(self.max_steps))
        self.conversation.append(system(
            f"Stopped after {self.max_steps} steps (the step limit).", status="step-limit"))

    def _run(self, use: ToolUse) -> bool:
        """Execute one call; True if it was interrupted (the loop then stops)."""
        interrupted = False
        with self.session.active():
            for result in use.execute(self.session):
                self.conversation.append(result)
                self._emit(ToolResult(result))
                interrupted = interrupted or result.metadata.get("status") == "interrupted"
        return interrupted

    def _request(self) -> ChatRequest:
        native = self.session.format is ToolFormat.TOOL
        tools = tuple(s for s in self.session.toolchain.tools if s.is_runnable) if native else ()
        return ChatRequest(self.model, self._system, tuple(self.conversation.messages), tools)

    def _generate(self) -> tuple[Message, list[ToolUse]]:
        parser = StreamParser(self.session.format)
        toolchain = self.session.toolchain
        text: list[str] = []
        uses: list[ToolUse] = []
        native: list[NativeCall] = []
        stream = self.provider.stream(self._request())
        stopped_early = False
        try:
            for event in stream:
                if isinstance(event, TextDelta):
                    text.append(event.text)
                    self._emit(ReplyText(event.text))
                    uses = self._runnable(parser.feed(event.text))
                    if uses:
                        stopped_early = True
                        break
                elif isinstance(event, NativeCall):
                    native.append(event)
        except KeyboardInterrupt:
            stopped_early = True
            text.append("\n[interrupted by the user]")
        finally:
            stream.close()
        if not stopped_early:
            uses = self._runnable(parser.finish())
        reply = "".join(text)
        if uses and stopped_early:
            reply = reply[: reply.rfind("\n") + 1].rstrip("\n")  # up to the call's last line
        calls = [_native_use(call, toolchain) for call in native]
        metadata = {"tool_calls": [{"id": u.call_id, "name": u.tool, "arguments":
                                    dict(u.kwargs)} for u in calls]} if calls else {}
        message = Message("assistant", reply, metadata=metadata)
        self._emit(ReplyDone(message, stopped_early))
        return message, uses + calls

    def _runnable(self, calls: list[ToolCall]) -> list[ToolUse]:
        toolchain = self.session.toolchain
        uses = []
        for call in calls:
            use = ToolUse.from_call(call, toolchain)
            spec = toolchain.get(use.tool) if use else None
            if use is not None and (spec is None or spec.is_runnable):
                uses.append(use)
        return uses[:1]


def _native_use(call: NativeCall, toolchain: Toolchain) -> ToolUse:
    """A native call as a ToolUse; arguments that are not a JSON object reach the tool as one
    odd argument, so the model is told its call was malformed."""
    try:
        arguments = json.loads(call.arguments)
    except json.JSONDecodeError:
        arguments = None
    if not isinstance(arguments, dict):
        arguments = {"arguments (not a JSON object)": call.arguments}
    spec = toolchain.get(call.name)
    name = spec.name if spec else call.name
    return ToolUse(name, ToolCall(name, kwargs=arguments, call_id=call.call_id,
                                  format=ToolFormat.TOOL))
