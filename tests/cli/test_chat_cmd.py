"""End to end: the CLI, a real local HTTP server speaking the OpenAI (and Anthropic)
streaming protocols, recorded replies with tool calls in each format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fencecall.agent import Conversation

from ..fakeserver import FakeModelServer, Reply
from .conftest import CLI, cli_env, log_of, recorded


def test_markdown_calls_run_and_results_feed_back(fencecall: CLI, workspace: Path,
                                                  tmp_path: Path) -> None:
    replies = [Reply(recorded("markdown_save.md")), Reply(recorded("markdown_run.md")),
               Reply(recorded("done.md"))]
    with FakeModelServer(replies) as server:
        result = fencecall("-y", "--model", "local/test-model", "--name", "md1",
                           "write a greeting script and run it", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert (workspace / "greet.py").read_text() == 'import sys\nprint("hello", sys.argv[1])\n'
    assert "hello fencecall" in result.stdout
    assert "Done: the script prints a greeting." in result.stdout
    first, _, third = server.requests
    assert first.body["model"] == "test-model"
    assert first.body["stream"] is True
    assert "```save path/to/file.py" in first.body["messages"][0]["content"]  # instructions
    assert "tools" not in first.body
    tool_result = third.body["messages"][-1]
    assert tool_result["role"] == "user" and "hello fencecall" in tool_result["content"]
    records = log_of(tmp_path, "md1")
    assert [r["role"] for r in records] == ["user", "assistant", "system", "assistant",
                                            "system", "assistant"]
    assert records[2]["content"] == "Created greet.py (2 lines)."
    assert {k: v for k, v in records[2]["metadata"].items() if k != "duration_s"} == {
        "tool": "save", "outcome": "ok"}
    assert 0 <= records[2]["metadata"]["duration_s"] < 10
    assert (records[1]["metadata"]["model"], records[1]["metadata"]["provider"]) == (
        "test-model", "local")


def test_stop_at_first_call(fencecall: CLI, workspace: Path, tmp_path: Path) -> None:
    greedy = ("```shell\ntouch first\n```\n\nOutput: (none)\n\n```shell\ntouch second\n```\n"
              + "More text the model should never get to write. " * 40)
    with FakeModelServer([Reply(greedy, chunk_size=4, delay=0.01), Reply("All done.")]) as server:
        result = fencecall("-y", "--model", "local/m", "--name", "stop", "make files",
                           base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert (workspace / "first").exists()
    assert not (workspace / "second").exists()
    served = server.requests[0]
    assert served.disconnected or served.chunks_sent < served.chunks_total
    assert served.chunks_sent < served.chunks_total / 2
    assistant = log_of(tmp_path, "stop")[1]
    assert assistant["content"] == "```shell\ntouch first\n```"
    assert "touch second" not in json.dumps(server.requests[1].body["messages"])


def test_xml_format(fencecall: CLI, workspace: Path) -> None:
    with FakeModelServer([Reply(recorded("xml_save.xml")), Reply("Saved.")]) as server:
        result = fencecall("-y", "--format", "xml", "--model", "local/m", "write a page",
                           base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert (workspace / "page.html").read_text() == (
        "<html><body><p>if a < b && c > d</p></body></html>\n")
    assert "<tool-use>" in server.requests[0].body["messages"][0]["content"]


def test_tool_format_native_and_text_calls(fencecall: CLI, workspace: Path) -> None:
    (workspace / "page.html").write_text("<p>hi</p>\n")
    native = Reply("", tool_calls=[{"id": "call_ls", "name": "shell",
                                    "arguments": {"command": "ls"}}])
    replies = [native, Reply(recorded("tool_text_call.txt")), Reply("It says hi.")]
    with FakeModelServer(replies) as server:
        result = fencecall("-y", "--format", "tool", "--model", "local/m", "--tools",
                           "shell,read", "look around", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    first, second, third = server.requests
    assert sorted(t["function"]["name"] for t in first.body["tools"]) == ["jobs", "read",
                                                                          "shell"]
    assert first.body["tools"][0]["function"]["parameters"]["type"] == "object"
    assistant, tool_message = second.body["messages"][-2:]
    assert assistant["tool_calls"][0]["id"] == "call_ls"
    assert tool_message == {"role": "tool", "tool_call_id": "call_ls",
                            "content": tool_message["content"]}
    assert "page.html" in tool_message["content"]
    assert "<p>hi</p>" in third.body["messages"][-1]["content"]
    assert "It says hi." in result.stdout


def test_resume_and_list(fencecall: CLI, tmp_path: Path) -> None:
    with FakeModelServer([Reply("First answer."), Reply("Second answer.")]) as server:
        assert fencecall("--model", "local/m", "--name", "conv1", "first question",
                         base_url=server.openai_url).returncode == 0
        again = fencecall("--model", "local/m", "--resume", "conv1", "second question",
                          base_url=server.openai_url)
    assert again.returncode == 0, again.stderr
    contents = [m["content"] for m in server.requests[1].body["messages"][1:]]
    assert contents == ["first question", "First answer.", "second question"]
    listing = fencecall("list", base_url=server.openai_url)
    assert "conv1" in listing.stdout and "first question" in listing.stdout
    missing = fencecall("--model", "local/m", "--resume", "nope", "x", base_url="http://x")
    assert missing.returncode == 2 and "no conversation called 'nope'" in missing.stderr
    taken = fencecall("--model", "local/m", "--name", "conv1", "x", base_url="http://x")
    assert "exists; resume it instead" in taken.stderr


def test_api_key_is_sent_but_never_logged(fencecall: CLI, tmp_path: Path) -> None:
    secret = "sk-test-do-not-log-12345"
    with FakeModelServer([Reply("```shell\nprintenv | grep -c FENCECALL_LOCAL_API_KEY\n```\n"),
                          Reply("ok")]) as server:
        env = cli_env(tmp_path, server.openai_url, FENCECALL_LOCAL_API_KEY=secret)
        result = fencecall("-y", "--model", "local/m", "--name", "k", "go",
                           base_url=server.openai_url, env=env)
    assert result.returncode == 0, result.stderr
    assert server.requests[0].headers["authorization"] == f"Bearer {secret}"
    assert "```\n0\n```" in server.requests[1].body["messages"][-1]["content"]  # hidden from tools
    for path in (tmp_path / "home").rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
def test_a_hostile_model_cannot_read_the_api_key(sandbox: str, fencecall: CLI,
                                                 tmp_path: Path) -> None:
    """Every way back to the key a tool has: its environment, fencecall's through /proc (the
    parent's, every process's), python's os.environ, and the files fencecall wrote."""
    secret = "sk-test-hostile-6789abcdef"
    steal = ("```shell\nenv; cat /proc/$PPID/environ; cat /proc/*/environ; "
             "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done; "
             "python3 -c 'import os; print(os.environ)'; cat ~/.local/share/fencecall/*/*/*\n"
             "```\n")
    with FakeModelServer([Reply(steal), Reply("done")]) as server:
        env = cli_env(tmp_path, server.openai_url, FENCECALL_LOCAL_API_KEY=secret)
        result = fencecall("-y", "--sandbox", sandbox, "--model", "local/m", "--name", "h",
                           "go", base_url=server.openai_url, env=env)
    assert result.returncode == 0, result.stderr
    sent_back = server.requests[1].body["messages"][-1]["content"]
    assert "PATH=" in sent_back  # the commands did run
    assert secret not in sent_back and "[REDACTED" not in sent_back  # never read, not masked
    assert secret not in result.stdout + result.stderr
    for path in (tmp_path / "home").rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


