"""What the terminal shows is what the text holds: visible(), the display, the confirmation."""

from __future__ import annotations

import io
import json
import re
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from fencecall.agent import ReplyDone, ReplyText, Retrying, ToolResult
from fencecall.cli.confirm_prompt import (
    HEAD_LINES,
    MAX_CHARS,
    MAX_LINES,
    excerpt,
    render_confirmation,
    terminal_confirm,
)
from fencecall.cli.display import Display, HonestMarkdown
from fencecall.cli.visible import TABLE, is_visible, json_visible, visible, visible_markup
from fencecall.message import Message, system
from fencecall.parsing import ToolCall
from fencecall.tools import ConfirmRequest, Decline

BIDI = [0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200E,
        0x200F, 0x061C]
INVISIBLE = [0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x00AD]
C0 = [cp for cp in range(0x20) if chr(cp) not in "\n\t"]
C1 = list(range(0x80, 0xA0))
UNSAFE = {chr(cp) for cp in [*C0, 0x7F, *C1, *BIDI, *INVISIBLE]}


def unsafe_in(text: str) -> set[str]:
    """Characters a terminal interprets or that change how text reads (\\n, \\t allowed)."""
    return {c for c in text if c in UNSAFE or (
        unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") and c not in "\n\t")}


# -- visible() ---------------------------------------------------------------------------


def test_escape_sequences_show_as_control_pictures() -> None:
    assert visible("\x1b[2Kecho harmless") == "␛[2Kecho harmless"
    assert visible("rm -rf x\x1b[1A\x1b[2K") == "rm -rf x␛[1A␛[2K"
    assert visible("\x1b]0;title\x07rest") == "␛]0;title␇rest"  # OSC … BEL
    assert visible("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "␛]8;;http://x␛\\link␛]8;;␛\\"


def test_every_c0_control_but_newline_and_tab_becomes_its_picture() -> None:
    for cp in C0:
        assert visible(chr(cp)) == chr(0x2400 + cp)
    assert visible("\x00\x07\x08") == "␀␇␈"
    assert visible("a\tb\nc") == "a\tb\nc"


def test_carriage_return_never_moves_the_cursor() -> None:
    assert visible("touch pwned\recho harmless") == "touch pwned␍echo harmless"
    assert visible("line\r\n") == "line␍\n"  # the newline stays, the CR is shown
    assert "\r" not in visible("a\r\r\n\rb")


def test_del_c1_bidi_and_invisible_characters() -> None:
    assert visible("\x7f") == "␡"
    assert visible("\x9b2K") == "<U+009B>2K"  # CSI on some terminals
    assert visible("\x85") == "<U+0085>"
    for cp in C1 + BIDI + INVISIBLE:
        assert visible(chr(cp)) == f"<U+{cp:04X}>"
    assert visible("abc\u202edcba") == "abc<U+202E>dcba"
    assert visible("rm\u200b -rf") == "rm<U+200B> -rf"
    assert visible("a\u2028b") == "a<U+2028>b"
    assert visible("\U000e0041") == "<U+E0041>"  # tag characters: invisible ASCII smuggling
    assert visible("\ud800") == "<U+D800>"  # a lone surrogate cannot even be encoded


def test_ordinary_text_is_untouched() -> None:
    text = "héllo wörld 中文 emoji 🎉 — “quotes” [red]x[/red] ␛ <U+202E>\n\tend"
    assert visible(text) == text
    assert is_visible(text) and not is_visible("a\x1bb")


def test_every_format_character_of_this_python_is_escaped() -> None:
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp)) in ("Cc", "Cf", "Zl", "Zp") and chr(cp) not in "\n\t":
            assert cp in TABLE, hex(cp)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.one_of(st.characters(), st.sampled_from(sorted(UNSAFE)))))
def test_output_never_holds_an_interpreted_character(text: str) -> None:
    shown = visible(text)
    assert not unsafe_in(shown)
    assert shown.count("\n") == text.count("\n") and shown.count("\t") == text.count("\t")


