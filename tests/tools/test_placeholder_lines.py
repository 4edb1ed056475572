"""A placeholder line ("# ... rest of the code") never replaces a real file, and is never
appended; code and prose that only look like one ("def f(): ...", "...rest,") are written."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fencecall.message import Status
from fencecall.tools import ConfirmRequest
from fencecall.tools.builtin.placeholders import Kind, kind_of, placeholder_lines

from ..support import F, tool_session
from .conftest import Run

# Latin-1 bytes and CRLF line ends: a refused call must leave every byte as it was.
ORIGINAL = b"caf\xe9 = 1\r\ndef main():\r\n    work()\r\n"

# (file, content, number and text of the first placeholder line)
REFUSED = [
    ("app.py", "def main():\n    better()\n# ...\n", 3, "# ..."),
    ("app.js", "function a() {}\n// ...\nfunction c() {}\n", 2, "// ..."),
    ("app.c", "/* ... */\nint main(void) { return 0; }\n", 1, "/* ... */"),
    ("page.html", "<main>\n  <!-- ... -->\n</main>\n", 2, "<!-- ... -->"),
    ("app.py", "import os\n...\ndef new(): ...\n", 2, "..."),
    ("app.py", "def main():\n    setup()\n    ...\n    finish()\n", 3, "..."),
    ("app.py", "class A:\n    def a(self):\n        return 1\n...\n", 4, "..."),
    ("app.go", "package main\n\n…\n", 3, "…"),
    ("app.js", "const xs = [\n  1,\n  [...]\n];\n", 3, "[...]"),
    ("app.jsx", "<div>\n  {/* ... */}\n</div>\n", 2, "{/* ... */}"),
    ("app.py", "x = 1\n# ... rest of the code ...\n", 2, "# ... rest of the code ..."),
    ("app.js", "a();\n// rest of file unchanged\n", 2, "// rest of file unchanged"),
    ("app.py", "x = 1\n# (rest of the file unchanged)\n", 2, "# (rest of the file unchanged)"),
    ("app.c", "int x;\n/* existing code */\n", 2, "/* existing code */"),
    ("page.html", "<p>hi</p>\n<!-- rest of content -->\n", 2, "<!-- rest of content -->"),
    ("app.ts", "class A {\n  a() {}\n  // ... other methods ...\n}\n", 3,
     "// ... other methods ..."),
    ("test_app.py", "def test_a():\n    assert a()\n\n# ... more tests\n", 4, "# ... more tests"),
    ("app.js", "/*\n * ... existing code ...\n */\nrun();\n", 2, "* ... existing code ..."),
    ("app.rs", "fn main() {\n    // … existing code …\n}\n", 2, "// … existing code …"),
    ("app.py", "def f():\n    x = 1\n    # code remains the same\n", 3, "# code remains the same"),
    ("app.py", "x = 1\n... rest of the code\n", 2, "... rest of the code"),
    ("app.py", "x = 1\n...rest of the code unchanged\n", 2, "...rest of the code unchanged"),
    ("app.sql", "SELECT 1;\n-- ...\n", 2, "-- ..."),
    ("conf.yaml", "a: 1\n# ...\n", 2, "# ..."),
    ("README.md", "# Title\n\n<!-- rest of content -->\n", 3, "<!-- rest of content -->"),
    ("README.md", "New intro.\n\n... rest of the document unchanged ...\n", 3,
     "... rest of the document unchanged ..."),
    ("notes.txt", "First point.\n(rest of the file unchanged)\n", 2,
     "(rest of the file unchanged)"),
    ("app.tsx", "export function App() {\n  // ... rest of the component\n}\n", 2,
     "// ... rest of the component"),
    ("page.html", "<body>\n<!-- ... rest of the HTML ... -->\n</body>\n", 2,
     "<!-- ... rest of the HTML ... -->"),
    ("routes.js", "app.get('/', home);\n// ... other routes\n", 2, "// ... other routes"),
    ("app.py", "x = 1\n... other handlers\n", 2, "... other handlers"),
    ("README.md", "# Tool\n\n... rest of the README\n", 3, "... rest of the README"),
    ("app.py", "x = 1\n# (unchanged)\n", 2, "# (unchanged)"),
    ("app.py", "x = 1\n# ... omitted for brevity\n", 2, "# ... omitted for brevity"),
    ("app.py", "x = 1\n# ... rest of main() unchanged ...\n", 2,
     "# ... rest of main() unchanged ..."),
    ("app.jsx", "<div>\n  {/* ... rest of the JSX ... */}\n</div>\n", 2,
     "{/* ... rest of the JSX ... */}"),
    ("app.ts", "// existing imports\nexport const x = 1;\n", 1, "// existing imports"),
    ("app.py", "# Validate the input\n# rest of the file unchanged\n", 2,
     "# rest of the file unchanged"),
    ("app.py", "# Load the configuration from disk and check every field of it\n"
               "# ... rest of the code\n", 2, "# ... rest of the code"),
]

# (file, content): real code and prose, written over a real file and appended to it.
ACCEPTED = [
    ("app.py", "def f(): ...\n"),
    ("app.py", "class P(Protocol):\n    def m(self) -> int: ...\n"),
    ("app.py", "class P(Protocol):\n    def m(self) -> int:\n        ...\n"),
    ("app.py", 'class P(Protocol):\n    def m(self) -> int:\n        """Why."""\n        ...\n'),
    ("app.py", 'def f():\n    """Why,\n    at length.\n    """\n    ...\n'),
    ("app.py", "def f(\n    a: int,\n) -> int:  # noqa: D103\n    ...\n"),
    ("app.py", "@overload\ndef f(x: int) -> int:\n    ...\n@overload\ndef f(x: str) -> str:\n"
               "    ...\n"),
    ("app.py", 'x = ...\nfoo(...)\nprint("...")\nitems = [...]\nT = tuple[int, ...]\n'),
    ("app.py", "C = Callable[\n    ...,\n    int,\n]\n"),
    ("app.py", "def f(*args, **kwargs):\n    return g(*args, **kwargs)\n"),
    ("app.py", "for x in xs:\n    # ... and then we loop\n    # ...then retry\n    work(x)\n"),
    ("app.py", "# Other functions\n# Existing users keep their data\n# same as above\n"
               "# unchanged lines\n# the rest\n# Rest\n# unchanged\n# etc.\n# and more...\n"
               "# TODO: handle errors...\nx = 1\n"),
    ("app.py", "@dataclass\nclass Split:\n    rest: Content\n    existing: File\n"
               "    remaining: Lines\n"),
    ("app.py", 'def f():\n    """Run it.\n\n    >>> for x in [1]:\n    ...     print(x)\n    ...\n'
               '    1\n    """\n'),
    ("app.py", 'FIXTURE = """\\\n# ... rest of the code\n...\n<!-- ... -->\n"""\nx = 1\n'),
    ("app.py", "# -*- coding: utf-8 -*-\n#!/bin/sh\n#else\nx = '''...'''\n"),
    ("app.js", "const merged = {\n  ...defaults,\n  ...rest,\n  ...this.methods,\n};\n"),
    ("app.js", "function f(...rest) {\n  return g(...rest);\n}\n"),
    ("app.c", "int printf(const char *fmt,\n           ...);\n"),
    ("app.c", "#include <stdio.h>\n#else\n/* licence: MIT */\n"),
    ("app.sh", "cmd \\\n  --verbose \\\n  --existing-code\n"),
    ("frames.py", 'FRAMES = [\n    ".",\n    "..",\n    "...",\n]\n'),
    ("conf.yaml", "a: 1\n...\n---\nb: [...]\nc:\n  - ...\n"),
    ("README.md", "Output:\n\n```\n$ ls\na\n...\n```\n\nAnd more...\n\n...\n\n# ...\n"),
    ("README.md", "Use it:\n\n```python\ndef handler(event):\n    # ... rest of your code\n```\n"),
    ("README.md", ">>> for x in [1]:\n...     print(x)\n...\n1\n"),
    ("README.md", "## Existing code\n\nThe old parser.\n\n## The rest\n\n- one\n- ...\n* …\n"),
    ("notes.txt", "Wait...\n...\nThen it worked.\n[...]\n... and so on\n"),
    # found in installed packages (typing_extensions, llama_cpp, mypy, pygments, numpy, ...)
    ("app.py", "def f(\n    specifiers: Tuple[\n        Callable[..., Any],\n        ...\n"
               "    ] = (),\n) -> None:\n    ...\n"),
    ("app.py", 'def f() -> int:\n    """Return\n        the count."""\n    ...\n'),
    ("app.py", "# This way we check branches like\n# if isinstance(x, int):\n#     ...\nx = 1\n"),
    ("app.py", "x = 1\n# …\n# and relativizing '..'\n"),
    ("app.py", "# For example:\n#   * one\n#   * ...\n\ndef f(): ...\n"),
    ("app.py", "x = 1\n# ......\n#   [0, 1, -1, 2, 3, 4, ...]\n# .., ..., ....... -> …\n"),
    ("app.py", "NAMES = [\n    # the remaining functions\n    'f',\n    # the existing class.\n"
               "    'C',\n    # rest of the text in this class\n]\n"),
    ("app.h", "//   struct x * f = g();\n//\n//       ...\n//   }\n"),
    ("app.c", "/*\n * for dimension 3\n * ...\n * -1, -1, -1\n */\n"),
    ("app.pyi", "def f(signal: Array,\n                    c0: float) -> Array:\n    ...\n"),
    ("app.py", "if failed:\n    # We could not apply it, so return the\n"
               "    # original code unchanged.\n    return node\n"),
    ("app.py", "assert comp(a, 1.4142130)\n#                  ...\nassert comp(a, 1.4142141)\n"),
    ("app.py", "# try:\n#     ... more argmapping and try blocks\n#     return f()\n"),
    ("app.py", "x = 1\n# ... other than that, it works\ny = 2\n"),
    ("notes.md", "... more to come\n\n...other than that\n"),
    ("app.py", "# We only test against piecewise as location/scale transforms\n"
               "# are same for other methods.\nx = 1\n"),
    ("cli.rst", "Output::\n\n    {\n        \"Id\": 1\n    },\n"
                "    ...remaining output omitted...\n"),
    ("README.md", "Example:\n\n    def f():\n        # ... rest of your code\n"),
]


