"""The trust boundary through a real Session: what a hostile reply can and cannot do.

Nothing here trusts the read-only classifier. Each bypass class that once ran unconfirmed
still runs unconfirmed (the classifier calls it read-only) but now inside a read-only
sandbox, so it cannot write, start a network connection, or read a secret.
"""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fencecall.execution import auto_no, auto_yes
from fencecall.message import Status
from fencecall.sandbox import _bwrap as sandbox_module
from fencecall.sandbox._bwrap import SandboxPolicy, SandboxSupport, sandbox_support
from fencecall.tools.runtime.shell_policy import is_read_only

from ..support import F, needs_bwrap, tool_session

TOOLS = ("shell", "ipython")


def shell(command: str) -> str:
    return f"{F}shell\n{command}\n{F}\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


# Commands the classifier calls read-only although each writes, runs a program or talks to
# the network in bash: the classes the issue names, kept here as a regression list.
BYPASSES = {
    "hash inside a word": "echo x#; touch {target}",
    "attached -o option": "sort -o{target} /etc/hostname",
    "output file as an operand": "uniq /etc/hostname {target}",
    "output file after a pipe": "cut -c1 /etc/hostname | uniq - {target}",
}


@needs_bwrap
@pytest.mark.parametrize("name", sorted(BYPASSES))
def test_a_misclassified_command_runs_unasked_but_cannot_write(name: str, workspace: Path,
                                                               outside: Path) -> None:
    for target in (workspace / "pwned", outside / "pwned"):
        command = BYPASSES[name].format(target=target)
        assert is_read_only(command), "the classifier must still be fooled for this to prove "\
            "anything; replace the example with one that fools it"
        with tool_session(workspace, TOOLS, confirm=auto_no) as session:
            [result] = list(session.execute(shell(command)))
        assert result.status is None  # it ran, unasked
        assert not target.exists(), result.content


@needs_bwrap
def test_declined_calls_never_run_and_say_so(workspace: Path) -> None:
    with tool_session(workspace, TOOLS, confirm=auto_no) as session:
        [result] = list(session.execute(shell(f"touch {workspace / 'made'}")))
    assert result.status is Status.DECLINED
    assert not (workspace / "made").exists()


@needs_bwrap
def test_confirmed_shell_writes_only_inside_the_workspace(workspace: Path,
                                                          outside: Path) -> None:
    with tool_session(workspace, TOOLS, confirm=auto_yes) as session:
        results = list(session.execute(
            shell("echo in > inside.txt") +
            shell(f"echo out > {outside / 'a'}; cp inside.txt {outside / 'b'}; "
                  f"ln -s {outside} link; echo through > link/c; "
                  f"python3 -c \"open('{outside / 'd'}', 'w')\"")))
    assert (workspace / "inside.txt").read_text() == "in\n"
    assert sorted(p.name for p in outside.iterdir()) == []
    assert results[1].exit_code != 0