def test_visible_is_fast_on_long_outputs() -> None:
    import time

    text = ("ordinary output line with ünïcode " * 3 + "\x1b[0m\r\n") * 20_000  # ~2.3 MB
    started = time.perf_counter()
    shown = visible(text)
    assert time.perf_counter() - started < 2.0
    assert shown.count("␛[0m␍\n") == 20_000


def test_json_visible_keeps_the_data_and_escapes_what_a_terminal_interprets() -> None:
    data = {"content": "a\x1b[2K\u202e\x9b\x7f\U000e0041 ünï 中文", "k": ["\r\n"]}
    document = json_visible(json.dumps(data, ensure_ascii=False, indent=2))
    assert json.loads(document) == data
    assert not unsafe_in(document.replace("\n", ""))
    assert "ünï 中文" in document and "\\u202e" in document and "\\udb40\\udc41" in document


def test_visible_markup_escapes_rich_markup() -> None:
    out = io.StringIO()
    Console(file=out, width=80).print(visible_markup("[red]x[/red]\x1b[2K[/]"))
    assert out.getvalue() == "[red]x[/red]␛[2K[/]\n"


# -- the display ---------------------------------------------------------------------------


def console(width: int = 100, terminal: bool = False) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=width, force_terminal=terminal, color_system=None,
                   highlight=False), out


def test_markdown_shows_escapes_entities_html_and_link_targets() -> None:
    con, out = console()
    con.print(HonestMarkdown("hi\x1b[2K &#x202E; x\n\n<!-- hidden note -->\n\n"
                             "see [docs](http://evil.example) <span>inline</span> **[red]b[/]** "
                             ":smile:\n\n```shell\nrm\r -rf\x1b[1A x\n```\n"))
    text = out.getvalue()
    assert not unsafe_in(text.replace("\n", ""))
    for expected in ("hi␛[2K <U+202E> x", "<!-- hidden note -->", "http://evil.example",
                     "<span>inline</span>", "[red]b[/]", ":smile:", "rm␍ -rf␛[1A x"):
        assert expected in text


def test_streamed_reply_to_a_pipe_is_made_visible_chunk_by_chunk() -> None:
    con, out = console()
    display = Display(con)
    for chunk in ("Sure.\r", "\x1b[2KAll ", "fine \u202e", "[bold]x[/]"):
        display(ReplyText(chunk))
    display(ReplyDone(Message("assistant", ""), stopped_early=False))
    assert out.getvalue() == "Sure.␍␛[2KAll fine <U+202E>[bold]x[/]\n"


def test_streamed_reply_on_a_terminal_renders_visible_markdown() -> None:
    con, out = console(terminal=True)
    display = Display(con)
    display(ReplyText("Everything is \x1b[31mfine\x1b[0m\r\n\u202eok"))
    display(ReplyDone(Message("assistant", ""), stopped_early=False))
    # the live region's own cursor moves (it is erased once the reply is printed) left out
    text = re.sub(r"^\x1b\[\?25l\x1b\[\?25h\r", "", out.getvalue())
    assert "Everything is ␛[31mfine␛[0m␍" in text and "<U+202E>ok" in text
    assert "\x1b[31m" not in text and "\u202e" not in text and "\r" not in text


def test_a_retry_ends_the_broken_reply_and_says_why_visibly() -> None:
    con, out = console()
    display = Display(con)
    display(ReplyText("half a rep"))
    display(Retrying("server said \x1b[2K[red]no[/red]", 1, 2, 0.5))
    display(ReplyText("the whole reply\n"))
    display(ReplyDone(Message("assistant", ""), stopped_early=False))
    assert out.getvalue() == ("half a rep\nThe reply stream broke (server said ␛[2K[red]no[/red]); "
                              "retrying in 0.5 s (attempt 1 of 2).\nthe whole reply\n")


