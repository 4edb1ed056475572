"""What opening files by descriptor costs the file tools, per call.

Run: ``python -m benchmarks.file_access``. The file tools walk every path one component at a
time from ``/``, each opened relative to the folder before it without following links
(``fencecall.tools.workspace.locate``), then read, create and rename through the last
folder's descriptor. "by name" is what they did before: ``Path.resolve()``, a check, and an
open or ``mkstemp`` + ``os.replace`` by name, which a concurrent symlink swap can redirect.
Both read and write the same file of 2 KB, at a shallow path (the workspace's own folder) and a
deep one (six folders down). "tool call" rows are a whole ``read``/``save`` call through a
Session (parsing, pipeline, hooks), for scale. Cases are timed in turn with
:func:`benchmarks.timing.compare`: the same number of runs each, median and fastest.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from fencecall.execution import Session, auto_yes
from fencecall.tools import Toolchain
from fencecall.tools.runtime.file_io import atomic_write, open_existing, read_fd
from fencecall.tools.workspace import locate

from .timing import compare

F = "```"
TEXT = "x = 1  # a line of a small source file\n" * 50
DEPTHS = {"shallow": "x.py", "deep": "a/b/c/d/e/f/x.py"}


def _read_by_name(root: Path, given: str) -> bytes:
    path = (root / given).resolve()
    assert path.is_relative_to(root)
    return path.read_bytes()


def _write_by_name(root: Path, given: str) -> None:
    path = (root / given).resolve()
    assert path.is_relative_to(root)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        handle.write(TEXT.encode())
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def _read_by_descriptor(root: Path, given: str) -> bytes:
    with locate(given, [root]) as place:
        opened = open_existing(place)
        assert opened is not None
        return read_fd(opened[0])


def _write_by_descriptor(root: Path, given: str) -> None:
    with locate(given, [root]) as place:
        atomic_write(place, TEXT)


def cases(root: Path, session: Session) -> dict[str, Callable[[], object]]:
    made: dict[str, Callable[[], object]] = {}
    for depth, given in DEPTHS.items():
        (root / given).parent.mkdir(parents=True, exist_ok=True)
        (root / given).write_text(TEXT)
        made[f"read {depth}: by name"] = functools.partial(_read_by_name, root, given)
        made[f"read {depth}: by descriptor"] = functools.partial(_read_by_descriptor, root, given)
        made[f"write {depth}: by name"] = functools.partial(_write_by_name, root, given)
        made[f"write {depth}: by descriptor"] = functools.partial(_write_by_descriptor, root,
                                                                  given)
    deep = DEPTHS["deep"]
    made["tool call: read deep"] = lambda: list(session.execute(f"{F}read {deep}\n{F}\n"))
    made["tool call: save deep"] = lambda: list(session.execute(
        f"{F}save {deep}\n{TEXT}{F}\n"))
    return made


def table(budget: float = 2.0, min_runs: int = 200) -> list[dict[str, object]]:
    """One row per case: median and fastest in microseconds, and the ratio to "by name"."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder).resolve()
        with Session(Toolchain.build(["read", "save"]), workspace=root,
                     confirm=auto_yes) as session:
            timings = compare(cases(root, session), budget=budget, min_runs=min_runs,
                              max_runs=max(min_runs, 2000))
    rows: list[dict[str, object]] = []
    for name, timing in timings.items():
        base = timings.get(name.replace("by descriptor", "by name"))
        rows.append({"case": name, "runs": timing.runs,
                     "median µs": round(timing.median * 1e6, 1),
                     "min µs": round(timing.min * 1e6, 1),
                     "x by name": (round(timing.median / base.median, 2)
                                   if base is not None and "by descriptor" in name else "")})
    return rows


def main() -> None:
    rows = table(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
    print(f"descriptor-relative file access, {os.uname().machine}, Python "
          f"{sys.version.split()[0]}\n")
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in columns) + " |")


if __name__ == "__main__":
    main()
