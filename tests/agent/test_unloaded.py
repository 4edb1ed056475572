"""A call of a tool fencecall knows but the run did not load: the model hears which tool is
missing and which are loaded, in the next request, and a reply that ran nothing else counts
toward the feedback limit; a plain code block (```json) is told nothing."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fencecall.agent import Agent, AgentSettings, Outcome
from fencecall.agent._feedback import reply_feedback
from fencecall.execution import Session, auto_yes
from fencecall.execution.unloaded import not_loaded, unloaded_blocks
from fencecall.message import CannotRun
from fencecall.parsing import MARKDOWN, parse
from fencecall.providers._openai_provider import OpenAIProvider
from fencecall.tools import Toolchain
from fencecall.tools.builtin import complete

from ..fakeserver import FakeModelServer, Reply
from ..support import F, scripted_agent

LOADED = ["read", "save"]

pytestmark = pytest.mark.session(LOADED, sandbox="off")


def told(agent: Agent) -> list[str]:
    return [m.content for m in agent.conversation.messages
            if isinstance(m.note, CannotRun) and m.note.unloaded]


def test_the_next_request_names_the_tool_and_the_loaded_ones(session: Session) -> None:
    reply = f"I will look around.\n\n{F}shell\nls -la\n{F}\n"
    with FakeModelServer([Reply(reply), Reply("I cannot run commands here.")]) as server:
        provider = OpenAIProvider(api_key=None, base_url=server.openai_url, max_retries=0)
        outcome = Agent(provider, "m", session).send("what is in this folder?")
    assert outcome is Outcome.DONE
    assert len(server.requests) == 2
    last = server.requests[1].body["messages"][-1]["content"]
    assert (f"The shell tool is not loaded in this run, so the {F}shell block on line 3 did "
            "not run. Loaded tools: save, read.") in last


@pytest.mark.parametrize(("block", "tool", "written"), [
    (f"{F}bash\nls\n{F}", "shell", f"the {F}bash block on line 2"),
    ("~~~sh\nls\n~~~", "shell", "the ~~~sh block on line 2"),
    (f"{F}ipython\nprint(1)\n{F}", "ipython", f"the {F}ipython block on line 2"),
    (f"{F}py\nprint(1)\n{F}", "ipython", f"the {F}py block on line 2"),
    (f"{F}patch a.txt\n<<<<<<< ORIGINAL\na\n=======\nb\n>>>>>>> UPDATED\n{F}", "patch",
     f"the {F}patch block on line 2"),
])
def test_each_tag_of_a_tool_not_loaded_is_known(session: Session, block: str, tool: str,
                                                written: str) -> None:
    said = reply_feedback(f"Here:\n{block}\n", MARKDOWN, session.toolchain, misses=True)
    assert said is not None and said.note == CannotRun(unloaded=(tool,))
    assert f"The {tool} tool is not loaded in this run, so {written} did not run." \
        in said.content


def test_plain_code_blocks_are_told_nothing(session: Session, tmp_path: Path) -> None:
    text = (f"The config:\n{F}json\n{{\"a\": 1}}\n{F}\nThe change:\n{F}diff\n-a\n+b\n{F}\n"
            f"{F}text\nplain\n{F}\n{F}\nA -> B\n{F}\nUse `shell` or ```shell inline.")
    assert reply_feedback(text, MARKDOWN, session.toolchain, misses=True) is None
    agent, outcome = scripted_agent(session, tmp_path, text)
    assert outcome is Outcome.DONE
    assert [m.role for m in agent.conversation.messages] == ["user", "assistant"]


def test_a_python_block_stays_an_example_when_ipython_is_not_loaded(session: Session) -> None:
    """``python`` is no tag of the ipython tool (it only gets near-miss feedback where
    ipython is loaded), so with ipython left out it is code shown, not a call."""
    text = f"{F}python\nprint(1)\n{F}\n"
    assert reply_feedback(text, MARKDOWN, session.toolchain, misses=True) is None


def test_replies_of_tools_not_loaded_count_toward_the_limit(session: Session,
                                                            tmp_path: Path) -> None:
    replies = [f"{F}shell\necho {i}\n{F}\n" for i in range(5)]
    agent, outcome = scripted_agent(session, tmp_path, *replies,
                                    settings=AgentSettings(feedback_limit=3))
    assert outcome is Outcome.GAVE_UP
    assert len(told(agent)) == 3
    assert "3 replies in a row" in agent.conversation.messages[-1].content


def test_a_block_before_a_call_that_ran_is_told_and_not_counted(session: Session,
                                                                tmp_path: Path) -> None:
    both = f"{F}shell\nls\n{F}\n\n{F}save a.txt\nhi\n{F}\n"
    agent, outcome = scripted_agent(session, tmp_path, both, both, both, "Done.",
                                    settings=AgentSettings(feedback_limit=2))
    assert outcome is Outcome.DONE
    assert (session.workspace / "a.txt").read_text() == "hi\n"
    assert len(told(agent)) == 3
    assert f"the {F}shell block on line 1 did not run" in told(agent)[0]


def test_near_misses_and_tools_not_loaded_share_one_message(workspace: Path,
                                                           tmp_path: Path) -> None:
    with Session(Toolchain.build(["ipython"]), workspace=workspace, confirm=auto_yes,
                 sandbox="off") as session:
        agent, _ = scripted_agent(session, tmp_path,
                                  f"{F}python\nprint(1)\n{F}\n{F}shell\nls\n{F}\n", "Done.")
    [said] = [m for m in agent.conversation.messages if m.role == "system"]
    assert said.note == CannotRun(near_misses=("language-tag",), unloaded=("shell",))
    assert "The shell tool is not loaded" in said.content and f"{F}ipython" in said.content


def test_without_feedback_the_turn_ends(session: Session, tmp_path: Path) -> None:
    agent, outcome = scripted_agent(session, tmp_path, f"{F}shell\nls\n{F}\n",
                                    settings=AgentSettings(feedback_limit=0))
    assert outcome is Outcome.DONE
    assert told(agent) == []


def test_a_tool_added_after_the_selection_is_loaded() -> None:
    chain = Toolchain.build(["read"])
    assert chain.not_loaded("complete", langtag=True) is complete.tool
    added = replace(chain, tools=(*chain.tools, complete.tool))
    assert added.not_loaded("complete", langtag=True) is None
    assert added.not_loaded("shell", langtag=True) is not None


_PIECES = st.sampled_from(["```", "~~~", "````", "\n", " ", "Shell", "shell", "PYTHON",
                           "ipython", "patch a.py", "save b.txt", "read x", "json", "ls",
                           "> ", "  ", "<", "tool", "text"])


@given(st.lists(_PIECES, max_size=30))
def test_the_quick_look_finds_what_a_whole_parse_finds(pieces: list[str]) -> None:
    """The check that skips the second parse of a reply with no unloaded tool's tag in it
    never skips a block that calls one."""
    text = "".join(pieces)
    chain = Toolchain.build(LOADED)
    whole = [(call, spec) for call in parse(text, MARKDOWN).calls
             if call.is_codeblock and (spec := not_loaded(call, chain)) is not None]
    assert unloaded_blocks(text, MARKDOWN, chain) == whole
