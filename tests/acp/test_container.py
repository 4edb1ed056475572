"""``fencecall acp --env container:IMAGE``: an editor's session runs its tools in a container
of the image (real podman, the base image of tests/containers.py), its working folder the
editor's, and the container goes with the agent."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import acp

from fencecall.environments import LABEL

from ..containers import base_image
from ..fakeserver import FakeModelServer, Reply
from ..support import F
from .conftest import editor_session, run

__all__ = ["base_image"]


def _exists(container: str) -> bool:
    done = subprocess.run(["podman", "ps", "--all", "--quiet", "--filter", f"id={container}",
                           "--filter", f"label={LABEL}"], capture_output=True, text=True,
                          timeout=60, check=True)
    return bool(container) and bool(done.stdout.strip())


def test_an_editors_session_works_in_a_container_removed_with_the_agent(
        base_image: str, tmp_path: Path, workspace: Path) -> None:
    replies = [Reply(f"{F}shell\npwd; hostname; echo hi > made.txt\n{F}\n"), Reply("Done.")]

    async def scenario() -> tuple[str, bool]:
        async with editor_session(tmp_path, server.openai_url, "-y", "--env",
                                  f"container:{base_image}") as (conn, editor, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id,
                                     prompt=[acp.text_block("where are you?")])
            assert done.stop_reason == "end_turn"
            [result] = [update for update in editor.updates("tool_call_update")
                        if update.status == "completed"]
            text = str(result.content[0].content.text)
            container = text.split("```")[1].split()[1]  # its host name: its id's start
            return text, _exists(container)

    with FakeModelServer(replies) as server:
        text, running = run(scenario())
    assert text.split("```")[1].split()[0] == "/work", text  # the image's WORKDIR
    assert running, text
    assert (workspace / "made.txt").read_text() == "hi\n"  # the editor's folder, mounted
    container = text.split("```")[1].split()[1]
    deadline = time.monotonic() + 30
    while _exists(container) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _exists(container)
