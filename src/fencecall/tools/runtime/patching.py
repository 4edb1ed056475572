"""Applying ORIGINAL/UPDATED patch blocks to text, all or nothing, with precise failures."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

ORIGINAL = "<<<<<<< ORIGINAL"
DIVIDER = "======="
UPDATED = ">>>>>>> UPDATED"
_MAX_CANDIDATE_LINES = 20_000


class PatchError(ValueError):
    """The patch could not be applied; the message says which part and why."""


@dataclass(frozen=True, slots=True)
class Hunk:
    original: str
    updated: str


def parse_patch(text: str) -> list[Hunk]:
    """The hunks of a patch; malformed markers raise :class:`PatchError` with a line number."""
    hunks: list[Hunk] = []
    state = "outside"
    original: list[str] = []
    updated: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        marker = line.rstrip()
        if state == "outside":
            if marker == ORIGINAL:
                state, original, updated = "original", [], []
            elif marker.strip():
                raise PatchError(f"line {number}: expected {ORIGINAL!r}, found {line!r}")
        elif state == "original":
            if marker == DIVIDER:
                state = "updated"
            elif marker in (ORIGINAL, UPDATED):
                raise PatchError(f"line {number}: {marker!r} before {DIVIDER!r}")
            else:
                original.append(line)
        elif marker == UPDATED:
            hunks.append(Hunk("\n".join(original), "\n".join(updated)))
            state = "outside"
        elif marker in (ORIGINAL, DIVIDER):
            raise PatchError(f"line {number}: {marker!r} before {UPDATED!r}")
        else:
            updated.append(line)
    if state != "outside":
        raise PatchError(f"the patch ends inside a hunk; close it with {UPDATED!r}")
    if not hunks:
        raise PatchError(f"no hunks found; write {ORIGINAL} / {DIVIDER} / {UPDATED} blocks")
    return hunks


def apply_patch(text: str, hunks: list[Hunk], name: str = "the file") -> str:
    """``text`` with every hunk applied in order; raises before changing anything."""
    for index, hunk in enumerate(hunks, 1):
        label = f"part {index} of {len(hunks)}" if len(hunks) > 1 else "the patch"
        if not hunk.original.strip():
            raise PatchError(f"{label}: the ORIGINAL section is empty")
        text = _apply_hunk(text, hunk, label, name)
    return text


def _apply_hunk(text: str, hunk: Hunk, label: str, name: str) -> str:
    count = text.count(hunk.original)
    if count == 1:
        return text.replace(hunk.original, hunk.updated, 1)
    if count > 1:
        raise PatchError(f"{label}: ORIGINAL matches {count} places in {name}; include more "
                         "surrounding lines so it matches one")
    lines = text.split("\n")
    wanted = hunk.original.split("\n")
    keys = [line.strip() for line in wanted]
    starts = [i for i in range(len(lines) - len(wanted) + 1)
              if [line.strip() for line in lines[i : i + len(wanted)]] == keys]
    if len(starts) > 1:
        raise PatchError(f"{label}: ORIGINAL matches {len(starts)} places in {name} when "
                         "whitespace is ignored; include more surrounding lines")
    if not starts:
        raise PatchError(f"{label}: ORIGINAL was not found in {name}.{_nearest(lines, wanted)}")
    start = starts[0]
    found = lines[start : start + len(wanted)]
    replacement = _reindent(hunk.updated.split("\n"), wanted, found)
    return "\n".join(lines[:start] + replacement + lines[start + len(wanted):])


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindent(updated: list[str], wanted: list[str], found: list[str]) -> list[str]:
    """Shift the UPDATED lines by the indentation the file has and the patch lacked."""
    pairs = [(w, f) for w, f in zip(wanted, found, strict=True) if w.strip()]
    if not pairs:
        return updated
    want, have = _indent(pairs[0][0]), _indent(pairs[0][1])
    if have.startswith(want):
        extra = have[len(want):]
        return [extra + line if line.strip() else line for line in updated]
    if want.startswith(have):
        drop = len(want) - len(have)
        return [line[drop:] if _indent(line)[:drop] == want[len(have):] else line.lstrip()
                for line in updated]
    return updated


def _nearest(lines: list[str], wanted: list[str]) -> str:
    if len(lines) > _MAX_CANDIDATE_LINES:
        return ""
    size = len(wanted)
    target = "\n".join(w.strip() for w in wanted)
    best_ratio, best_start = 0.0, -1
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    for start in range(max(1, len(lines) - size + 1)):
        window = "\n".join(line.strip() for line in lines[start : start + size])
        matcher.set_seq1(window)
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best_ratio, best_start = ratio, start
    if best_start < 0 or best_ratio < 0.5:
        return " No similar lines were found."
    found = lines[best_start : best_start + size]
    diff = "\n".join(difflib.unified_diff(wanted, found, "ORIGINAL (patch)", "file", lineterm="",
                                          n=0))
    return (f" The closest lines are {best_start + 1}-{best_start + len(found)} "
            f"({best_ratio:.0%} similar):\n{diff}")