def sent(run: Run, tool: str, name: str, content: str) -> tuple[Status | None, str]:
    [result] = run(f"{F}{tool} {name}\n{content}{F}\n")
    return result.status, result.content


@pytest.mark.parametrize(("name", "content", "number", "line"), REFUSED)
def test_a_placeholder_line_never_replaces_a_file(run: Run, workspace: Path, name: str,
                                                  content: str, number: int, line: str) -> None:
    (workspace / name).write_bytes(ORIGINAL)
    status, message = sent(run, "save", name, content)
    assert status is Status.ERROR
    assert message.startswith(f"save: not written: line {number} of the content, {line!r}, "
                              "is a placeholder for text left out"), message
    assert f"{name} is unchanged" in message
    assert "Write the whole file out, or use patch" in message
    assert (workspace / name).read_bytes() == ORIGINAL


@pytest.mark.parametrize(("name", "content", "number", "line"), REFUSED)
def test_a_new_file_may_hold_a_placeholder(run: Run, workspace: Path, name: str, content: str,
                                           number: int, line: str) -> None:
    status, message = sent(run, "save", name, content)
    assert status is None, message
    assert (workspace / name).read_text() == content


@pytest.mark.parametrize(("name", "content", "number", "line"), REFUSED)
def test_a_placeholder_line_is_never_appended(run: Run, workspace: Path, name: str,
                                              content: str, number: int, line: str) -> None:
    (workspace / name).write_bytes(ORIGINAL)
    status, message = sent(run, "append", name, content)
    assert status is Status.ERROR
    assert message.startswith(f"append: not written: line {number} of the content, {line!r}"
                              ), message
    assert f"{name} is unchanged" in message and "written out in full" in message
    assert (workspace / name).read_bytes() == ORIGINAL
    status, message = sent(run, "append", f"new-{name}", content)
    assert status is Status.ERROR
    assert f"new-{name} was not created" in message
    assert not (workspace / f"new-{name}").exists()


