"""Images in the real chat (a pexpect pty) against the local server: ``/image PATH`` and a
path dropped into the prompt attach an image that reaches the server as an image part in
both wire formats, and ``--resume`` sends it again from the conversation's folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pexpect

from ..cli.conftest import claude_env, cli_env
from ..fakeserver import FakeModelServer, Reply
from .test_wire_images import png


def _chat(env: dict[str, str], model: str, *flags: str) -> pexpect.spawn:
    env = {**env, "TERM": "xterm", "COLUMNS": "200", "LINES": "50", "NO_COLOR": "1",
           "PROMPT_TOOLKIT_NO_CPR": "1"}
    return pexpect.spawn(sys.executable, ["-m", "fencecall.cli.main", "--model", model,
                                          *flags], env=env, encoding="utf-8", timeout=30,
                         dimensions=(50, 200))


def _images(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The image parts (OpenAI) or blocks (Anthropic) of a request's messages."""
    return [part for message in body["messages"] if isinstance(message["content"], list)
            for part in message["content"] if part.get("type") in ("image", "image_url")]


def _end(child: pexpect.spawn) -> None:
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_slash_image_attaches_to_the_next_message_and_resume_keeps_it(
        tmp_path: Path, workspace: Path) -> None:
    (workspace / "shot.png").write_bytes(png(64, 48))
    replies = [Reply("A red rectangle."), Reply("Still red.")]
    with FakeModelServer(replies) as server:
        env = cli_env(tmp_path, server.openai_url)
        child = _chat(env, "local/m", "--name", "pics", "--workspace", str(workspace))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("/image shot.png")
            child.expect(r"Attached .*shot\.png \(64×48\) to your next message")  # noqa: RUF001
            child.sendline("what is this?")
            child.expect("A red rectangle.")
            _end(child)
            (workspace / "shot.png").unlink()  # the conversation keeps its own copy
            child = _chat(env, "local/m", "--resume", "pics", "--workspace", str(workspace))
            child.expect("Ctrl-D to leave")
            child.sendline("and now?")
            child.expect("Still red.")
            _end(child)
        finally:
            child.close(force=True)
    first, second = (served.body for served in server.requests)
    assert len(_images(first)) == 1 and _images(first)[0]["type"] == "image_url"
    assert _images(second) == _images(first)
    folder = tmp_path / "home" / "conversations" / "pics"
    records = [json.loads(line) for line in (folder / "conversation.jsonl").read_text()
               .splitlines()]
    [image] = [image for record in records for image in record.get("images", ())]
    assert Path(image["path"]).parent == folder / "images"
    assert (image["width"], image["height"], image["media_type"]) == (64, 48, "image/png")


def test_a_dropped_path_attaches_its_image_in_the_anthropic_format(
        tmp_path: Path, workspace: Path) -> None:
    shot = tmp_path / "my shots" / "diagram.png"
    shot.parent.mkdir()
    shot.write_bytes(png(30, 20, "blue"))
    replies = [Reply("A blue box."), Reply("Same box.")]
    with FakeModelServer(replies) as server:
        child = _chat(claude_env(tmp_path, server), "claude/m", "--workspace", str(workspace))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline(f"'{shot}' what is in it?")  # as a terminal types a dropped file
            child.expect("Attached .*diagram.png")
            child.expect("A blue box.")
            child.sendline(str(shot).replace(" ", "\\ "))  # the whole prompt, escaped
            child.expect("Attached .*diagram.png")
            child.expect("Same box.")
            _end(child)
        finally:
            child.close(force=True)
    first, second = (served.body for served in server.requests)
    [block] = _images(first)
    assert block["type"] == "image" and block["source"]["media_type"] == "image/png"
    assert first["messages"][0]["content"][0]["text"] == f"'{shot}' what is in it?"
    assert len(_images(second)) == 2
