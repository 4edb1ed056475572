"""Toolchains: allowlists, discovery, plugins, load_from_file and per-thread isolation."""

from __future__ import annotations

import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from fencecall.tools import (
    Parameter,
    Toolchain,
    ToolLoadError,
    ToolSpec,
    UnknownToolError,
    load_from_file,
    plugin_tools,
)

from ..sample_tools import CATALOGUE


def names(allowlist: list[str] | None) -> list[str]:
    return Toolchain.build(allowlist, catalogue=CATALOGUE).names()


def test_no_allowlist_loads_available_default_tools_sorted() -> None:
    assert names(None) == ["add", "boom", "echo", "interrupt", "notes", "write"]


def test_sorting_by_load_priority_then_name() -> None:
    late = ToolSpec("aaa", "x", load_priority=10)
    early = ToolSpec("zzz", "x", load_priority=-1)
    assert Toolchain.build(catalogue=[late, *CATALOGUE, early]).names()[0] == "zzz"
    assert Toolchain.build(catalogue=[late, *CATALOGUE, early]).names()[-1] == "aaa"


def test_names_globs_and_hints() -> None:
    assert names(["echo", "add"]) == ["add", "echo"]
    assert names(["*o*"]) == ["boom", "echo", "notes"]
    assert names(["hint:read-only", "hint:math"]) == ["add", "echo"]


def test_disabled_by_default_only_when_named() -> None:
    assert "secret" not in names(None)
    with pytest.warns(UserWarning, match="matched no available tool"):
        assert "secret" not in names(["s*"])
    assert names(["secret"]) == ["secret"]


def test_unknown_name_is_an_error_and_unavailable_a_warning() -> None:
    with pytest.raises(UnknownToolError, match="unknown tool 'zzz'; known: add, "):
        names(["zzz"])
    with pytest.raises(UnknownToolError, match="unknown tool 'ech'; did you mean echo"):
        names(["ech"])
    with pytest.raises(UnknownToolError, match="no tool has the hint 'nonsense'; known: "):
        names(["hint:nonsense"])
    with pytest.raises(UnknownToolError, match="no tool has the hint 'mat'; did you mean math"):
        names(["hint:mat"])
    with pytest.warns(UserWarning, match="matched no available tool"):  # a failed server's
        assert names(["hint:mcp:gone"]) == []
    with pytest.warns(UserWarning, match="'missing' is not available"):
        assert names(["missing", "echo"]) == ["echo"]
    with pytest.warns(UserWarning, match="matched no available tool"):
        assert names(["zz*"]) == []


def test_langtag_dispatch_uses_first_word_and_block_types() -> None:
    chain = Toolchain.build(catalogue=CATALOGUE)
    spec = chain.for_langtag("say hello world")
    assert spec is not None and spec.name == "echo"
    assert chain.for_langtag("python") is None
    assert chain.for_langtag("") is None


def test_init_returns_the_final_spec() -> None:
    calls: list[int] = []

    def init() -> ToolSpec:
        calls.append(1)
        return ToolSpec("late", "initialised", execute=lambda inv: "ok")

    chain = Toolchain.build(catalogue=[ToolSpec("late", "stub", init=init)])
    assert chain.tools[0].desc == "initialised" and calls == [1]


TOOL_FILE = """
from fencecall.tools import ToolSpec
greet = ToolSpec("greet", "Greets.", execute=lambda inv: "hello from {which}")
"""


