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

from ..execution import Session, resolve
from ..message import Message, Status, system
from ..parsing import StreamParser, ToolCall
from ..providers import ChatRequest, NativeCall, Provider, TextDelta
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
            reply, calls = self._generate()
            self.conversation.append(reply)
            interrupted = False
            for result in self.session.execute_calls(reply, calls):
                self.conversation.append(result)
                self._emit(ToolResult(result))
                interrupted = interrupted or result.status is Status.INTERRUPTED
            if not calls or interrupted:
                return
        self._emit(StepLimit(self.max_steps))
        self.conversation.append(system(
            f"Stopped after {self.max_steps} steps (the step limit).", Status.STEP_LIMIT))

    def _request(self) -> ChatRequest:
        fmt = self.session.format
        tools = tuple(spec.function_schema(fmt) for spec in self.session.toolchain.tools
                      if spec.is_runnable) if fmt.native else ()
        return ChatRequest(self.model, self._system, tuple(self.conversation.messages), tools)

    def _generate(self) -> tuple[Message, list[ToolCall]]:
        """Stream one reply; stop it at its first complete runnable call."""
        parser = StreamParser(self.session.format)
        text: list[str] = []
        calls: list[ToolCall] = []
        native: list[NativeCall] = []
        stream = self.provider.stream(self._request())
        stopped_early = False
        try:
            for event in stream:
                if isinstance(event, TextDelta):
                    text.append(event.text)
                    self._emit(ReplyText(event.text))
                    calls = self._first_runnable(parser.feed(event.text))
                    if calls:
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
            calls = self._first_runnable(parser.finish())
        reply = "".join(text)
        if calls and stopped_early:
            reply = reply[: reply.rfind("\n") + 1].rstrip("\n")  # up to the call's last line
        native_calls = [self._native_call(call) for call in native]
        metadata = {"tool_calls": [{"id": c.call_id, "name": c.name, "arguments":
                                    dict(c.kwargs)} for c in native_calls]} if native else {}
        message = Message("assistant", reply, metadata=metadata)
        self._emit(ReplyDone(message, stopped_early))
        return message, calls + native_calls

    def _first_runnable(self, calls: list[ToolCall]) -> list[ToolCall]:
        toolchain = self.session.toolchain
        return [call for call in calls if resolve(call, toolchain) is not None][:1]

    def _native_call(self, call: NativeCall) -> ToolCall:
        """A native call as a ToolCall named as the toolchain names it; arguments that are not
        a JSON object reach the tool as one odd argument, so the model is told its call was
        malformed."""
        try:
            arguments = json.loads(call.arguments)
        except json.JSONDecodeError:
            arguments = None
        if not isinstance(arguments, dict):
            arguments = {"arguments (not a JSON object)": call.arguments}
        spec = self.session.toolchain.get(call.name)
        return ToolCall(spec.name if spec else call.name, kwargs=arguments,
                        call_id=call.call_id, format=self.session.format.name)
