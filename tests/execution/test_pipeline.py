"""The execution pipeline: hooks, confirmation, errors, interrupts and call ids."""

from __future__ import annotations

import time
from pathlib import Path

from fencecall.execution import Session, auto_yes, resolve
from fencecall.message import CannotRun, Message, Status
from fencecall.parsing import parse_calls
from fencecall.tools import (
    Allow,
    Block,
    Command,
    ConfirmRequest,
    HookRegistry,
    ResourceKey,
    Toolchain,
    ToolError,
    ToolInvocation,
    ToolSpec,
    render_call,
)
from fencecall.tools.hook_points import (
    MESSAGE_POST_PROCESS,
    MESSAGE_PRE_PROCESS,
    SESSION_END,
    SESSION_START,
    TOOL_POST_EXECUTE,
    TOOL_PRE_EXECUTE,
    ToolPostExecute,
    ToolPreExecute,
)

from ..sample_tools import CATALOGUE
from ..support import F


def run(session: Session, text: str, fmt: str = "markdown") -> list[str]:
    return [m.content for m in session.execute(text, fmt)]


def test_markdown_block_runs_with_args_and_generator_results(toolchain: Toolchain,
                                                             tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    assert run(session, f"{F}echo loud\nhello\n{F}\n") == ["echo: hello", "args: ('loud',)"]


def test_alias_block_type_and_plain_code_blocks(toolchain: Toolchain, tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    assert run(session, f"{F}say\nhi\n{F}\n{F}python\nnot a tool\n{F}\n")[0] == "echo: hi"
    calls = parse_calls(f"{F}say\nhi\n{F}\n{F}json\n{{}}\n{F}")
    [use] = [use for call in calls if (use := resolve(call, toolchain)) is not None]
    assert (use.tool, use.call.name) == ("echo", "say")


def test_function_tool_in_every_format(toolchain: Toolchain, tmp_path: Path) -> None:
    texts = {
        "markdown": f"{F}add 2 3 loud\n{F}\n",
        "xml": '<tool-use><add args="2 3" mode="loud"></add></tool-use>',
        "tool": '@add(c9): {"a": 2, "b": 3, "mode": "loud"}',
    }
    for fmt, text in texts.items():
        session = Session(toolchain, workspace=tmp_path)
        [result] = list(session.execute(text, fmt))
        assert result.content == "5!"
        assert result.role == "system"
        assert result.call_id == ("c9" if fmt == "tool" else None)


def test_bad_argument_reaches_the_model_as_a_message(toolchain: Toolchain,
                                                     tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    assert run(session, f"{F}add two\n{F}\n") == [
        "Invalid call: add: argument 'a' must be an integer, got 'two'"]


def test_unknown_named_tool_is_reported(toolchain: Toolchain, tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    [message] = run(session, '@nope(x): {"a": 1}', "tool")
    assert message.startswith("Unknown tool 'nope'. Available tools: ")


def test_exception_in_tool_becomes_error_message(toolchain: Toolchain, tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    assert run(session, f"{F}boom\n{F}\n{F}add 1\n{F}\n") == [
        "Error while running boom: RuntimeError: disk on fire", "2"]


def test_ctrl_c_interrupts_the_call_and_stops_the_rest(toolchain: Toolchain,
                                                       tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    results = list(session.execute(f"{F}interrupt\n{F}\n{F}add 1\n{F}\n{F}add 2\n{F}\n"))
    assert [m.content for m in results] == [
        "Interrupted: the interrupt call was stopped by the user (Ctrl-C).",
        "Not run: an earlier call was interrupted by the user."]
    assert [m.status for m in results] == [Status.INTERRUPTED, Status.INTERRUPTED]


def test_every_call_id_is_answered_after_an_interrupt(toolchain: Toolchain,
                                                      tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    text = '@interrupt(c1): {}\n@add(c2): {"a": 1}\n@add(c3): {"a": 2}\n'
    results = list(session.execute(text, "tool"))
    assert [(m.call_id, m.tool, m.status) for m in results] == [
        ("c1", "interrupt", Status.INTERRUPTED), ("c2", "add", Status.INTERRUPTED),
        ("c3", "add", Status.INTERRUPTED)]


def test_a_blocked_message_answers_each_call(toolchain: Toolchain, tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    session.hooks.add(MESSAGE_PRE_PROCESS, lambda d: Block("read-only hour"))
    results = list(session.execute('@add(c1): {"a": 1}\n@add(c2): {"a": 2}\n', "tool"))
    assert [(m.call_id, m.status) for m in results] == [("c1", Status.BLOCKED),
                                                         ("c2", Status.BLOCKED)]
    assert results[0].content == "The message's tool calls were not run: read-only hour"


def test_tool_error_becomes_the_result(tmp_path: Path) -> None:
    def fail(inv: ToolInvocation) -> str:
        raise ToolError("no such branch 'main'")

    session = Session(Toolchain((ToolSpec("git", "x", execute=fail),)), workspace=tmp_path)
    [result] = list(session.execute(f"{F}git\n{F}\n"))
    assert (result.content, result.status) == ("no such branch 'main'", Status.ERROR)


def test_pre_hook_can_block_and_add_messages(toolchain: Toolchain, tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    seen: list[str] = []

    def guard(data: ToolPreExecute) -> list[str | Block]:
        seen.append(data.invocation.spec.name)
        if data.invocation.kwargs.get("text") == "rm -rf /":
            return ["guard looked", Block("destructive command")]
        return []

    session.hooks.add(TOOL_PRE_EXECUTE, guard)
    assert run(session, f"{F}echo\nrm -rf /\n{F}\n") == [
        "guard looked", "The echo call was blocked: destructive command"]
    assert run(session, f"{F}echo\nok\n{F}\n")[0] == "echo: ok"
    assert seen == ["echo", "echo"]


def test_failing_guard_blocks(toolchain: Toolchain, tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)

    def broken(data: ToolPreExecute) -> None:
        raise ValueError("oops")

    session.hooks.add(TOOL_PRE_EXECUTE, broken)
    messages = run(session, f"{F}echo\nhi\n{F}\n")
    assert messages[0] == "Hook 'broken' (tool.pre_execute) failed: ValueError: oops"
    assert "blocked" in messages[1]


def test_hook_priorities_and_post_hook_results(toolchain: Toolchain, tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    order: list[str] = []
    session.hooks.add(TOOL_PRE_EXECUTE, lambda d: order.append("low"), priority=-1)
    session.hooks.add(TOOL_PRE_EXECUTE, lambda d: order.append("high"), priority=10)
    session.hooks.add(TOOL_PRE_EXECUTE, lambda d: order.append("mid"))
    posts: list[ToolPostExecute] = []

    def record(data: ToolPostExecute) -> str:
        posts.append(data)
        return "post note"

    session.hooks.add(TOOL_POST_EXECUTE, record)
    assert run(session, f"{F}add 1 1\n{F}\n") == ["2", "post note"]
    assert order == ["high", "mid", "low"]
    [post] = posts
    assert [m.content for m in post.results] == ["2"]
    assert post.duration >= 0 and post.error is None


def test_unregistered_hook_no_longer_runs(toolchain: Toolchain, tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    hook = session.hooks.add(TOOL_PRE_EXECUTE, lambda d: Block("always"))
    assert "blocked" in run(session, f"{F}add 1\n{F}\n")[0]
    session.hooks.unregister(hook)
    assert run(session, f"{F}add 1\n{F}\n") == ["2"]


def test_post_hook_sees_the_error(toolchain: Toolchain, tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    errors: list[BaseException | None] = []
    session.hooks.add(TOOL_POST_EXECUTE, lambda d: errors.append(d.error))
    run(session, f"{F}boom\n{F}\n")
    assert isinstance(errors[0], RuntimeError)


def test_confirmation_declines_by_default_and_shows_preview(toolchain: Toolchain,
                                                           tmp_path: Path) -> None:
    text = f"{F}write notes.txt\nhello\n{F}\n"
    assert run(Session(toolchain, workspace=tmp_path), text) == [
        "The write call was not confirmed, so it did not run."]
    asked: list[ConfirmRequest] = []

    def confirm(request: ConfirmRequest) -> bool:
        asked.append(request)
        return True

    assert run(Session(toolchain, workspace=tmp_path, confirm=confirm), text) == [
        "wrote notes.txt"]
    assert asked[0].preview == "+ hello"
    assert (asked[0].tool, asked[0].call.argline, asked[0].call.content) == (
        "write", "notes.txt", "hello")
    assert asked[0].kwargs == {"path": "notes.txt", "content": "hello"}
    assert run(Session(toolchain, workspace=tmp_path, confirm=auto_yes), text) == [
        "wrote notes.txt"]


def test_the_time_a_confirmation_waits_is_not_the_tools(tmp_path: Path) -> None:
    def slow(invocation: ToolInvocation) -> str:
        time.sleep(0.2)
        return "ran"

    def person(request: ConfirmRequest) -> bool:
        time.sleep(1.0)  # reading the preview, then answering
        return True

    spec = ToolSpec("slow", "x", execute=slow, parameters=(), confirm=True)
    durations: list[float] = []
    session = Session(Toolchain((spec,)), workspace=tmp_path, confirm=person)
    session.hooks.add(TOOL_POST_EXECUTE, lambda d: durations.append(d.duration))
    [message] = session.execute(f"{F}slow\n{F}\n", "markdown")
    assert message.call is not None and 0.2 <= message.call.duration_s < 0.9
    assert 0.2 <= durations[0] < 0.9


def test_a_pre_hook_may_allow_a_call_without_asking_but_a_block_wins(
        toolchain: Toolchain, tmp_path: Path) -> None:
    text = f"{F}write notes.txt\nhello\n{F}\n"
    session = Session(toolchain, workspace=tmp_path)  # nobody to ask: declined
    session.hooks.add(TOOL_PRE_EXECUTE, lambda d: Allow("rule write(notes.txt)"))
    assert run(session, text) == ["wrote notes.txt"]
    session.hooks.add(TOOL_PRE_EXECUTE, lambda d: Block("rule deny write(*)"), priority=-1)
    assert run(session, text) == ["The write call was blocked: rule deny write(*)"]


def test_per_call_confirmation_rule(tmp_path: Path) -> None:
    careful = ToolSpec("careful", "x", execute=lambda inv: "ran", parameters=(),
                       confirm=lambda inv: inv.call.args != ("safe",))
    session = Session(Toolchain((careful,)), workspace=tmp_path)
    assert run(session, f"{F}careful safe\n{F}\n") == ["ran"]
    assert "not confirmed" in run(session, f"{F}careful risky\n{F}\n")[0]


def test_message_hooks_and_session_lifecycle(toolchain: Toolchain, tmp_path: Path) -> None:
    events: list[str] = []

    class Resource:
        def close(self) -> None:
            events.append("closed")

    key: ResourceKey[Resource] = ResourceKey("r")
    spec = ToolSpec("res", "x", execute=lambda inv: str(id(inv.context.resource(key, Resource))),
                    hooks=(), commands=(Command("hello", lambda s, arg: f"hi {arg}"),))
    chain = Toolchain((spec,))
    hooks = HookRegistry()
    hooks.add(SESSION_START, lambda d: events.append("start"))
    hooks.add(SESSION_END, lambda d: events.append("end"))
    hooks.add(MESSAGE_POST_PROCESS, lambda d: events.append(f"results={len(d.results)}"))
    with Session(chain, workspace=tmp_path, hooks=hooks) as session:
        first = run(session, f"{F}res\n{F}\n{F}res\n{F}\n")
        assert first[0] == first[1]  # one resource per session
        assert session.run_command("/hello world") == "hi world"
        assert session.run_command("/nope") is None
    assert events == ["start", "results=2", "end", "closed"]


def test_render_call_converts_between_formats(toolchain: Toolchain) -> None:
    [call] = parse_calls('@write(c1): {"path": "a.txt", "content": "x"}', "tool")
    spec = toolchain.get(call.name)
    assert spec is not None
    kwargs = spec.bind(call.argline, call.content, call.kwargs)
    assert render_call(spec, kwargs, "markdown") == f"{F}write a.txt\nx\n{F}"
    assert render_call(spec, kwargs, "xml") == (
        '<tool-use>\n<write args="a.txt">\nx\n</write>\n</tool-use>')
    [back] = parse_calls(render_call(spec, kwargs, "markdown"))
    assert render_call(spec, spec.bind(back.argline, back.content, back.kwargs), "tool") == (
        '@write(): {"path": "a.txt", "content": "x"}')


def test_informational_tools_are_not_run(toolchain: Toolchain, tmp_path: Path) -> None:
    assert run(Session(toolchain, workspace=tmp_path), f"{F}notes\nx\n{F}\n") == []
    [answer] = list(Session(toolchain, workspace=tmp_path).execute('@notes(c1): {}', "tool"))
    assert (answer.call_id, answer.status) == ("c1", Status.ERROR)
    assert answer.content == "notes only describes something to you; it cannot be called."


def test_execute_accepts_a_message(toolchain: Toolchain, tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    assert [m.content for m in session.execute(Message("assistant", f"{F}add 4\n{F}"))] == ["5"]


def test_calls_that_cannot_run_are_told_in_their_place(toolchain: Toolchain,
                                                       tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    text = '@add(c1): {"a": 1}\n@add(c2): {"a": two}\n@add(c3): {"a": 3}\n@echo(c4): {"text":\n'
    results = list(session.execute(text, "tool"))
    assert [m.content.split(" (")[0] for m in results] == [
        "2", "The @add(c2) call on line 2 has arguments that are not valid JSON", "4",
        "The @echo(c4) call on line 4 never ends"]
    assert [m.status for m in results] == [None, Status.ERROR, None, Status.ERROR]
    assert results[1].note == CannotRun(malformed="malformed")


def test_an_unclosed_block_is_told_only_if_it_names_a_tool(toolchain: Toolchain,
                                                           tmp_path: Path) -> None:
    session = Session(toolchain, workspace=tmp_path)
    [told] = list(session.execute(f"{F}add 1\n{F}\n{F}echo\nhello\n"))[1:]
    assert told.content.startswith(f"The {F}echo block opened on line 3 was never closed")
    assert list(session.execute(f"Example:\n{F}python\nprint(1)\n")) == []


def test_calls_of_tools_not_loaded_are_answered_in_their_place(tmp_path: Path) -> None:
    session = Session(Toolchain.build(["echo"], catalogue=CATALOGUE), workspace=tmp_path)
    text = (f"{F}add 1\n{F}\n{F}say\nhi\n{F}\n{F}json\n{{}}\n{F}\n{F}notes\nx\n{F}\n"
            f"~~~~secret\nx\n~~~~\n")
    results = list(session.execute(text))
    assert [m.content for m in results] == [
        f"The add tool is not loaded in this run, so the {F}add block on line 1 did not run. "
        "Loaded tools: echo.", "echo: hi", "args: ()",
        "The secret tool is not loaded in this run, so the ~~~~secret block on line 12 did not "
        "run. Loaded tools: echo."]
    assert [(m.tool, m.status, m.note) for m in results] == [
        ("add", Status.ERROR, CannotRun(unloaded=("add",), line=1)), ("echo", None, None),
        ("echo", None, None), ("secret", Status.ERROR, CannotRun(unloaded=("secret",), line=12))]
    assert results[0].failed and results[0].call is not None


def test_a_named_call_of_a_tool_not_loaded_says_so(tmp_path: Path) -> None:
    session = Session(Toolchain.build(["echo"], catalogue=CATALOGUE), workspace=tmp_path)
    [answer] = list(session.execute('@add(c1): {"a": 1}', "tool"))
    assert answer.content == ("The add tool is not loaded in this run, so this call did not "
                              "run. Loaded tools: echo.")
    assert (answer.call_id, answer.tool, answer.status) == ("c1", "add", Status.ERROR)
    assert answer.note == CannotRun(unloaded=("add",))