@pytest.mark.parametrize(("name", "content"), ACCEPTED)
def test_real_code_and_prose_are_written(run: Run, workspace: Path, name: str,
                                         content: str) -> None:
    (workspace / name).write_bytes(ORIGINAL)
    status, message = sent(run, "save", name, content)
    assert status is None, message
    assert (workspace / name).read_text() == content
    status, message = sent(run, "append", name, content)
    assert status is None, message
    assert (workspace / name).read_text() == content * 2


def test_the_model_hears_which_lines_and_what_to_do(run: Run, workspace: Path) -> None:
    (workspace / "app.py").write_bytes(ORIGINAL)
    content = "def main():\n    # ...\n    better()\n\n# ... existing code ...\n"
    assert sent(run, "save", "app.py", content) == (Status.ERROR, (
        "save: not written: line 2 of the content, '# ...', is a placeholder for text left out "
        "(so is line 5), and would replace the real text of app.py: app.py is unchanged. "
        "Write the whole file out, or use patch to change part of it."))
    assert sent(run, "append", "app.py", "x = 1\n// rest unchanged\n") == (Status.ERROR, (
        "append: not written: line 2 of the content, '// rest unchanged', is a placeholder "
        "for text left out, which adds no real text to app.py: app.py is unchanged. Send the "
        "text to add, written out in full (use patch to change part of a file)."))
    assert (workspace / "app.py").read_bytes() == ORIGINAL


