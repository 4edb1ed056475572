"""Local servers the tests (and benchmarks) start: a free port, and waiting until it listens."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 20,
                  why: Callable[[], str] = lambda: "") -> None:
    """Return once something listens on 127.0.0.1:``port``; raise if ``process`` exits or
    ``timeout`` passes first (with ``why()``, say the end of its log, in the message)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} {why()}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {port} {why()}")
