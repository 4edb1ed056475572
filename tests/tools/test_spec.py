"""ToolSpec: from_function, schemas, and binding written arguments to typed ones."""

from __future__ import annotations

import pytest

from fencecall.tools import ArgumentError, Parameter, ToolSpec

from ..sample_tools import ADD, ECHO, WRITE


def test_from_function_reads_signature_and_docstring() -> None:
    assert ADD.name == "add"
    assert ADD.desc == "Add two integers."
    a, b, mode = ADD.parameters
    assert (a.name, a.type, a.required, a.description) == ("a", "integer", True,
                                                          "The first number.")
    assert (b.required, b.default, b.description) == (False, 1,
                                                      "The second number, which defaults to one.")
    assert (mode.type, mode.enum) == ("string", ("plain", "loud"))


def test_from_function_rejects_untyped_and_var_args() -> None:
    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    def star(*xs: int) -> int:
        return 0

    with pytest.raises(ValueError, match="type hint"):
        ToolSpec.from_function(untyped)
    with pytest.raises(ValueError, match=r"\*args"):
        ToolSpec.from_function(star)


def test_neutral_function_schema() -> None:
    schema = ADD.json_schema()
    assert schema["required"] == ["a"]
    assert schema["properties"]["mode"] == {"type": "string", "description":
                                            "How to say the result.", "enum": ["plain", "loud"]}
    assert ADD.function_schema("tool") == {"name": "add", "description": "Add two integers.",
                                           "parameters": schema}
    dotted = ToolSpec("mcp.fetch", "Fetch.", instructions_format={"tool": "Fetch a URL."})
    assert dotted.function_schema("tool")["name"] == "mcp__fetch"
    assert dotted.function_schema("tool")["description"] == "Fetch a URL."
    assert dotted.function_schema("markdown")["description"] == "Fetch."


def test_bind_converts_markdown_words_to_declared_types() -> None:
    assert ADD.bind("2 40", "", {}) == {"a": 2, "b": 40, "mode": "plain"}
    assert ADD.bind("", "", {"a": "7", "mode": "loud"}) == {"a": 7, "b": 1, "mode": "loud"}
    assert ADD.bind("", "", {"a": 3.0}) == {"a": 3, "b": 1, "mode": "plain"}


@pytest.mark.parametrize(("argline", "kwargs", "message"), [
    ("two", {}, "argument 'a' must be an integer, got 'two'"),
    ("1 2 plain extra", {}, "too many arguments"),
    ("", {"c": 1, "a": 1}, "unknown argument(s) 'c'; allowed: a, b, mode"),
    ("", {}, "missing required argument(s): a"),
    ("1 2 shout", {}, "must be one of 'plain', 'loud'"),
    ("", {"a": True}, "must be an integer"),
])
def test_bind_errors_are_clear(argline: str, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ArgumentError) as info:
        ADD.bind(argline, "", kwargs)
    assert message in str(info.value)
    assert str(info.value).startswith("add: ")


def test_bind_content_and_argline_params() -> None:
    assert WRITE.bind("my notes.txt", "hello", {}) == {"path": "my notes.txt",
                                                       "content": "hello"}
    assert ECHO.bind("", "", {"text": "x"}) == {"text": "x"}
    with pytest.raises(ArgumentError, match="given twice"):
        ECHO.bind("", "body", {"text": "x"})
    with pytest.raises(ArgumentError, match="takes no block content"):
        ADD.bind("1", "some body", {})


def test_unbind_is_the_inverse_of_bind_for_block_formats() -> None:
    assert WRITE.unbind({"path": "a b.txt", "content": "x"}) == ("a b.txt", "x", {})
    assert ADD.unbind({"a": 1, "b": 2, "mode": "plain"}) == ("1 2 plain", "", {})
    argline, _content, rest = ADD.unbind({"a": 1, "mode": "has space"})
    assert (argline, rest) == ("1", {"mode": "has space"})


@pytest.mark.parametrize(("kind", "text", "value"), [
    ("boolean", "yes", True), ("boolean", "False", False), ("number", "2.5", 2.5),
    ("array", "[1, 2]", [1, 2]), ("object", '{"k": 1}', {"k": 1}), ("integer", " 12 ", 12),
])
def test_parameter_conversions(kind: str, text: str, value: object) -> None:
    assert Parameter("p", kind).convert(text, "t") == value  # type: ignore[arg-type]


def test_spec_validates_itself() -> None:
    with pytest.raises(ValueError, match="invalid tool name"):
        ToolSpec("bad name")
    with pytest.raises(ValueError, match="not a parameter"):
        ToolSpec("t", content_param="body")
    with pytest.raises(ValueError, match="duplicate"):
        ToolSpec("t", parameters=(Parameter("a"), Parameter("a")))
    assert ToolSpec("t").block_types == ("t",)
    assert not ToolSpec("t").is_runnable