@pytest.mark.parametrize(("count", "also"), [
    (2, "(so is line 3)"), (3, "(so are lines 3 and 4)"), (6, "(so are lines 3, 4, 5, 6 and 7)"),
    (9, "(so are lines 3, 4, 5, 6, 7 and 3 more)")])
def test_the_other_placeholder_lines_are_counted(run: Run, workspace: Path, count: int,
                                                 also: str) -> None:
    (workspace / "app.py").write_bytes(ORIGINAL)
    status, message = sent(run, "save", "app.py", "x = 1\n" + "# ...\n" * count)
    assert status is Status.ERROR
    assert f"line 2 of the content, '# ...', is a placeholder for text left out {also}, " in message


def test_the_user_is_not_asked_to_confirm_a_refused_write(workspace: Path) -> None:
    (workspace / "app.py").write_bytes(ORIGINAL)
    asked: list[ConfirmRequest] = []

    def confirm(request: ConfirmRequest) -> bool:
        asked.append(request)
        return True

    with tool_session(workspace, ["save", "append"], confirm=confirm) as session:
        [saved] = session.execute(f"{F}save app.py\nx = 1\n# ...\n{F}\n")
        [appended] = session.execute(f"{F}append app.py\nx = 1\n# ...\n{F}\n")
        assert not asked
        assert saved.status is appended.status is Status.ERROR
        assert "line 2 of the content, '# ...'" in saved.content
        [written] = session.execute(f"{F}save app.py\nx = 1\n{F}\n")
    assert [request.tool for request in asked] == ["save"] and written.status is None


def test_an_empty_file_has_no_text_to_lose(run: Run, workspace: Path) -> None:
    (workspace / "app.py").write_text("")
    assert sent(run, "save", "app.py", "x = 1\n# ...\n") == (None, "Saved app.py (2 lines).")


