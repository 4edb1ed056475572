"""The compiled parsing core (mypyc, see ``setup.py``) reads every text exactly as its
sources do as plain Python, runs wherever it was built, and never runs stale."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import fencecall
from fencecall.parsing import _compiled as compiled

from .test_fast_path import FENCES, PROSE

PURE = bool(os.environ.get("FENCECALL_PURE_PYTHON"))
SRC = Path(fencecall.__file__).parent.parent
ROOT = Path(__file__).parents[2]

READ_CORPUS = """
import json, random, sys
from benchmarks.inputs import OPEN_MODEL_SHAPES, SHAPES
from fencecall.parsing import StreamParser, parse
from fencecall.parsing import _compiled as compiled

def reading(fmt, text, chunk):
    if chunk:
        parser = StreamParser(fmt)
        found = [c for i in range(0, len(text), chunk) for c in parser.feed(text[i:i + chunk])]
        found += parser.finish()
        diagnostics = parser.diagnostics
    else:
        parsed = parse(text, fmt)
        found, diagnostics = parsed.calls, parsed.diagnostics
    return [[repr(c), c.end] for c in found] + [repr(d) for d in diagnostics]

texts = json.loads(sys.stdin.read())
out = {"compiled": compiled.active(), "readings": []}
for fmt, shapes in {**SHAPES, **OPEN_MODEL_SHAPES}.items():
    for shape, make in shapes.items():
        texts.append([fmt, make(20_000)])
for fmt, text in texts:
    for chunk in (0, 1, 7, 64):
        out["readings"].append([fmt, chunk, reading(fmt, text, chunk)])
print(json.dumps(out))
"""


def _random_texts(count: int) -> list[list[str]]:
    rng = random.Random(15)
    pieces = [*FENCES, *PROSE, "<tool-use>\n<shell>\nls\n</shell>\n</tool-use>",
              '<function_calls>\n<invoke name="shell">\n<parameter name="command">ls'
              "</parameter>\n</invoke>\n</function_calls>", '@save(c1): {"path": "a"}',
              '<tool_call>\n{"name": "shell", "arguments": {"command": "ls"}}\n</tool_call>',
              "[read(path='a.py')]", "<function=shell>\n<parameter=command>\nls\n</parameter>"
              "\n</function>", "\r", "é", "\t"]
    return [[rng.choice(["markdown", "xml", "tool", "hermes", "qwen3-coder", "pythonic",
                         "auto"]),
             "".join(rng.choice(pieces) + rng.choice(["\n", "\n", "\r\n", " ", ""])
                     for _ in range(rng.randint(1, 40)))]
            for _ in range(count)]


def _read_corpus(pure: bool, texts: list[list[str]]) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("FENCECALL_PURE_PYTHON", None)
    if pure:
        env["FENCECALL_PURE_PYTHON"] = "1"
    done = subprocess.run([sys.executable, "-c", READ_CORPUS], input=json.dumps(texts),
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_the_parser_runs_compiled_unless_plain_python_is_asked_for() -> None:
    """Where a C compiler is present, ``pip install -e .`` compiled it."""
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if not PURE and shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}): the parser runs as plain Python")
    assert compiled.active() is not PURE


@pytest.mark.skipif(PURE or not compiled.active(), reason="the parser is not compiled here")
def test_compiled_and_plain_python_read_every_text_the_same() -> None:
    texts = _random_texts(400)
    ours, plain = _read_corpus(False, texts), _read_corpus(True, texts)
    assert (ours["compiled"], plain["compiled"]) == (True, False)
    assert ours["readings"] == plain["readings"]


def _copy_of_the_package(tmp_path: Path) -> Path:
    shutil.copytree(SRC / "fencecall", tmp_path / "fencecall",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for shared in SRC.glob("*__mypyc*"):  # the compiled modules' shared library
        shutil.copy2(shared, tmp_path)
    return tmp_path


def _import_there(folder: Path) -> subprocess.CompletedProcess[str]:
    probe = ("import warnings; warnings.simplefilter('always')\n"
             "from fencecall.parsing import _compiled, _scanner\n"
             "print(_compiled.active(), _scanner.__file__)")
    env = {**os.environ, "PYTHONPATH": str(folder)}
    env.pop("FENCECALL_PURE_PYTHON", None)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.skipif(PURE or not compiled.active(), reason="the parser is not compiled here")
def test_an_edited_source_runs_as_python_not_as_its_stale_build(tmp_path: Path) -> None:
    folder = _copy_of_the_package(tmp_path)
    current = _import_there(folder)
    assert current.stdout.split()[0] == "True", current.stderr
    assert "RuntimeWarning" not in current.stderr

    xmlcalls = folder / "fencecall" / "parsing" / "xmlcalls.py"
    xmlcalls.write_text(xmlcalls.read_text() + "\n# edited after the build\n")
    edited = _import_there(folder)
    active, scanner_file = edited.stdout.split()
    assert active == "False"  # every compiled module from source, not only the edited one
    assert scanner_file == str(folder / "fencecall" / "parsing" / "_scanner.py")
    assert "RuntimeWarning" in edited.stderr and "xmlcalls" in edited.stderr
    assert "pip install -e ." in edited.stderr


@pytest.mark.skipif(PURE or not compiled.active(), reason="the parser is not compiled here")
def test_a_build_without_its_record_is_not_trusted(tmp_path: Path) -> None:
    folder = _copy_of_the_package(tmp_path)
    (folder / "fencecall" / "parsing" / "compiled_from.json").unlink()
    unknown = _import_there(folder)
    assert unknown.stdout.split()[0] == "False"
    assert "RuntimeWarning" in unknown.stderr
