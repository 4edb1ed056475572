"""The command line with MCP servers: a whole agent conversation using an MCP tool, the tool
listing, and the config file's server tables."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fencecall.config import ConfigError, load_config

from ..cli.conftest import CLI, cli_env, fencecall, log_of
from ..fakeserver import FakeModelServer, Reply
from .conftest import FLAKY

__all__ = ["fencecall"]  # the fixture, shared with the CLI tests

TIME = f"time={sys.executable} -m mcp_server_time --local-timezone UTC"


def test_agent_uses_an_mcp_tool_end_to_end(fencecall: CLI, tmp_path: Path) -> None:
    call = '```time.get_current_time\n{"timezone": "Europe/Paris"}\n```'
    replies = [Reply(call), Reply("It is evening in Paris.")]
    with FakeModelServer(replies) as server:
        result = fencecall("--mcp", TIME, "--model", "local/m", "--name", "mcp1",
                           "what time is it in Paris?", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    prompt = server.requests[0].body["messages"][0]["content"]
    assert "## time.get_current_time" in prompt and "JSON object" in prompt
    records = log_of(tmp_path, "mcp1")
    assert [r["role"] for r in records] == ["user", "assistant", "system", "assistant"]
    assert '"timezone": "Europe/Paris"' in records[2]["content"]
    assert records[2]["metadata"]["tool"] == "time.get_current_time"
    assert records[2]["metadata"]["outcome"] == "ok"
    assert '"timezone": "Europe/Paris"' in server.requests[1].body["messages"][-1]["content"]
    assert "It is evening in Paris." in result.stdout


def test_native_calls_use_the_wire_name(fencecall: CLI, tmp_path: Path) -> None:
    replies = [Reply("", tool_calls=[{"id": "c1", "name": "time__get_current_time",
                                      "arguments": {"timezone": "UTC"}}]),
               Reply("Done.")]
    with FakeModelServer(replies) as server:
        result = fencecall("--mcp", TIME, "--format", "tool", "--model", "local/m",
                           "--name", "mcp2", "time?", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    names = [tool["function"]["name"] for tool in server.requests[0].body["tools"]]
    assert "time__get_current_time" in names
    answer = server.requests[1].body["messages"][-1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == "c1"
    assert '"timezone": "UTC"' in answer["content"]


def test_tools_command_lists_sources_and_reasons(fencecall: CLI) -> None:
    flaky = f"flaky={sys.executable} {FLAKY}"
    result = fencecall("tools", "--mcp", flaky, "--tools", "shell,flaky.echo",
                       base_url="http://127.0.0.1:9")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert "built-in" in rows["shell"] and rows["shell"].rstrip().endswith("yes")
    assert "not in the tool allowlist" in rows["save"]
    assert "mcp server flaky" in rows["flaky.echo"] and "read-only" in rows["flaky.echo"]
    assert "not in the tool allowlist" in rows["flaky.add"]
    assert "12 tools (listed from the server)" in result.stdout


def test_config_declares_servers_and_their_secrets(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[mcp.servers.time]\ncommand = "python"\nargs = ["-m", "mcp_server_time"]\n'
                    'eager = true\ncall_timeout = 5\n\n[mcp.servers.docs]\n'
                    'url = "http://127.0.0.1:8765/mcp"\n'
                    'headers = { Authorization = "Bearer ${DOCS_TOKEN}" }\n')
    config = load_config({"FENCECALL_CONFIG": str(path), "DOCS_TOKEN": "tok"})
    time_server, docs = config.mcp_servers
    assert (time_server.command, time_server.args, time_server.eager,
            time_server.call_timeout) == ("python", ("-m", "mcp_server_time"), True, 5.0)
    assert docs.headers == {"Authorization": "Bearer tok"} and docs.transport == "http"
    assert "DOCS_TOKEN" in config.secret_env_names()


@pytest.mark.parametrize(("table", "message"), [
    ('[mcp.servers.x]\nargs = ["a"]\n', "give either command or url"),
    ('[mcp.servers.x]\ncommand = "a"\nurl = "http://h"\n', "give either command or url"),
    ('[mcp.servers.x]\nurl = "ftp://h"\n', "must start with http"),
    ('[mcp.servers.x]\ncommand = "a"\ncomand = "b"\n',
     "mcp.servers.x.comand: unknown setting; did you mean command"),
    ('[mcp.servers.x]\ncommand = "a"\nenv = { T = "${UNSET_VAR}" }\n', "${UNSET_VAR} is not set"),
    ('[mcp.servers.x]\ncommand = "a"\nconfirm = "sometimes"\n', "confirm must be one of"),
    ('[mcp.servers.x]\ncommand = "a"\ncall_timeout = 0\n', "call_timeout must be above 0"),
    ('[mcp.servers."bad name"]\ncommand = "a"\n', "use letters, digits"),
    ('[mcp]\nserver = 1\n', "mcp.server: unknown setting; did you mean servers"),
    ('[mcp]\nservers = 1\n', "only [mcp.servers.NAME] tables"),
])
def test_config_errors_name_the_key(tmp_path: Path, table: str, message: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(table)
    with pytest.raises(ConfigError) as caught:
        load_config({"FENCECALL_CONFIG": str(path)})
    assert message in str(caught.value) and str(path) in str(caught.value)


def test_bad_mcp_flag_is_a_usage_error(fencecall: CLI, tmp_path: Path) -> None:
    result = fencecall("tools", "--mcp", "no-equals-sign", base_url="http://127.0.0.1:9",
                       env=cli_env(tmp_path, "http://127.0.0.1:9"))
    assert result.returncode == 2 and "write NAME=COMMAND or NAME=URL" in result.stderr


def test_a_named_tool_of_a_failed_server_says_why(fencecall: CLI) -> None:
    result = fencecall("tools", "--mcp", "gone=/nonexistent/mcp-server", "--tools", "gone.tool",
                       base_url="http://127.0.0.1:9")
    assert result.returncode == 2
    assert "could not start" in result.stderr and "/nonexistent/mcp-server" in result.stderr
    assert "unknown tool 'gone.tool'" in result.stderr