@needs_bwrap
def test_a_misclassified_git_command_cannot_change_the_repository(workspace: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    subprocess.run(["git", "-C", str(workspace), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-q", "--allow-empty", "-m", "first"], check=True)
    assert is_read_only("git branch evil")
    with tool_session(workspace, TOOLS, confirm=auto_no) as session:
        [result] = list(session.execute(shell("git branch evil")))
    assert result.status is None
    assert not (workspace / ".git/refs/heads/evil").exists()
    assert "Read-only file system" in result.content


@needs_bwrap
def test_python_tool_is_sandboxed_too(workspace: Path, outside: Path) -> None:
    code = (f"open({str(workspace / 'in.txt')!r}, 'w').write('ok')\n"
            f"open({str(outside / 'out.txt')!r}, 'w').write('no')")
    with tool_session(workspace, TOOLS, confirm=auto_yes) as session:
        [result] = list(session.execute(f"{F}ipython\n{code}\n{F}\n"))
    assert (workspace / "in.txt").read_text() == "ok"
    assert not (outside / "out.txt").exists()
    assert result.metadata["raised"]


@pytest.fixture
def local_server() -> Iterator[int]:
    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"reached")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@needs_bwrap
def test_network_needs_the_network_option(workspace: Path, local_server: int) -> None:
    fetch = (f"python3 -c \"import urllib.request as u; "
             f"print(u.urlopen('http://127.0.0.1:{local_server}/', timeout=3).read())\"")
    with tool_session(workspace, TOOLS, confirm=auto_yes) as session:
        [closed] = list(session.execute(shell(fetch)))
    with tool_session(workspace, TOOLS, confirm=auto_yes, network=True) as session:
        [opened] = list(session.execute(shell(fetch)))
    assert "reached" not in closed.content and "Connection refused" in closed.content
    assert "b'reached'" in opened.content


@needs_bwrap
def test_read_only_policy_protects_the_workspace_too(workspace: Path) -> None:
    (workspace / "keep.txt").write_text("original\n")
    with tool_session(workspace, TOOLS, confirm=auto_yes, sandbox="read-only") as session:
        [result] = list(session.execute(shell("echo changed > keep.txt; rm -f keep.txt")))
    assert (workspace / "keep.txt").read_text() == "original\n"
    assert "Read-only file system" in result.content


SECRET = "sk-test-0123456789abcdef"


@pytest.mark.parametrize("policy", ["workspace-write", "off"])
def test_tools_never_see_secrets(policy: str, workspace: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    if policy != "off" and not sandbox_support().available:
        pytest.skip(f"no sandbox here: {sandbox_support().reason}")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("UNLISTED_VARIABLE", "plain")
    reply = (shell("env; echo ---; printenv OPENAI_API_KEY UNLISTED_VARIABLE; echo $PATH")
             + f"{F}ipython\nimport os\nsorted(os.environ)\n{F}\n")
    with tool_session(workspace, TOOLS, confirm=auto_yes, sandbox=policy,
                     secrets={"OPENAI_API_KEY": SECRET}) as session:
        results = [m.content for m in session.execute(reply)]
    assert all(SECRET not in text and "OPENAI_API_KEY=" not in text for text in results)
    assert "'OPENAI_API_KEY'" not in results[1]
    assert "UNLISTED_VARIABLE=" not in results[0] and "'UNLISTED_VARIABLE'" not in results[1]
    assert "PATH=" in results[0]


def test_known_secret_values_are_redacted_from_results(workspace: Path) -> None:
    (workspace / ".env").write_text(f"TOKEN={SECRET}\n")
    with tool_session(workspace, TOOLS, confirm=auto_yes, sandbox="off",
                     secrets={"MY_TOKEN": SECRET}) as session:
        [result] = list(session.execute(shell("cat .env")))
    assert SECRET not in result.content
    assert "TOKEN=[REDACTED:MY_TOKEN]" in result.content


def test_without_bwrap_nothing_runs_unasked(workspace: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    missing = SandboxSupport(False, "bwrap (bubblewrap) is not installed; install it with "
                                    "`apt-get install -y bubblewrap`.")
    monkeypatch.setattr(sandbox_module, "sandbox_support", lambda: missing)
    with pytest.warns(RuntimeWarning, match="apt-get install -y bubblewrap"):
        session = tool_session(workspace, TOOLS, confirm=auto_no)
    with session:
        assert session.sandbox.policy is SandboxPolicy.OFF
        [result] = list(session.execute(shell("ls")))
    assert result.status is Status.DECLINED


@needs_bwrap
def test_programs_under_a_masked_tmp_stay_runnable(workspace: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A virtual environment or checkout under /tmp (a CI job's) is bound back read-only."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    tool = bin_dir / "hello-from-venv"
    tool.write_text("#!/bin/sh\necho hello from the venv\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    sandbox_module._runtime_paths.cache_clear()
    try:
        with tool_session(workspace, TOOLS, confirm=auto_yes) as session:
            [result] = list(session.execute(shell(f"hello-from-venv; touch {bin_dir}/x")))
    finally:
        sandbox_module._runtime_paths.cache_clear()
    assert "hello from the venv" in result.content
    assert not (bin_dir / "x").exists()


@needs_bwrap
@pytest.mark.parametrize("nested", ["workspace inside a root", "root inside the workspace"])
def test_a_nested_root_swapped_for_a_link_never_binds_the_outside(nested: str, tmp_path: Path,
                                                                 outside: Path) -> None:
    """A root inside another writable root has a path the model can change: it moves a
    folder on it aside, puts a link in its place and restarts the shell. The sandbox binds
    only outermost roots, at the real paths they had, so the link leads nowhere."""
    (outside / "victim.txt").write_text("original\n")
    if nested == "workspace inside a root":
        outer = tmp_path / "project"
        workspace, extra = outer / "x" / "ws", outer
        swap = f"cd {outer} && mv x y && mkdir x && ln -s {outside} x/ws; exit"
    else:
        workspace = tmp_path / "ws"
        extra = workspace / "a" / "sub"
        swap = f"cd {workspace} && mv a b && mkdir a && ln -s {outside} a/sub; exit"
    workspace.mkdir(parents=True)
    extra.mkdir(parents=True, exist_ok=True)
    with tool_session(workspace, TOOLS, confirm=auto_yes, extra_roots=[extra]) as session:
        for command in (f"echo hacked > {outside}/victim.txt", swap,
                        f"echo hacked > {outside}/victim.txt"):
            list(session.execute(shell(command)))
    assert (outside / "victim.txt").read_text() == "original\n"
