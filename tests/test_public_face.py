"""The package's front door: a flat public face, cheap to import, and an agent in ten lines."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import shutil
import subprocess
import sys
from pathlib import Path

import fencecall
from fencecall import (
    Agent,
    AgentSettings,
    CallRecord,
    Conversation,
    Outcome,
    ScriptedProvider,
    Session,
    Toolchain,
    auto_yes,
)

from .support import F

RELEASE_LOG = Path(__file__).parent / "fixtures" / "logs" / "release-0.1.jsonl"
"""A log written by fencecall 0.1.0 on 2026-12-04 (a native save, a markdown shell call, an
undo), kept as written: later releases must still load and resume it."""


def test_every_public_name_resolves_and_is_listed() -> None:
    homes = fencecall._MODULE_OF
    assert sorted(fencecall.__all__) == sorted([*homes, "__version__"])
    for name, home in homes.items():
        # the object its home package defines, not a namesake imported from somewhere else
        value = getattr(fencecall, name)
        assert value is getattr(importlib.import_module(f"fencecall.{home}"), name), name
        assert value.__module__.startswith(f"fencecall.{home}"), name
    assert fencecall.__version__ == importlib.metadata.version("fencecall")
    assert set(fencecall.__all__) <= set(dir(fencecall))


def test_importing_the_package_loads_nothing_it_is_not_asked_for() -> None:
    code = ("import sys, fencecall; from fencecall import parse; "
            "print(sorted(m for m in sys.modules if m.startswith(('fencecall.', 'openai', "
            "'anthropic', 'mcp', 'rich'))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                       text=True, check=True).stdout.replace("'", '"'))
    assert any(m.startswith("fencecall.parsing") for m in loaded)
    assert not [m for m in loaded if m.startswith(("fencecall.agent", "fencecall.providers",
                                                   "openai", "anthropic", "mcp", "rich"))]


def test_an_agent_in_ten_lines_runs_in_memory(workspace: Path) -> None:
    provider = ScriptedProvider([f"{F}shell\necho hello\n{F}\n", "It printed hello."])
    with Session(Toolchain.build(["shell"]), workspace=workspace, confirm=auto_yes) as session:
        agent = Agent(provider, "scripted", session)
        run = agent.run("Say hello with the shell.")
    assert run.outcome is Outcome.DONE and run.done
    assert run.answer == "It printed hello."
    assert [m.role for m in run.messages] == ["user", "assistant", "system", "assistant"]
    assert "hello" in run.messages[2].content
    assert agent.conversation.path is None and list(workspace.iterdir()) == []


def test_a_log_written_by_release_0_1_still_loads_and_resumes(tmp_path: Path,
                                                              workspace: Path) -> None:
    folder = Conversation.logs_dir(tmp_path) / "old"
    folder.mkdir(parents=True)
    shutil.copy(RELEASE_LOG, folder / "conversation.jsonl")
    conversation = Conversation.open(tmp_path, "old")
    assert conversation.notes == []
    assert [m.role for m in conversation.messages] == [
        "user", "assistant", "system", "assistant", "system", "assistant"]
    saving, saved, _, shown = conversation.messages[1:5]
    assert saving.native_calls[0].name == "save" and saving.native_calls[0].id == "c1"
    assert saving.reply is not None and saving.reply.model == "m"
    assert saved.call_id == "c1" and saved.call == CallRecord("save", None, 0.0011)
    assert shown.tool == "shell" and shown.exit_code == 0
    assert shown.call == CallRecord("shell", None, 0.0087, exit_code=0)
    assert shown.metadata == {"timed_out": False}
    assert conversation.settings["format"] == "tool"
    provider = ScriptedProvider(["Still here."])
    with Session(Toolchain.build(["shell", "save", "read"]), workspace=workspace,
                 confirm=auto_yes) as session:
        run = Agent(provider, "scripted", session, conversation, AgentSettings(fmt="tool")).run(
            "Are you there?")
    assert run.answer == "Still here."
    sent = provider.requests[0].messages
    assert [m.content for m in sent[:2]] == ["write hi to a.txt and show it", "Saving."]
    conversation.close()
    assert len(Conversation.open(tmp_path, "old").messages) == 8