def test_step_limit(fencecall: CLI, tmp_path: Path) -> None:
    loop = [Reply("```shell\necho again\n```\n") for _ in range(5)]
    with FakeModelServer(loop) as server:
        result = fencecall("-y", "--model", "local/m", "--name", "lim", "--max-steps", "2",
                           "loop", base_url=server.openai_url)
    assert result.returncode == 5  # the step limit
    assert len(server.requests) == 2
    assert "step limit" in result.stdout
    assert log_of(tmp_path, "lim")[-1]["metadata"] == {"ending": "step-limit"}


def test_anthropic_provider_from_config(fencecall: CLI, workspace: Path,
                                        tmp_path: Path) -> None:
    native = Reply("Let me save it.", tool_calls=[{
        "id": "toolu_1", "name": "save", "arguments": {"path": "a.txt", "content": "from claude"}}])
    with FakeModelServer([native, Reply("Saved it.")]) as server:
        config = tmp_path / "config" / "fencecall" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(f'[providers.anth]\nkind = "anthropic"\nbase_url = "{server.base_url}"\n'
                          'api_key_env = "ANTH_KEY"\n')
        env = cli_env(tmp_path, server.openai_url, ANTH_KEY="anth-secret")
        result = fencecall("-y", "--format", "tool", "--model", "anth/claude-test", "save",
                           base_url=server.openai_url, env=env)
    assert result.returncode == 0, result.stderr + result.stdout
    assert (workspace / "a.txt").read_text() == "from claude\n"
    first, second = server.requests
    assert first.path == "/v1/messages"
    assert "anth-secret" in first.headers.get("x-api-key", first.headers.get("authorization", ""))
    assert {t["name"] for t in first.body["tools"]} >= {"save", "shell"}
    assistant, results = second.body["messages"][-2:]
    assert assistant["content"][1]["type"] == "tool_use"
    assert results["content"][0] == {"type": "tool_result", "tool_use_id": "toolu_1",
                                     "content": "Created a.txt (1 lines).",
                                     "cache_control": {"type": "ephemeral"}}  # the latest turn


