"""What small local models need from the loop: feedback on near misses (one test per class),
a bound on replies that run nothing, loops cut, sampling settings, and a context window."""

from __future__ import annotations

from pathlib import Path

import pytest

from fencecall.agent import Agent, AgentSettings, Conversation, Outcome, near_misses
from fencecall.agent._context import boundary
from fencecall.agent._prompt import system_prompt
from fencecall.agent._repetition import RepetitionGuard
from fencecall.config import Sampling
from fencecall.execution import Session
from fencecall.message import CannotRun, Message, Status
from fencecall.providers import ScriptedProvider

from ..support import F, scripted_agent

TOOLS = ["shell", "ipython", "save", "append"]

pytestmark = pytest.mark.session(TOOLS, sandbox="off")


def feedback_of(agent: Agent) -> list[str]:
    return [m.content for m in agent.conversation.messages
            if isinstance(m.note, CannotRun) and m.note.near_misses]


@pytest.mark.parametrize(("reply", "kind", "fix"), [
    (f"{F}python\nprint(1)\n{F}\n", "language-tag", f"{F}ipython\nprint(1)\n{F}"),
    (f"{F}python3\nprint(1)\n{F}\n", "language-tag", f"{F}ipython\nprint(1)\n{F}"),
    (f"{F}console\nls -la\n{F}\n", "language-tag", f"{F}shell\nls -la\n{F}"),
    (f"{F}zsh\nls\n{F}\n", "language-tag", f"{F}shell\nls\n{F}"),
    (f"{F}Shell\nls\n{F}\n", "language-tag", f"{F}shell\nls\n{F}"),
    (f"{F}\nappend notes.txt\nhello\n{F}\n", "bare-fence", f"{F}append notes.txt\nhello\n{F}"),
    (f"{F}\npython\nprint(1)\n{F}\n", "bare-fence", f"{F}ipython\nprint(1)\n{F}"),
    (f"{F}\npython reproduce.py\n{F}\n", "bare-fence", f"{F}shell\npython reproduce.py\n{F}"),
    ("<tool-use><shell>ls</shell></tool-use>", "other-format", f"{F}shell\nls\n{F}"),
    ('@save(c1): {"path": "a.txt", "content": "x"}', "other-format", f"{F}save a.txt\nx\n{F}"),
])
def test_each_near_miss_class_is_named_with_the_form_that_runs(
        session: Session, reply: str, kind: str, fix: str) -> None:
    [miss] = near_misses(reply, "markdown", session.toolchain)
    assert miss.kind == kind
    assert fix in miss.message()


def test_in_xml_a_fenced_block_is_a_near_miss(session: Session) -> None:
    [miss] = near_misses(f"{F}shell\nls\n{F}\n", "xml", session.toolchain)
    assert miss.kind == "other-format"
    assert "<tool-use>" in miss.fix and "ls" in miss.fix and "```" not in miss.fix


def test_native_function_calling_has_no_near_misses(session: Session) -> None:
    assert near_misses(f"Run this:\n{F}python\nprint(1)\n{F}\n", "tool",
                       session.toolchain) == []


def test_plain_code_and_prose_are_not_near_misses(session: Session) -> None:
    text = (f"Here is some JSON:\n{F}json\n{{}}\n{F}\nand a diagram:\n{F}\nA -> B\n{F}\n"
            "Use `python` to run it.")
    assert near_misses(text, "markdown", session.toolchain) == []


def test_a_near_miss_gets_feedback_and_the_loop_goes_on(session: Session,
                                                        tmp_path: Path) -> None:
    agent, outcome = scripted_agent(session, tmp_path, f"{F}python\nprint(6 * 7)\n{F}\n",
                f"{F}ipython\nprint(6 * 7)\n{F}\n", "It is 42.")
    assert outcome is Outcome.DONE
    [said] = feedback_of(agent)
    assert "no tool answers to 'python'" in said and f"{F}ipython" in said
    assert any("42" in m.content for m in agent.conversation.messages if m.role == "system"
               and not isinstance(m.note, CannotRun))


def test_stray_words_after_a_tool_name_are_told_as_an_invalid_call(session: Session,
                                                                   tmp_path: Path) -> None:
    agent, _ = scripted_agent(session, tmp_path, f"{F}shell run this\nls\n{F}\n", "Done.")
    [result] = [m for m in agent.conversation.messages if m.role == "system"]
    assert result.status is Status.ERROR and "too many arguments" in result.content


def test_an_unclosed_block_is_told(session: Session, tmp_path: Path) -> None:
    agent, _ = scripted_agent(session, tmp_path, f"{F}shell\necho never closed", "Done.")
    [result] = [m for m in agent.conversation.messages if m.role == "system"]
    assert "never closed" in result.content