def _write_tool(folder: Path, which: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tool.py"
    path.write_text(TOOL_FILE.format(which=which))
    return path


def test_load_from_file_and_unique_module_names(tmp_path: Path) -> None:
    first = load_from_file(_write_tool(tmp_path / "one", "one"))
    second = load_from_file(_write_tool(tmp_path / "two", "two"))
    assert [s.name for s in first] == ["greet"]
    from fencecall.execution import Session

    for specs, which in ((first, "one"), (second, "two")):
        with Session(Toolchain(tuple(specs)), workspace=tmp_path) as s:
            assert [m.content for m in s.execute("```greet\n```")] == [f"hello from {which}"]


def test_load_from_file_refusals(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x = 1")
    with pytest.raises(ToolLoadError, match=r"not a \.py file"):
        load_from_file(tmp_path / "notes.txt")
    with pytest.raises(ToolLoadError, match="no such file"):
        load_from_file(tmp_path / "absent.py")
    (tmp_path / "dir.py").mkdir()
    with pytest.raises(ToolLoadError, match="not a regular file"):
        load_from_file(tmp_path / "dir.py")
    (tmp_path / "empty.py").write_text("x = 1\n")
    with pytest.raises(ToolLoadError, match="defines no ToolSpec"):
        load_from_file(tmp_path / "empty.py")
    (tmp_path / "broken.py").write_text("raise SystemError('bad plugin')\n")
    with pytest.raises(ToolLoadError, match="failed to load: SystemError: bad plugin"):
        load_from_file(tmp_path / "broken.py")
    (tmp_path / "disguised.py").symlink_to(tmp_path / "notes.txt")
    with pytest.raises(ToolLoadError, match=r"not a \.py file"):
        load_from_file(tmp_path / "disguised.py")


def test_load_from_file_refuses_symlink_escape(tmp_path: Path) -> None:
    outside = _write_tool(tmp_path / "elsewhere", "outside")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "tool.py").symlink_to(outside)
    with pytest.raises(ToolLoadError, match="outside"):
        load_from_file("tool.py", root=workspace)
    with pytest.raises(ToolLoadError, match="outside"):
        Toolchain.build(["tool.py"], catalogue=CATALOGUE, root=workspace)
    inside = _write_tool(workspace / "tools", "inside")
    assert Toolchain.build([str(inside.relative_to(workspace))], catalogue=CATALOGUE,
                           root=workspace).names() == ["greet"]


PLUGIN = """
from fencecall.tools import ToolSpec
tool = ToolSpec("plugged", "From a plugin.", execute=lambda inv: "plugged in")
"""


def _install_distribution(site: Path, name: str, entry: str, code: str) -> None:
    """Lay out an installed distribution (dist-info with entry points) on ``site``."""
    (site / f"{name}.py").write_text(code)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[fencecall.tools]\n{entry}\n")


def test_plugin_via_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_distribution(tmp_path, "fc_plugin_demo", "plugged = fc_plugin_demo:tool", PLUGIN)
    _install_distribution(tmp_path, "fc_plugin_broken", "broken = fc_plugin_broken:missing",
                          "x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = [s.name for s in plugin_tools()]
    assert "plugged" in found
    assert any("skipping plugin broken" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chain = Toolchain.build(["plugged"])
    assert chain.names() == ["plugged"]
    sys.modules.pop("fc_plugin_demo", None)


def test_a_broken_example_does_not_break_the_prompt() -> None:
    from fencecall.tools import Example

    odd = ToolSpec("odd", "Has a bad example.", execute=lambda inv: "x",
                   parameters=(Parameter("n", "integer"),),
                   examples=(Example.call(n="not a number"),))
    text = Toolchain((odd,)).instructions("markdown")
    assert "## odd" in text and "Examples" not in text


def test_only_the_example_a_format_cannot_show_is_left_out() -> None:
    from fencecall.tools import Example

    tool = ToolSpec("ask", "Asks.", execute=lambda inv: "x",
                    parameters=(Parameter("q"), Parameter("mode", required=False)),
                    content_param="q",
                    examples=(Example.user("plain"), Example.call(q="why?"),
                              Example.result("because"),
                              Example.user("with a mode"), Example.call(q="how?", mode="two words"),
                              Example.result("like so")))
    markdown = Toolchain((tool,)).instructions("markdown")
    assert "User: plain\n\nAssistant:\n```ask\nwhy?\n```\n\nSystem: because" in markdown
    assert "with a mode" not in markdown and "like so" not in markdown
    tool_format = Toolchain((tool,)).instructions("tool")
    assert "with a mode" in tool_format and '"mode": "two words"' in tool_format


def test_instructions_render_examples_in_each_format() -> None:
    chain = Toolchain.build(["echo", "add"], catalogue=CATALOGUE)
    markdown = chain.instructions("markdown")
    assert "## echo" in markdown and "## add" in markdown
    assert "```echo\nhi\n```" in markdown and "User: say hi" in markdown
    assert "Arguments: a: integer, b: integer?, mode: string?." in markdown
    xml = chain.instructions("xml")
    assert "<tool-use>\n<echo>\nhi\n</echo>\n</tool-use>" in xml
    tool = chain.instructions("tool")
    assert '@echo(call_1): {"text": "hi"}' in tool
    assert textwrap.dedent(tool).startswith("You can use tools through function calling")


def test_tools_come_from_configured_packages_recursively(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / "acme_tools" / "sub"
    deep.mkdir(parents=True)
    (tmp_path / "acme_tools" / "__init__.py").write_text(
        "from fencecall.tools import ToolSpec\ntop = ToolSpec('top', 'At the top.', "
        "execute=lambda inv: 't')\n")
    (deep / "__init__.py").write_text("")
    (deep / "more.py").write_text("from fencecall.tools import ToolSpec\n"
                                  "deep = ToolSpec('deep', 'Deep down.', "
                                  "execute=lambda inv: 'd')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    chain = Toolchain.build(["top", "deep"], catalogue=CATALOGUE, packages=["acme_tools"])
    assert chain.names() == ["deep", "top"]
    with pytest.raises(ToolLoadError, match="'no_such_pkg' cannot be imported"):
        Toolchain.build(catalogue=CATALOGUE, packages=["no_such_pkg"])


def test_only_a_path_that_may_declare_plugins_reads_installed_metadata(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fencecall.tools.loading import ENTRY_POINT_GROUP, _declared_on_path

    site = tmp_path / "site"
    (site / "other-1.0.dist-info").mkdir(parents=True)
    (site / "other-1.0.dist-info" / "entry_points.txt").write_text(
        "[console_scripts]\nother = other:main\n")
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "missing")])
    assert not _declared_on_path(ENTRY_POINT_GROUP)
    (site / "plug-1.0.dist-info").mkdir()
    (site / "plug-1.0.dist-info" / "entry_points.txt").write_text(
        "[console_scripts]\nx = y:z\n\n [ fencecall.tools ]\nplugged = plug:tool\n")
    assert _declared_on_path(ENTRY_POINT_GROUP)
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))
    monkeypatch.setattr(sys, "path", [str(archive)])
    assert _declared_on_path(ENTRY_POINT_GROUP)  # only importlib.metadata reads a zip


def test_the_known_tools_left_out_are_found_by_name_and_langtag() -> None:
    chain = Toolchain.build(["echo"], catalogue=CATALOGUE)
    assert [spec.name for spec in chain.left_out] == [
        "write", "boom", "interrupt", "add", "secret", "missing", "notes"]
    add, secret, missing = (chain.not_loaded(name) for name in ("add", "secret", "missing"))
    assert (add and add.name, secret and secret.name, missing and missing.name) == (
        "add", "secret", "missing")  # left out by the allowlist, off by default, unavailable
    assert chain.not_loaded("add 1 2", langtag=True) is add
    assert chain.not_loaded("say", langtag=True) is None  # the loaded echo answers to it
    assert chain.not_loaded("notes", langtag=True) is None  # informational: an example
    assert chain.not_loaded("json", langtag=True) is chain.not_loaded("", langtag=True) is None
    assert Toolchain(chain.tools).not_loaded("add") is None  # made by hand: none left out