def test_configuration_errors_are_clear(fencecall: CLI, tmp_path: Path) -> None:
    result = fencecall("hello", base_url="http://127.0.0.1:9")
    assert result.returncode == 2 and "no model configured" in result.stderr
    result = fencecall("--model", "openai/gpt-4o", "hi", base_url="http://127.0.0.1:9")
    assert "needs an API key: set OPENAI_API_KEY" in result.stderr
    result = fencecall("--model", "nosuch/x", "hi", base_url="http://127.0.0.1:9")
    assert "unknown provider 'nosuch'" in result.stderr
    unreachable = fencecall("--model", "local/m", "hi", base_url="http://127.0.0.1:9/v1")
    assert unreachable.returncode == 1 and "Connection error" in unreachable.stdout


def test_conversation_object_matches_log(tmp_path: Path, fencecall: CLI) -> None:
    with FakeModelServer([Reply("Hi!")]) as server:
        fencecall("--model", "local/m", "--name", "obj", "hello", base_url=server.openai_url)
    conversation = Conversation.open(tmp_path / "home", "obj")
    assert [(m.role, m.content) for m in conversation.messages] == [
        ("user", "hello"), ("assistant", "Hi!")]


def test_continue_list_json_and_delete(fencecall: CLI, tmp_path: Path) -> None:
    continued = fencecall("--model", "local/m", "--continue", "x", base_url="http://x")
    assert continued.returncode == 2 and "no conversation to continue" in continued.stderr
    replies = [Reply("One."), Reply("Two."), Reply("Three."), Reply("Four.")]
    with FakeModelServer(replies) as server:
        for name in ("older", "newer"):
            assert fencecall("--model", "local/m", "--name", name, f"about {name}",
                             base_url=server.openai_url).returncode == 0
        for flag, prompt in (("--continue", "and then?"), ("-c", "")):
            again = fencecall("--model", "local/m", flag, *[prompt] * bool(prompt),
                              base_url=server.openai_url, stdin="and now?")
            assert again.returncode == 0, again.stderr
            assert "resumed newer" in again.stderr
    assert [m["content"] for m in log_of(tmp_path, "newer") if m["role"] == "user"] == [
        "about newer", "and then?", "and now?"]
    listed = [json.loads(line) for line in
              fencecall("list", "--json", base_url="http://x").stdout.splitlines()]
    assert [(c["name"], c["messages"], c["first_prompt"]) for c in listed] == [
        ("newer", 6, "about newer"), ("older", 2, "about older")]
    refused = fencecall("list", "--delete", "older", "nope", base_url="http://x")
    assert refused.returncode == 2 and "no conversation called 'nope'" in refused.stderr
    deleted = fencecall("list", "--delete", "older", base_url="http://x")
    assert deleted.returncode == 0 and "Deleted older." in deleted.stdout
    assert not (tmp_path / "home" / "conversations" / "older").exists()
    assert fencecall("list", base_url="http://x").stdout.split()[0] == "newer"
