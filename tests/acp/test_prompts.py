"""A prompt's reply, its calls and their permissions, as the editor sees them."""

from __future__ import annotations

from pathlib import Path

import acp

from fencecall.acp._updates import title_of
from fencecall.parsing import ToolCall

from ..fakeserver import FakeModelServer, Reply
from ..support import F
from .conftest import Editor, editor_session, run


async def _prompt(tmp_path: Path, workspace: Path, url: str, text: str, editor: Editor,
                  *flags: str) -> str:
    async with editor_session(tmp_path, url, "--sandbox", "off", *flags,
                              editor=editor) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(text)])
        return str(done.stop_reason)


def test_an_allowed_shell_call_streams_in_order(tmp_path: Path, workspace: Path) -> None:
    editor = Editor()
    replies = [Reply(f"<think>plan it</think>Let me look.\n{F}shell\necho hello-acp\n{F}\n"),
               Reply("All done.")]
    with FakeModelServer(replies) as server:
        stop = run(_prompt(tmp_path, workspace, server.openai_url, "say hello", editor))
    assert stop == "end_turn"
    assert editor.timeline() == ["tool_call:pending", "permission",
                                 "tool_call_update:in_progress", "tool_call_update:completed"]
    started = editor.updates("tool_call")[0]
    assert (started.kind, started.title) == ("execute", "Run echo hello-acp")
    _, asked, options = next(event for event in editor.events if isinstance(event, tuple))
    assert asked.tool_call_id == started.tool_call_id
    assert "echo hello-acp" in asked.content[0].content.text
    assert [option.kind for option in options] == ["allow_once", "allow_always", "reject_once"]
    completed = editor.updates("tool_call_update")[-1]
    assert "hello-acp" in completed.content[0].content.text
    assert "".join(u.content.text for u in editor.updates("agent_thought_chunk")) == "plan it"
    assert editor.said().startswith("Let me look.") and editor.said().endswith("All done.")
    assert "hello-acp" in server.requests[1].body["messages"][-1]["content"]


def test_a_rejected_call_is_declined_for_the_model(tmp_path: Path, workspace: Path) -> None:
    editor = Editor(answer="reject-once")
    replies = [Reply(f"{F}shell\ntouch made-anyway\n{F}\n"), Reply("Understood.")]
    with FakeModelServer(replies) as server:
        stop = run(_prompt(tmp_path, workspace, server.openai_url, "touch it", editor))
    assert stop == "end_turn"
    assert not (workspace / "made-anyway").exists()
    assert editor.timeline() == ["tool_call:pending", "permission", "tool_call_update:failed"]
    told = server.requests[1].body["messages"][-1]["content"]
    assert "was not confirmed, so it did not run" in told


def test_allow_always_adds_the_narrowest_rules_for_the_session(tmp_path: Path,
                                                                workspace: Path) -> None:
    editor = Editor(answer="allow-always")
    replies = [Reply(f"{F}shell\necho one\n{F}\n"), Reply(f"{F}shell\necho one\n{F}\n"),
               Reply(f"{F}shell\necho two\n{F}\n"), Reply("All ran.")]
    with FakeModelServer(replies) as server:
        stop = run(_prompt(tmp_path, workspace, server.openai_url, "thrice", editor))
    assert stop == "end_turn"
    assert editor.timeline().count("permission") == 2  # echo one once, then echo two
    assert editor.timeline().count("tool_call_update:completed") == 3
    _, _, offered = next(event for event in editor.events if isinstance(event, tuple))
    assert offered[1].name == "Always allow in this session: shell(echo one)"


def test_a_save_shows_its_diff(tmp_path: Path, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("old line\n")
    editor = Editor()
    replies = [Reply(f"{F}save notes.txt\nnew line\n{F}\n"), Reply("Saved.")]
    with FakeModelServer(replies) as server:
        stop = run(_prompt(tmp_path, workspace, server.openai_url, "rewrite", editor))
    assert stop == "end_turn"
    assert (workspace / "notes.txt").read_text() == "new line\n"
    started = editor.updates("tool_call")[0]
    assert (started.kind, started.title) == ("edit", "Write notes.txt")
    assert [location.path for location in started.locations] == [str(workspace / "notes.txt")]
    _, asked, _ = next(event for event in editor.events if isinstance(event, tuple))
    assert "-old line" in asked.content[0].content.text  # the terminal's preview: the diff
    diff = next(item for item in editor.updates("tool_call_update")[-1].content
                if item.type == "diff")
    assert (diff.path, diff.old_text, diff.new_text) == (str(workspace / "notes.txt"),
                                                         "old line\n", "new line\n")


def test_control_characters_are_shown_not_sent(tmp_path: Path, workspace: Path) -> None:
    editor = Editor(answer="reject-once")
    replies = [Reply(f"{F}shell\necho safe\x1b[2Krm -rf ~ \u202e\x08\n{F}\n"), Reply("Ok.")]
    with FakeModelServer(replies) as server:
        run(_prompt(tmp_path, workspace, server.openai_url, "x", editor))
    _, asked, _ = next(event for event in editor.events if isinstance(event, tuple))
    text = asked.content[0].content.text
    assert "\x1b" not in text and "\x08" not in text and "\u202e" not in text
    assert "echo safe␛[2Krm -rf ~ <U+202E>␈" in text


def test_a_long_command_title_says_where_it_was_cut(tmp_path: Path, workspace: Path) -> None:
    """The title shows the first line: cut, it ends in "…"; with more lines, it counts them."""
    first = "echo " + "x" * 200
    editor = Editor(answer="reject-once")
    replies = [Reply(f"{F}shell\n{first}\ncd build\n\nmake\n{F}\n"), Reply("Ok.")]
    with FakeModelServer(replies) as server:
        run(_prompt(tmp_path, workspace, server.openai_url, "build", editor))
    title = editor.updates("tool_call")[0].title
    assert title == f"Run {first[:119]}… (+2 lines)"


def test_other_titles_say_where_they_were_cut() -> None:
    path = "deep/" * 50 + "notes.txt"
    assert title_of("save", ToolCall("save", kwargs={"path": path})) == f"Write {path[:199]}…"
    assert title_of("shell", ToolCall("shell", content="ls\npwd")) == "Run ls (+1 line)"
    assert title_of("shell", ToolCall("shell", content="ls\n")) == "Run ls"
    assert title_of("mcp.x", ToolCall("mcp.x", argline="a" * 300)).endswith("a…")


def test_a_reply_holding_a_lone_surrogate_ends_the_turn(tmp_path: Path,
                                                        workspace: Path) -> None:
    """JSON's "\\ud800" in a reply used to fail the prompt with -32603 (the log could not
    be written): the editor gets the reply, the character replaced and said."""
    editor = Editor()
    with FakeModelServer([Reply("Odd \ud800 reply.")]) as server:
        stop = run(_prompt(tmp_path, workspace, server.openai_url, "hi", editor))
    assert stop == "end_turn"
    assert editor.said() == ("Odd \ufffd reply.\n[1 character that could not be encoded "
                             "(U+D800) was replaced with U+FFFD]")
