"""Spilling huge tool results to files: the model sees the start, the end and how to read on."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fencecall import Session, Toolchain
from fencecall.accounting.tokens import Estimate, Exactness, TokenCounter
from fencecall.agent import _spill as spill_module
from fencecall.agent._spill import outputs_folder, spill
from fencecall.message import CallRecord, Message, Status, system

CUT = re.compile(r"^\[\.\.\. (\d+) lines? cut: lines? (\d+)(?:-(\d+))?, (\d+) bytes \.\.\.\]$",
                 re.MULTILINE)


class Dense:
    """A counter far denser than the estimate: a token per character, two per non-ASCII one,
    and one more per line (so many short lines cost much)."""

    @property
    def exactness(self) -> Exactness:
        return "estimate"

    def count(self, text: str) -> int:
        return len(text) + sum(1 for c in text if ord(c) > 127) + text.count("\n")


class Words:
    """A counter that does not add up: a token per word, at least one for any text, so the
    parts of a text can count more than the whole."""

    @property
    def exactness(self) -> Exactness:
        return "estimate"

    def count(self, text: str) -> int:
        return max(1, len(text.split())) if text else 0


COUNTERS: list[TokenCounter] = [Estimate(), Dense(), Words()]


@pytest.fixture
def outputs(tmp_path: Path) -> Path:
    return outputs_folder(tmp_path / "conversation")


def numbered(count: int, newline: str = "\n", final: bool = True) -> str:
    text = newline.join(f"line {i}: some output of a command, {i * 7} things" for i in
                        range(1, count + 1))
    return text + newline if final else text


def saved(message: Message) -> Path:
    return Path(message.metadata["spilled"]["path"])


def closing_start(content: str) -> int:
    return content.index("\n\nThis output was too long to show whole")


NOTE = re.compile(r"^\[\.\.\. .* cut.* \.\.\.\]\n", re.MULTILINE)


def parts(shown: str) -> tuple[str, str, str]:
    """The start shown, the note and the end shown, each with its line break (its own, or
    the one added to end it)."""
    body = shown[:closing_start(shown) + 1]
    note = NOTE.search(body)
    assert note is not None, shown
    return body[:note.start()], note.group(), body[note.end():]


# -- leaving alone what fits ---------------------------------------------------------------


@pytest.mark.parametrize("counter", COUNTERS, ids=type)
def test_a_result_within_the_limit_is_returned_itself(outputs: Path,
                                                      counter: TokenCounter) -> None:
    result = system(numbered(50), tool="shell")
    limit = counter.count(result.content)
    assert spill(result, outputs, limit, counter) is result  # at the limit exactly
    assert spill(result, outputs, limit * 10, counter) is result
    assert list(outputs.iterdir()) == []
    assert spill(result, outputs, limit - 1, counter) is not result


def test_a_limit_below_one_is_refused(outputs: Path) -> None:
    with pytest.raises(ValueError, match="limit_tokens"):
        spill(system("x"), outputs, 0, Estimate())


# -- what the model is shown -----------------------------------------------------------------


@pytest.mark.parametrize("counter", COUNTERS, ids=type)
@pytest.mark.parametrize("limit", [600, 2000, 8000])
@pytest.mark.parametrize("text", [
    numbered(5000),
    numbered(3000, "\r\n", final=False),
    "\n".join("界" * (i % 50) + f" {i}" for i in range(4000)),  # dense text
    "short\n" + "y" * 300_000 + "\nlast\n",  # a giant line among short ones
    "z" * 300_000,  # one giant line, no newline at all
    "\n" * 50_000,  # nothing but line breaks
], ids=["lines", "crlf", "cjk", "giant-middle", "giant-only", "breaks"])
def test_what_is_shown_fits_and_holds_the_start_and_the_end(
        outputs: Path, counter: TokenCounter, limit: int, text: str) -> None:
    if counter.count(text) <= limit:
        pytest.skip("fits already")
    shown = spill(system(text, tool="shell"), outputs, limit, counter).content
    assert counter.count(shown) <= limit
    head, _, tail = parts(shown)
    # the output's own start and end (the line break after each may have been added)
    assert text.startswith(head) or text.startswith(head[:-1])
    assert text.endswith(tail) or text.endswith(tail[:-1])
    assert len(head) + len(tail) < len(text)
    if limit >= 2000:
        assert head and tail, "the limit leaves room for some of each"
    if limit >= 8000 and type(counter) is not Words:
        assert counter.count(shown) <= 0.85 * limit, "well under the limit"


def test_a_limit_smaller_than_the_notes_gets_the_notes_alone(outputs: Path) -> None:
    result = spill(system(numbered(1000)), outputs, 50, Estimate())
    head, note, tail = parts(result.content)
    assert head == tail == "" and note.startswith("[... 1000 lines cut: lines 1-1000, ")
    assert str(saved(result)) in result.content


def test_lines_are_kept_whole_and_the_note_names_the_lines_cut(outputs: Path) -> None:
    text = numbered(2000)
    lines = text.splitlines()
    result = spill(system(text, tool="shell"), outputs, 2000, Estimate())
    shown = result.content
    [match] = CUT.finditer(shown)
    count, first, last, size = (int(group) for group in match.groups())
    head = shown[:match.start()].splitlines()
    tail = shown[match.end() + 1:closing_start(shown)].splitlines()
    assert head == lines[:first - 1] and tail == lines[last:]
    assert count == last - first + 1 == len(lines) - len(head) - len(tail)
    assert size == len("".join(text.splitlines(keepends=True)[first - 1:last]).encode())
    assert 300 < Estimate().count(shown) <= 2000
    # about 40% of the limit on each side
    assert 0.25 * 2000 < Estimate().count("\n".join(head)) <= 0.4 * 2000
    assert 0.25 * 2000 < Estimate().count("\n".join(tail)) <= 0.4 * 2000
    path = saved(result)
    assert path.is_absolute() and str(path) in shown
    call = re.search(rf"```read {re.escape(str(path))} (\d+) (\d+)\n", shown)
    assert call is not None and int(call.group(1)) == first
    assert first < int(call.group(2)) <= last
    assert f"({len(lines)} lines, {len(text.encode())} bytes, about " in shown


def test_one_giant_line_is_cut_by_characters(outputs: Path) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(500_000))
    result = spill(system(text, tool="python"), outputs, 1000, Estimate())
    shown = result.content
    assert Estimate().count(shown) <= 1000
    head, note, rest = shown.split("\n", 2)
    tail = rest[:closing_start("\n" + rest) - 1]
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) >= 300 and len(tail) >= 300
    assert note == f"[... {len(text) - len(head) - len(tail)} bytes cut: the middle of line 1 ...]"
    assert "(1 line, 500000 bytes" in shown
    assert "shows lines over 2000 characters cut in the middle" in shown
    assert f"```read {saved(result)} 1 1\n" in shown


def test_a_giant_line_between_short_ones_is_cut_mid_line(outputs: Path) -> None:
    text = "first\n" + "y" * 100_000 + "\nlast"
    shown = spill(system(text), outputs, 500, Estimate()).content
    assert shown.startswith("first\nyyy")  # not just "first": too little of what fits
    assert re.search(r"\[\.\.\. \d+ bytes cut: the middle of line 2 \.\.\.\]\nyyy+\nlast\n\n",
                     shown)


def test_cuts_that_span_lines_say_which_parts_were_cut(outputs: Path) -> None:
    text = "a" * 3000 + "\n" + numbered(300) + "b" * 3000 + "\n"
    shown = spill(system(text), outputs, 1000, Estimate()).content
    assert re.search(r"\[\.\.\. \d+ bytes cut: the end of line 1, lines 2-301 and the start "
                     r"of line 302 \.\.\.\]", shown)


# -- the file ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "caf\u00e9 \ufffd\ufffd broken \ufffd utf-8 \ufeff\x00\x1b[31m\r\n" * 5000
    + "no final newline \U0001f600",
    "windows\r\nline\r\nendings\r\n" * 5000,
    "old mac\rendings\r" * 5000 + "\x1c\x85 \u2028 odd breaks\n\n\n",
])
def test_the_file_holds_exactly_the_content(outputs: Path, text: str) -> None:
    result = spill(system(text, tool="shell"), outputs, 500, Estimate())
    path = saved(result)
    assert path.read_bytes() == text.encode()
    assert result.metadata["spilled"] == {"path": str(path), "bytes": len(text.encode()),
                                          "lines": len(text.splitlines()),
                                          "tokens": Estimate().count(text)}


@pytest.mark.parametrize("data", [
    b"caf\xc3\xa9 \xff\xfe broken \x80 utf-8\r\n" * 5000 + b"no final newline \xe2\x82",
    b"\xed\xa0\x80 encoded surrogate, \xc0\xaf overlong\n" * 5000,
])
def test_text_decoded_with_surrogateescape_is_saved_as_its_bytes(outputs: Path,
                                                                 data: bytes) -> None:
    """As the file tools decode files: each undecodable byte a lone surrogate."""
    text = data.decode("utf-8", errors="surrogateescape")
    result = spill(system(text), outputs, 500, Dense())  # the estimate cannot count these
    assert saved(result).read_bytes() == data
    assert result.metadata["spilled"]["bytes"] == len(data)


def test_a_lone_surrogate_no_bytes_make_is_kept_too(outputs: Path) -> None:
    text = "x\ud800y\udcff" * 2000
    path = saved(spill(system(text), outputs, 100, Dense()))
    assert path.read_bytes() == b"x\xed\xa0\x80y\xff" * 2000


def test_files_and_folder_are_private(tmp_path: Path) -> None:
    folder = tmp_path / "conversation"
    (folder / "outputs").mkdir(parents=True, mode=0o755)
    old = os.umask(0o277)  # files would be created read-only, folders 0o500
    try:
        outputs = outputs_folder(folder)
        os.chmod(outputs, 0o755)  # spilling makes it private again
        path = saved(spill(system(numbered(1000), tool="shell"), outputs, 200, Estimate()))
    finally:
        os.umask(old)
    assert outputs == (folder / "outputs").resolve()
    assert stat.S_IMODE(outputs.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.parent == outputs


def test_each_spill_gets_a_new_readable_name(outputs: Path) -> None:
    big = numbered(1000)
    first = saved(spill(system(big, tool="shell"), outputs, 200, Estimate()))
    second = saved(spill(system(big, tool="shell"), outputs, 200, Estimate()))
    third = saved(spill(system(big, tool="mcp.fetch/page"), outputs, 200, Estimate()))
    fourth = saved(spill(Message("system", big), outputs, 200, Estimate()))
    assert [p.name for p in (first, second, third, fourth)] == [
        "001-shell.txt", "002-shell.txt", "003-mcp.fetch_page.txt", "004-output.txt"]
    assert first.read_text() == second.read_text() == big


def test_a_name_taken_meanwhile_is_skipped_and_never_followed(
        outputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("untouched")
    (outputs / "001-shell.txt").symlink_to(target)
    (outputs / "002-shell.txt").write_text("taken")

    def empty(path: Path) -> Iterator[os.DirEntry[str]]:  # as if listed before they appeared
        return iter([])

    with monkeypatch.context() as patch:
        patch.setattr(os, "scandir", empty)
        path = saved(spill(system(numbered(1000), tool="shell"), outputs, 200, Estimate()))
    assert path.name == "003-shell.txt"
    assert target.read_text() == "untouched" and (outputs / "002-shell.txt").read_text() == "taken"


# -- the message ---------------------------------------------------------------------------


def test_the_copy_keeps_everything_but_the_content(outputs: Path) -> None:
    result = system(numbered(1000), Status.ERROR, tool="shell", exit_code=2,
                    timed_out=False).tagged("call-7", "shell")
    result = Message(result.role, result.content, result.call_id, result.timestamp,
                     result.metadata, result.tool, result.status, result.exit_code,
                     CallRecord("shell", Status.ERROR, 1.5, "Exit", 2))
    spilled = spill(result, outputs, 300, Estimate())
    assert spilled.content != result.content
    assert (spilled.role, spilled.call_id, spilled.timestamp, spilled.tool, spilled.status,
            spilled.exit_code, spilled.call) == (
        result.role, result.call_id, result.timestamp, result.tool, result.status,
        result.exit_code, result.call)
    assert spilled.metadata["timed_out"] is False and result.metadata == {"timed_out": False}
    assert set(spilled.metadata["spilled"]) == {"path", "bytes", "lines", "tokens"}
    assert saved(spilled).name == "001-shell.txt"


def test_the_read_call_offered_reads_what_was_cut(tmp_path: Path) -> None:
    """The call shown, given to the read tool of a session whose roots hold the folder,
    returns the first lines that were cut."""
    outputs = outputs_folder(tmp_path / "conversation")
    text = numbered(3000)
    shown = spill(system(text, tool="shell"), outputs, 1500, Estimate()).content
    [match] = CUT.finditer(shown)
    first = int(match.group(2))
    call = shown[shown.index("```read "):]
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with Session(Toolchain.build(["read"]), workspace=workspace, sandbox="off") as session:
        session.allow_reading(outputs)  # readable, never a root tools may write
        assert outputs not in session.roots
        [answer] = list(session.execute(call))
    assert not answer.failed, answer.content
    lines = answer.content.splitlines()
    assert lines[0].startswith(f"001-shell.txt (lines {first}-")  # as read names it
    assert lines[1].split(None, 1) == [str(first), text.splitlines()[first - 1]]
    assert Estimate().count(answer.content) <= 1500  # a piece that fits


def test_a_path_with_a_space_is_offered_without_a_range_in_markdown(tmp_path: Path) -> None:
    outputs = outputs_folder(tmp_path / "my conversations" / "c")
    shown = spill(system(numbered(1000)), outputs, 300, Estimate()).content
    assert shown.endswith(f"```read {outputs / '001-output.txt'}\n\n```")


def test_the_read_call_is_written_in_the_conversations_format(outputs: Path) -> None:
    shown = spill(system(numbered(1000)), outputs, 300, Estimate(), fmt="hermes").content
    path = outputs / "001-output.txt"
    assert re.search(r'<tool_call>\n\{"name": "read", "arguments": \{"path": '
                     rf'"{re.escape(str(path))}", "start": \d+, "end": \d+\}}\}}\n</tool_call>$',
                     shown)


def test_what_the_read_tool_cannot_show_is_said(outputs: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with_nul = spill(system("\x00" + numbered(1000)), outputs, 300, Estimate()).content
    assert "NUL bytes, which the read tool does not show" in with_nul
    assert "```read" not in with_nul and "sed -n '" in with_nul
    monkeypatch.setattr(spill_module, "READ_MAX_BYTES", 10_000)
    too_big = spill(system(numbered(1000)), outputs, 300, Estimate()).content
    assert "over the read tool's limit of 10000 bytes" in too_big and "```read" not in too_big


# -- where files go ------------------------------------------------------------------------


def test_a_conversation_in_memory_spills_to_one_private_folder_per_process() -> None:
    folder = outputs_folder(None)
    assert folder == outputs_folder(None)
    assert folder.is_absolute() and folder.is_dir()
    assert folder.name.startswith(f"fencecall-outputs-{os.getpid()}-")
    assert folder.parent == Path(tempfile.gettempdir()).resolve()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