def test_tool_results_and_logged_messages_are_visible_and_not_markup() -> None:
    con, out = console()
    display = Display(con)
    display(ToolResult(system("out\x1b[2J\x1b[H[red]x[/red] :smile:\r\n", tool="sh[bold]x")))
    display.show_message(system("log\x07", tool="t"))
    display.show_message(Message("user", "me\x1b[A"))
    display.show_message(Message("assistant", "you\x1b]0;t\x07"))
    text = out.getvalue()
    assert not unsafe_in(text.replace("\n", ""))
    for expected in ("sh[bold]x", "out␛[2J␛[H[red]x[/red] :smile:␍", "log␇", "me␛[A",
                     "you␛]0;t␇"):
        assert expected in text


# -- the confirmation ----------------------------------------------------------------------


def shell_request(command: str, **call: object) -> ConfirmRequest:
    written = ToolCall("shell", content=command) if not call else ToolCall(**call)  # type: ignore[arg-type]
    return ConfirmRequest("shell", written, "Run shell?", {"command": command, "timeout": 60},
                          command)


def rendered(request: ConfirmRequest, *, complete: bool = False,
             width: int = 120) -> tuple[str, bool]:
    con, out = console(width)
    cut = render_confirmation(con, request, complete=complete)
    return out.getvalue(), cut


def test_confirmation_shows_the_call_as_written_and_its_escapes() -> None:
    text, cut = rendered(shell_request("touch pwned\r\x1b[2Kecho harmless"))
    assert not cut
    assert "```shell" in text
    assert "touch pwned␍␛[2Kecho harmless" in text
    assert "timeout=60" in text  # the bound argument the call does not show
    assert text.count("touch pwned") == 1  # the preview is the body: shown once
    assert not unsafe_in(text.replace("\n", ""))


def test_confirmation_of_named_arguments_shows_them_as_json_and_the_preview() -> None:
    command = "rm -rf x\x1b[1A\x1b[2K\u202eecho ok"
    request = shell_request(command, name="shell", kwargs={"command": command},
                            call_id="c1", format="tool")
    text, _ = rendered(request)
    assert "shell  (id c1, tool format)" in text
    assert '"command": "rm -rf x\\u001b[1A\\u001b[2K\\u202eecho ok"' in text
    assert "rm -rf x␛[1A␛[2K<U+202E>echo ok" in text  # the preview, as the shell gets it


def test_markup_in_a_call_is_shown_literally() -> None:
    request = ConfirmRequest("save", ToolCall("save", "[bold]a.txt", "[red]x[/red] [/] :smile:"),
                             "Run [blink]save[/]?", {"path": "[bold]a.txt",
                                                     "content": "[red]x[/red] [/] :smile:"},
                             "new file [bold]a.txt:\n[red]x[/red] [/] :smile:\n")
    text, _ = rendered(request)
    assert "```save [bold]a.txt" in text
    assert "[red]x[/red] [/] :smile:" in text
    assert 'path="[bold]a.txt"' in text
    assert "new file [bold]a.txt: (then the body above, as it is)" in text
    con, out = console()
    assert terminal_confirm(con, io.StringIO("n\n"))(request) == Decline(ends_turn=True)
    assert "Run [blink]save[/]? [y]es [n]o [v]iew [t]ell the model:" in out.getvalue()


def test_a_diff_preview_is_shown_after_the_body() -> None:
    patch = "<<<<<<< ORIGINAL\nold\n=======\nnew\n>>>>>>> UPDATED"
    diff = "--- a.txt\n+++ a.txt\n@@ -1 +1 @@\n-old\n+new\n"
    request = ConfirmRequest("patch", ToolCall("patch", "a.txt", patch), "Run patch?",
                             {"path": "a.txt", "patch": patch}, diff)
    text, _ = rendered(request)
    assert text.index("ORIGINAL") < text.index("preview:") < text.index("+new")


def test_empty_body_is_said() -> None:
    text, _ = rendered(ConfirmRequest("shell", ToolCall("shell"), "Run shell?",
                                      {"command": ""}, ""))
    assert "(empty)" in text


def numbered(count: int) -> str:
    return "\n".join(f"line {i}" for i in range(1, count + 1))


