"""MCP servers' tools in fencecall: real server processes over stdio and Streamable HTTP,
called through the one execution pipeline, in every format."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from fencecall.execution import Session
from fencecall.execution.confirm_policy import auto_no
from fencecall.message import Status
from fencecall.tools import Toolchain
from fencecall.tools.mcp import McpServerConfig, McpServers

from .conftest import alive, flaky, session_with


def _run(session: Session, reply: str, fmt: str = "markdown") -> list[tuple[str | None, str]]:
    return [(m.status, m.content) for m in session.execute(reply, fmt)]


def test_tools_are_listed_with_schema_hints_and_confirmation(servers: McpServers) -> None:
    tools = {spec.name: spec for spec in servers.tools(None)}
    assert {"flaky.echo", "flaky.add", "flaky.wipe", "flaky.crash"} <= set(tools)
    add = tools["flaky.add"]
    assert add.desc == "Add two integers."
    assert [(p.name, p.type, p.required) for p in add.parameters] == [
        ("a", "integer", True), ("b", "integer", True)]
    assert add.function_schema("tool")["name"] == "flaky__add"
    assert add.function_schema("tool")["parameters"]["required"] == ["a", "b"]
    assert "read-only" in add.hints and add.confirm is False
    assert "destructive" in tools["flaky.wipe"].hints and tools["flaky.wipe"].confirm is True
    assert tools["flaky.count"].confirm is True  # no hint at all: ask, as the spec's default


@pytest.mark.parametrize("reply", [
    "```flaky.add\n{\"a\": 2, \"b\": 40}\n```\n",
    "<tool-use><flaky.add>{\"a\": 2, \"b\": 40}</flaky.add></tool-use>",
    "<function_calls><invoke name=\"flaky.add\"><parameter name=\"a\">2</parameter>"
    "<parameter name=\"b\">40</parameter></invoke></function_calls>",
    "@flaky.add(call_1): {\"a\": 2, \"b\": 40}",
])
def test_callable_in_every_format(servers: McpServers, workspace: Path, reply: str) -> None:
    fmt = "markdown" if reply.startswith("```") else "tool" if reply.startswith("@") else "xml"
    with session_with(servers, workspace) as session:
        assert _run(session, reply, fmt) == [(None, "42")]


def test_one_text_parameter_takes_the_block_body(servers: McpServers, workspace: Path) -> None:
    with session_with(servers, workspace) as session:
        assert _run(session, "```flaky.echo\nhello {there}\n```\n") == [(None, "hello {there}")]
        assert _run(session, '```flaky.echo\n{"text": "as JSON"}\n```\n') == [(None, "as JSON")]


def test_arguments_are_validated_before_the_server_sees_them(servers: McpServers,
                                                             workspace: Path) -> None:
    with session_with(servers, workspace) as session:
        [(status, text)] = _run(session, '```flaky.add\n{"a": 2, "b": "x"}\n```\n')
        assert status == Status.ERROR and "'b' must be an integer" in text
        [(status, text)] = _run(session, '```flaky.add\n{"a": 2}\n```\n')
        assert status == Status.ERROR and "missing required argument(s): b" in text
        [(status, text)] = _run(session, "```flaky.add\nnot json\n```\n")
        assert status == Status.ERROR and "must be a JSON object of arguments" in text


def test_results_keep_their_structure(servers: McpServers, workspace: Path) -> None:
    with session_with(servers, workspace) as session:
        [(status, text)] = _run(session, "```flaky.picture\n```\n")
        assert status is None and text.startswith("a red pixel\n[image (image/png, 70 bytes) "
                                                  "saved to mcp-files/flaky.picture-")
        saved = re.search(r"saved to (\S+)\]", text)
        assert saved and (workspace / saved.group(1)).read_bytes().startswith(b"\x89PNG")
        [(status, text)] = _run(session, "```flaky.weather\nOslo\n```\n")
        assert '"celsius": 21.5' in text
        [(status, text)] = _run(session, "```flaky.fail\nboom\n```\n")
        assert status == Status.ERROR and text.startswith("flaky.fail reported an error:")


def test_a_result_holding_a_lone_surrogate_comes_through(servers: McpServers,
                                                        workspace: Path) -> None:
    """The SDK's JSON reader refuses a line with a lone surrogate escape, so the answer was
    lost and the call waited out its timeout: it is read, and its text made safe."""
    with session_with(servers, workspace) as session:
        [(status, text)] = _run(session, "```flaky.half_emoji\n```\n")
    assert status is None
    assert text == ("cut \ufffd here\n[1 character that could not be encoded (U+D83D) was "
                    "replaced with U+FFFD]")


def test_a_linked_files_folder_is_not_followed(servers: McpServers, workspace: Path,
                                               tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "mcp-files").symlink_to(outside)
    with session_with(servers, workspace) as session:
        [(_, text)] = _run(session, "```flaky.picture\n```\n")
    assert "not saved" in text and not list(outside.iterdir())


def test_a_crash_mid_call_is_reported_and_the_server_restarted(servers: McpServers,
                                                               workspace: Path) -> None:
    with session_with(servers, workspace) as session:
        [(_, first)] = _run(session, "```flaky.count\n```\n")
        [(status, text)] = _run(session, "```flaky.crash\n```\n")
        assert status == Status.ERROR
        assert "closed the connection (it exited or crashed)" in text
        assert "about to crash" in text  # its stderr, quoted
        assert "started again on the next call" in text
        [(_, after)] = _run(session, "```flaky.count\n```\n")
    assert first.startswith("count=1") and after.startswith("count=1")
    assert first.split("pid=")[1] != after.split("pid=")[1]
    assert servers.state("flaky").restarts == 1


def test_a_hanging_call_times_out_and_the_server_goes_on(servers: McpServers,
                                                         workspace: Path) -> None:
    with session_with(servers, workspace) as session:
        [(status, text)] = _run(session, '```flaky.hang\n{"seconds": 30}\n```\n')
        assert status == Status.ERROR and "did not answer within 2 s" in text
        assert _run(session, "```flaky.echo\nstill here\n```\n") == [(None, "still here")]


def test_garbage_on_stdout_is_ignored_and_counted(servers: McpServers, workspace: Path) -> None:
    with session_with(servers, workspace) as session:
        assert _run(session, "```flaky.garbage\n```\n") == [(None, "answered after garbage")]
        assert _run(session, "```flaky.echo\nok\n```\n") == [(None, "ok")]
    assert servers.state("flaky").stray_lines == 3  # the start-up banner and two lines


def test_sessions_have_their_own_server_and_close_it(servers: McpServers,
                                                     workspace: Path) -> None:
    one = session_with(servers, workspace)
    two = session_with(servers, workspace)
    [(_, a)] = _run(one, "```flaky.count\n```\n")
    [(_, b)] = _run(two, "```flaky.count\n```\n")
    [(_, c)] = _run(one, "```flaky.count\n```\n")
    assert a.startswith("count=1") and b.startswith("count=1") and c.startswith("count=2")
    pids = {int(text.split("pid=")[1]) for text in (a, b)}
    assert len(pids) == 2 and all(alive(pid) for pid in pids)
    one.close()
    two.close()
    assert not any(alive(pid) for pid in pids)


def test_confirmation_follows_the_hints(servers: McpServers, workspace: Path) -> None:
    with session_with(servers, workspace, confirm=auto_no) as session:
        assert _run(session, "```flaky.echo\nread-only runs\n```\n") == [(None, "read-only runs")]
        [(status, _)] = _run(session, "```flaky.wipe\neverything\n```\n")
        assert status == Status.DECLINED


def test_listing_is_cached_so_the_server_starts_on_first_use(tmp_path: Path,
                                                             workspace: Path) -> None:
    env = {"PATH": "/usr/bin:/bin"}
    with McpServers([flaky()], env=env, roots=[workspace], cache_dir=tmp_path / "c") as first:
        assert first.tools(None) and first.state("flaky").listed_from == "server"
    with McpServers([flaky()], env=env, roots=[workspace], cache_dir=tmp_path / "c") as second:
        names = [spec.name for spec in second.tools(None)]
        assert "flaky.echo" in names and second.state("flaky").listed_from == "cache"
        with session_with(second, workspace) as session:
            assert _run(session, "```flaky.echo\nlazy\n```\n") == [(None, "lazy")]


def test_a_server_that_cannot_start_is_left_out_with_its_reason(tmp_path: Path,
                                                                 workspace: Path) -> None:
    broken = McpServerConfig("broken", command=sys.executable, args=("-c", "import sys; "
                             "print('no such module: x', file=sys.stderr); sys.exit(1)"))
    missing = McpServerConfig("missing", command="/nonexistent/server")
    slow = McpServerConfig("slow", command=sys.executable,
                           args=("-c", "import time; time.sleep(60)"), start_timeout=1)
    with McpServers([broken, missing, slow], env={}, roots=[workspace]) as found, \
            pytest.warns(UserWarning) as caught:
        assert found.tools(None) == []
    said = "\n".join(str(w.message) for w in caught)
    assert "no such module: x" in said
    assert "could not start" in said and "/nonexistent/server" in said
    assert "did not start within 1 s" in said


def test_an_allowlist_without_the_server_warns_and_starts_nothing(tmp_path: Path,
                                                                  workspace: Path) -> None:
    with McpServers([flaky()], env={}, roots=[workspace]) as found:
        with pytest.warns(UserWarning, match=r"add 'flaky\.\*' to use them"):
            assert found.tools(["shell", "save"]) == []
        assert found.state("flaky").listed_from is None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert "flaky.echo" in {s.name for s in found.tools(["flaky.echo"])}
        chain = Toolchain.build(["flaky.echo"], extra=found.tools(["flaky.echo"]), catalogue=[])
        assert chain.names() == ["flaky.echo"]


def test_streamable_http_server(http_flaky: str, tmp_path: Path, workspace: Path) -> None:
    config = McpServerConfig("web", url=http_flaky, headers={"X-Test": "1"})
    with McpServers([config], env={}, roots=[workspace]) as found:
        chain = Toolchain.build(["web.*"], extra=found.tools(None), catalogue=[])
        from fencecall.execution import Session
        from fencecall.execution.confirm_policy import auto_yes

        with Session(chain, workspace=workspace, sandbox="off", confirm=auto_yes) as session:
            assert _run(session, '```web.add\n{"a": 1, "b": 2}\n```\n') == [(None, "3")]


def test_reference_time_server() -> None:
    config = McpServerConfig("time", command=sys.executable,
                             args=("-m", "mcp_server_time", "--local-timezone", "UTC"))
    workspace = Path.cwd()
    with McpServers([config], env={}, roots=[workspace]) as found:
        tools = {spec.name: spec for spec in found.tools(None)}
        assert {"time.get_current_time", "time.convert_time"} <= set(tools)
        with session_with(found, workspace, ["time.*"]) as session:
            [(status, text)] = _run(session, "```time.get_current_time\nUTC\n```\n")
    assert status is None and '"timezone": "UTC"' in text and '"datetime"' in text


def test_reference_git_server(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "new.txt").write_text("hello\n")
    config = McpServerConfig("git", command=sys.executable,
                             args=("-m", "mcp_server_git", "--repository", str(repo)))
    with McpServers([config], env={"PATH": "/usr/bin:/bin"}, roots=[repo]) as found:
        tools = {spec.name for spec in found.tools(None)}
        assert "git.git_status" in tools
        with session_with(found, repo, ["git.git_status"]) as session:
            [(status, text)] = _run(session, "```git.git_status\n" + str(repo) + "\n```\n")
    assert status is None and "new.txt" in text


def test_listing_twice_starts_the_server_once(tmp_path: Path, workspace: Path) -> None:
    with McpServers([flaky()], env={}, roots=[workspace]) as found:
        found.tools(None)
        spare = found._spares["flaky"]
        found.tools(["flaky.*"])
        assert found._spares["flaky"] is spare