def test_every_placeholder_line_is_found() -> None:
    text = "a = 1\n# ...\nb = 2\n    // rest unchanged\n\n...\n"
    assert placeholder_lines(text, Kind.CODE) == [(2, "# ..."), (4, "// rest unchanged"),
                                                  (6, "...")]


@pytest.mark.parametrize(("name", "kind"), [
    ("a.py", Kind.PYTHON), ("a.pyi", Kind.PYTHON), ("b.YAML", Kind.YAML), ("c.yml", Kind.YAML),
    ("README.md", Kind.PROSE), ("notes.txt", Kind.PROSE), ("doc.rst", Kind.PROSE),
    ("a.js", Kind.CODE), ("Makefile", Kind.CODE), ("page.html", Kind.CODE)])
def test_the_file_kind_comes_from_the_suffix(name: str, kind: Kind) -> None:
    assert kind_of(Path("dir", name)) is kind


NAMES = st.sampled_from(["rest", "existing", "remaining", "other", "content", "code", "lines",
                         "file", "unchanged", "same", "more", "x", "total", "self", "items"])
STATEMENTS = st.one_of(
    st.builds("{} = {}({}, {})".format, NAMES, NAMES, NAMES, NAMES),
    st.builds("{}.{}({})".format, NAMES, NAMES, NAMES),
    st.builds("return {}".format, NAMES), st.builds("{}: {}".format, NAMES, NAMES),
    st.builds("{} = ...".format, NAMES), st.builds("{}(...)".format, NAMES),
    st.builds("{} = [...]".format, NAMES), st.builds('print("{}...")'.format, NAMES),
)
# JavaScript's spreads (before them a Python "..." is an element, as after any ",")
SPREADS = st.one_of(st.builds("...{},".format, NAMES), st.builds("...{}.{},".format, NAMES, NAMES))
COMMENTS = st.one_of(
    st.builds("# {} {} then compute {}".format, NAMES, NAMES, NAMES),
    st.builds("# ... and then {} the {}".format, NAMES, NAMES),
    st.builds("// the {} {} for now".format, NAMES, NAMES),
)


def code(lines: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(st.tuples(st.integers(0, 3), lines), max_size=12).map(
        lambda found: "".join("    " * depth + line + "\n" for depth, line in found))


@given(code(st.one_of(STATEMENTS, SPREADS, COMMENTS)),
       st.sampled_from([Kind.CODE, Kind.PYTHON, Kind.YAML]))
def test_ordinary_code_never_trips_it(text: str, kind: Kind) -> None:
    assert placeholder_lines(text, kind) == []


STUBS = st.sampled_from(["# ...", "// ...", "/* ... */", "<!-- ... -->", "# ... rest of the code",
                         "// rest of file unchanged", "# (rest of the file unchanged)",
                         "/* existing code */", "<!-- rest of content -->", "…", "[...]",
                         "# … other methods …", "// ... existing code ...", "..."])


@given(code(STATEMENTS), st.integers(0, 12), st.integers(0, 3), STUBS)
def test_a_placeholder_anywhere_in_code_is_found(text: str, at: int, depth: int,
                                                 stub: str) -> None:
    lines = text.splitlines(keepends=True)
    at = min(at, len(lines))
    lines.insert(at, "    " * depth + stub + "\n")
    assert placeholder_lines("".join(lines), Kind.PYTHON) == [(at + 1, stub)]


def test_an_ellipsis_in_a_comment_paragraph_belongs_to_the_comment() -> None:
    text = "x = 1\n# ...\ny = 2\n# like this:\n#     ...\n#\n# ...\n#\n// ...\n// ...\n"
    assert placeholder_lines(text, Kind.CODE) == [(2, "# ..."), (7, "# ..."), (9, "// ..."),
                                                  (10, "// ...")]
