"""Where the editor offers its files, the file tools read and write its buffers, inside
the workspace rules; elsewhere, the disk."""

from __future__ import annotations

from pathlib import Path

import acp

from ..fakeserver import FakeModelServer, Reply
from ..support import F
from .conftest import Editor, editor_session, run


def test_file_tools_go_through_the_editor(tmp_path: Path, workspace: Path) -> None:
    notes = workspace / "notes.txt"
    notes.write_text("disk text\n")
    editor = Editor(files={str(notes): "buffer text\n"})
    replies = [Reply(f"{F}read notes.txt\n{F}\n"), Reply(f"{F}save notes.txt\nnew text\n{F}\n"),
               Reply(f"{F}save ../outside.txt\nescape\n{F}\n"), Reply("Done.")]

    async def scenario() -> str:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off",
                                  editor=editor) as (conn, _, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id,
                                     prompt=[acp.text_block("edit")])
            return str(done.stop_reason)

    with FakeModelServer(replies) as server:
        stop = run(scenario())
    assert stop == "end_turn"
    read_result = server.requests[1].body["messages"][-1]["content"]
    assert "buffer text" in read_result and "disk text" not in read_result
    assert editor.files == {str(notes): "new text\n"}
    assert notes.read_text() == "disk text\n"  # the editor saves its buffer, not fencecall
    diff = next(item for item in editor.updates("tool_call_update")[3].content
                if item.type == "diff")
    assert (diff.old_text, diff.new_text) == ("buffer text\n", "new text\n")
    assert not (tmp_path / "outside.txt").exists()
    assert all(path == str(notes) for _, path in editor.file_requests)
    assert "outside" in server.requests[3].body["messages"][-1]["content"]


def test_with_a_job_running_files_go_through_the_disk(tmp_path: Path, workspace: Path) -> None:
    """A job could swap a folder for a link between the tool's check and the editor's open
    by name: while one runs, the tools open files themselves, by descriptor."""
    notes = workspace / "notes.txt"
    notes.write_text("disk text\n")
    editor = Editor(files={str(notes): "buffer text\n"})
    replies = [Reply(f"{F}shell\nsleep 3118.7 &\n{F}\n"),
               Reply(f"{F}save notes.txt\nnew text\n{F}\n"), Reply("Done.")]

    async def scenario() -> str:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off", "-y",
                                  editor=editor) as (conn, _, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id,
                                     prompt=[acp.text_block("edit")])
            return str(done.stop_reason)

    with FakeModelServer(replies) as server:
        stop = run(scenario())
    assert stop == "end_turn"
    assert "job 1" in server.requests[1].body["messages"][-1]["content"]
    assert notes.read_text() == "new text\n"
    assert editor.files == {str(notes): "buffer text\n"} and editor.file_requests == []