def test_the_loop_gives_up_after_the_feedback_limit(session: Session, tmp_path: Path) -> None:
    replies = [f"{F}python\nprint({i})\n{F}\n" for i in range(5)]
    agent, outcome = scripted_agent(session, tmp_path, *replies,
                                    settings=AgentSettings(feedback_limit=3))
    assert outcome is Outcome.GAVE_UP
    assert len(feedback_of(agent)) == 3
    last = agent.conversation.messages[-1]
    assert last.ending is Outcome.GAVE_UP and "3 replies in a row" in last.content


def test_a_reply_that_runs_resets_the_count(session: Session, tmp_path: Path) -> None:
    miss = f"{F}python\nprint(1)\n{F}\n"
    agent, outcome = scripted_agent(session, tmp_path, miss, miss, f"{F}shell\necho ok\n{F}\n",
                                    miss, miss, "Done.", settings=AgentSettings(feedback_limit=3))
    assert outcome is Outcome.DONE
    assert len(feedback_of(agent)) == 4


def test_without_feedback_a_near_miss_ends_the_turn(session: Session, tmp_path: Path) -> None:
    agent, outcome = scripted_agent(session, tmp_path, f"{F}python\nprint(1)\n{F}\n",
                                    settings=AgentSettings(feedback_limit=0))
    assert outcome is Outcome.DONE
    assert feedback_of(agent) == []


def test_a_looping_reply_is_cut_and_reported(session: Session, tmp_path: Path) -> None:
    looping = "I will now list the files.\n" * 200
    agent, outcome = scripted_agent(session, tmp_path, looping, "Sorry. Done.")
    assert outcome is Outcome.DONE
    reply = agent.conversation.messages[1]
    assert reply.reply is not None and reply.reply.loop and reply.content.count("\n") < 20
    note = agent.conversation.messages[2]
    assert note.status is Status.ERROR and "repeated the line" in note.content


@pytest.mark.parametrize("text", ["ha" * 400, "na na na " * 100, "x\n" * 50])
def test_repetition_without_new_lines_is_seen(text: str) -> None:
    guard = RepetitionGuard()
    found = [guard.feed(text[i:i + 7]) for i in range(0, len(text), 7)]
    assert any(found)


def test_varied_text_and_rulers_are_not_a_loop() -> None:
    guard = RepetitionGuard()
    text = "".join(f"line {i}: the value is {i * i}\n{'=' * 80}\n" for i in range(500))
    assert not any(guard.feed(text[i:i + 9]) for i in range(0, len(text), 9))


def test_sampling_settings_reach_the_request(session: Session, tmp_path: Path) -> None:
    provider = ScriptedProvider(["Done."])
    sampling = Sampling(0.2, 0.9, ("<|im_end|>",))
    Agent(provider, "m", session, Conversation.create(tmp_path, "s"),
          AgentSettings(sampling=sampling)).send("hi")
    assert provider.requests[0].sampling == sampling


def test_compact_prompt_is_short_and_puts_the_common_tools_first(session: Session) -> None:
    compact = system_prompt(session, compact=True)
    full = system_prompt(session)
    assert len(compact) < len(full) / 1.5
    assert len(compact) / 3 < 600  # tokens, estimated high (three characters each)
    assert compact.index("## shell") < compact.index("## ipython") < compact.index("## save")
    assert f"{F}shell 60" not in full  # a default is not written into an example


@pytest.mark.parametrize("fmt", ["xml", "tool"])
def test_each_format_prompt_speaks_only_of_that_format(session: Session, fmt: str,
                                                       workspace: Path) -> None:
    with Session(session.toolchain, workspace=workspace, sandbox="off") as other:
        for compact in (False, True):
            prompt = system_prompt(other, fmt, compact=compact)
            calls = [line for line in prompt.splitlines() if line.startswith(F)
                     and line.strip() != F]
            assert calls == [], calls  # no ```tool lines: results may show plain fences
            assert "langtag" not in prompt and "code block" not in prompt


def _messages(count: int, size: int) -> list[Message]:
    found = [Message("user", "the task " * 10)]
    for i in range(count):
        found += [Message("assistant", f"step {i} " + "x" * size),
                  Message("system", f"result {i} " + "y" * size)]
    return found


def test_a_compaction_replaces_whole_exchanges_and_keeps_the_latest() -> None:
    messages = _messages(20, 300)
    costs = [len(m.content) // 3 + 4 for m in messages]
    end = boundary(messages, costs, keep=400)
    assert end is not None and messages[end].role == "assistant"  # a reply and its results
    assert sum(costs[end:]) <= 400 < sum(costs[end - 2 :])
    assert boundary(messages, costs, keep=10) == len(messages) - 2  # the latest stays whole
    assert boundary(messages[:3], costs[:3], keep=10) is None  # nothing before it to replace