def test_long_call_shows_head_tail_and_a_marker() -> None:
    body = numbered(200) + "\nrm -rf ~"
    text, cut = rendered(shell_request(body))
    assert cut
    assert re.search(r"\b1 line 1\b", text) and re.search(rf"\bline {HEAD_LINES}\b", text)
    assert not re.search(rf"\bline {HEAD_LINES + 1}\b", text)
    assert "rm -rf ~" in text  # the tail: the end of the call is always shown
    assert "[… 165 lines not shown" in text and "answer v to view the whole call …]" in text
    assert "line 100" not in text
    assert "[v]iew" in _question(shell_request(body))


def _question(request: ConfirmRequest) -> str:
    con, out = console()
    terminal_confirm(con, io.StringIO(""))(request)
    return out.getvalue()


def test_v_shows_the_whole_call_and_asks_again() -> None:
    body = numbered(200)
    for answers, expected in (("v\ny\n", True), ("v\nn\n", False), ("V\nyes\n", True),
                              ("v\nv\nn\n", False)):
        con, out = console()
        answer = terminal_confirm(con, io.StringIO(answers))(shell_request(body))
        assert bool(answer) is expected
        text = out.getvalue()
        assert "line 100" in text  # printed completely after v
        assert text.count("[t]ell the model:") == answers.count("\n")
        assert text.count("line 100") == answers.lower().count("v")  # shown again each time


@pytest.mark.parametrize("answer, expected", [("y\n", True), ("yes\n", True), (" Y \n", True),
                                              ("n\n", False), ("\n", False), ("", False),
                                              ("yep\n", False), ("sure\n", False),
                                              ("y please\n", False)])
def test_only_yes_runs(answer: str, expected: bool) -> None:
    con, _ = console()
    assert bool(terminal_confirm(con, io.StringIO(answer))(shell_request("ls"))) is expected


def test_end_of_input_declines() -> None:
    con, _ = console()

    def eof(*args: object, **kwargs: object) -> str:
        raise EOFError

    con.input = eof  # type: ignore[method-assign]
    assert terminal_confirm(con)(shell_request("ls")) == Decline(ends_turn=True)


def test_one_huge_line_is_cut_by_characters() -> None:
    body = "echo start " + "x" * 50_000 + " ; rm -rf ~"
    cut = excerpt(body)
    assert cut is not None and cut.hidden_lines == 1
    assert len(cut.head) + len(cut.tail) + cut.hidden_chars == len(body)
    text, was_cut = rendered(shell_request(body))
    assert was_cut and "echo start" in text and "rm -rf ~" in text
    assert "[… 1 line not shown" in text
    assert len(text) < 10_000


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab\n", max_size=MAX_CHARS + 200).map(
    lambda s: s * (1 + (MAX_LINES + 5) // max(1, s.count("\n") + 1))))
def test_excerpt_covers_the_text_exactly(text: str) -> None:
    cut = excerpt(text)
    if cut is None:
        assert len(text) <= MAX_CHARS and text.count("\n") < MAX_LINES
        return
    hidden = text[len(cut.head):len(text) - len(cut.tail)]
    assert cut.head + hidden + cut.tail == text
    assert cut.hidden_chars == len(hidden) > 0
    assert cut.tail_line == text.count("\n", 0, len(text) - len(cut.tail)) + 1


def test_small_calls_are_not_cut() -> None:
    assert excerpt(numbered(MAX_LINES)) is None
    assert excerpt("x" * MAX_CHARS) is None
    assert excerpt(numbered(MAX_LINES + 1)) is not None



@pytest.mark.parametrize("answers, expected", [
    ("t use rg instead\n", Decline("use rg instead")),
    ("t\nuse rg instead\n", Decline("use rg instead")),
    ("tell\n\n", Decline(ends_turn=True)),  # no reason: a plain no
    ("maybe\nn\n", Decline(ends_turn=True)),
    ("a\ny\n", True),  # no rules can say this call: a is no answer here
])
def test_tell_and_the_answers_asked_again(answers: str, expected: object) -> None:
    con, out = console()
    assert terminal_confirm(con, io.StringIO(answers))(shell_request("ls")) == expected
    assert "[a]lways" not in out.getvalue()
    if answers.startswith(("maybe", "a\n")):
        assert "Answer y, n, v or t." in out.getvalue()
