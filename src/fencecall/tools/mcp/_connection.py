"""A live MCP client session with one server, driven from synchronous code.

fencecall's tools run synchronously; the MCP SDK is asynchronous. Each connection runs the
SDK's client on an event loop in its own thread, so connections (one per server per
session) never share state, and a stuck server holds up only its own thread. The server's
stderr goes to an anonymous file, not the terminal, and its last lines are quoted when it
fails.

A stdio server runs outside the sandbox, with the user's rights, so nothing the model can write
may become part of it: it starts in a fresh private folder (not the workspace, where ``python
-m NAME`` would import a planted ``NAME.py``) unless its declaration names a ``cwd``; its PATH
leads into no writable root, its bare command is looked up on that PATH, and
``PYTHONSAFEPATH=1`` keeps a Python server's cwd and script folder off ``sys.path``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from ...errors import ToolError
from ...message import SURROGATE_ESCAPE
from ...sandbox import make_scratch
from ...sandbox.host_programs import clean_path, inside
from ._declaration import McpServerConfig

logging.getLogger("mcp").addHandler(logging.NullHandler())  # SDK tracebacks stay off the screen
STDERR_TAIL = 2_000
CLOSE_TIMEOUT = 10.0
"""Closing waits for the SDK's own bounded shutdown (stdin closed, then SIGTERM, SIGKILL)."""


class McpServerError(ToolError):
    """The server could not start, broke the connection, or did not answer in time."""


class McpConnection:
    """One client session with ``config``'s server: :meth:`start`, :meth:`call`, :meth:`close`.

    ``env`` is what a stdio server's process inherits (the allow-listed environment fencecall
    gives tools; see :func:`server_environment`). ``roots`` are the folders the model can
    write (the workspace first): none is on its PATH or its folder, unless declared.
    """

    def __init__(self, config: McpServerConfig, env: Mapping[str, str],
                 roots: Sequence[Path] = ()):
        self.config = config
        self._env = dict(env)
        self._roots = tuple(roots)
        self._params: Any = None
        """The stdio server's ``StdioServerParameters``, made by :meth:`start`."""
        self._folder: Path | None = None
        """Its private folder, removed when the connection ends."""
        self._hidden: list[str] = []
        """Folders of its PATH left out as inside a root (said when it fails)."""
        self._stderr = tempfile.TemporaryFile("w+b")  # noqa: SIM115 (closed in close())
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task[None] | None = None
        self._client: Any = None
        self._ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self.stray_lines = 0
        """Lines on the server's stdout that were not MCP messages (ignored)."""
        self.error: str | None = None
        """Why the connection ended, once it has (None while it lives or after close)."""
        self._closing = False
        self._calls: set[concurrent.futures.Future[Any]] = set()
        """Calls in flight, cancelled first when the connection closes (the SDK's shutdown
        waits for them)."""

    # -- life ----------------------------------------------------------------------------

    def start(self) -> list[Any]:
        """Start the server, shake hands, and return its tools (``mcp.types.Tool``)."""
        if self.config.command is not None:
            try:
                self._params = self._stdio_parameters(self.config.command)
            except ValueError as err:  # nothing started: only the stderr file to close
                self._stderr.close()
                raise McpServerError(self._failure(f"could not start: {err}")) from None
        self._thread = threading.Thread(target=self._run, name=f"mcp-{self.config.name}",
                                        daemon=True)
        self._thread.start()
        try:
            return self._ready.result(self.config.start_timeout)
        except concurrent.futures.TimeoutError:
            self.close()
            raise McpServerError(self._failure(
                f"did not start within {self.config.start_timeout:g} s")) from None
        except McpServerError:
            self.close()
            raise

    @property
    def alive(self) -> bool:
        return self._ready.done() and self.error is None and not self._finished.is_set()

    def close(self, wait: bool = True) -> None:
        """End the session and the server's process; safe to call twice, from any thread.
        A call in flight fails at once. Without ``wait``, the shutdown goes on in the
        connection's thread (for a caller that must not block, such as an event loop)."""
        self._closing = True
        for future in list(self._calls):
            future.cancel()
        # A started session ends the SDK's way (stdin closed, the process waited for, then
        # terminated); one still starting is cancelled.
        stop = self._stop if self._ready.done() else None
        self._signal(stop.set if stop is not None else None)
        if not wait:
            return
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(CLOSE_TIMEOUT)
            if self._thread.is_alive():
                self._signal(None)
                self._thread.join(CLOSE_TIMEOUT)
        if self._finished.is_set():
            self._stderr.close()

    def _signal(self, action: Callable[[], None] | None) -> None:
        """Run ``action`` (else cancel the main task) in the connection's loop, if it runs."""
        loop, main = self._loop, self._main
        if loop is not None and main is not None and not self._finished.is_set():
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                loop.call_soon_threadsafe(action or main.cancel)

    def stderr_tail(self) -> str:
        """The end of what the server wrote to stderr."""
        if self._stderr.closed:
            return ""
        fd = self._stderr.fileno()
        size = os.fstat(fd).st_size
        data = os.pread(fd, STDERR_TAIL, max(0, size - STDERR_TAIL))
        text = data.decode("utf-8", "replace")
        return text[text.find("\n") + 1:] if size > STDERR_TAIL else text

    # -- calls ---------------------------------------------------------------------------

    def call(self, tool: str, arguments: Mapping[str, Any], timeout: float) -> Any:
        """Call ``tool`` and return its ``CallToolResult``; :class:`McpServerError` when the
        server fails or takes longer than ``timeout`` seconds (the call is then cancelled)."""
        if not self.alive or self._loop is None:
            raise McpServerError(self._failure(self.error or "is not running"))
        future = asyncio.run_coroutine_threadsafe(
            self._client.call_tool(tool, dict(arguments)), self._loop)
        self._calls.add(future)
        if self._closing:  # closed while the call was being sent
            future.cancel()
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpServerError(f"MCP server {self.config.name!r}: {tool} did not answer "
                                 f"within {timeout:g} s; the call was cancelled") from None
        except concurrent.futures.CancelledError:
            raise McpServerError(self._failure(self.error or "closed")) from None
        except Exception as err:
            if self._finished.wait(0.5) or _connection_lost(err):
                self.error = self.error or "closed the connection (it exited or crashed)"
                raise McpServerError(self._failure(self.error)) from None
            raise McpServerError(f"MCP server {self.config.name!r}: {tool} failed: "
                                 f"{type(err).__name__}: {err}") from None
        finally:
            self._calls.discard(future)

    def _failure(self, what: str) -> str:
        tail = self.stderr_tail().strip()
        where = f"MCP server {self.config.name!r} ({self.config.describe()}) {what}."
        if self._hidden:
            where += (f"\nIts PATH leaves out {', '.join(self._hidden)}, inside a folder the "
                      "model may write; to trust it, give the command as an absolute path")
        return f"{where}\nIts last stderr lines:\n{tail}" if tail else where

    # -- the event loop thread -------------------------------------------------------------

    def _stdio_parameters(self, command: str) -> Any:
        """How the stdio server starts (see the module's docstring); ValueError says why it
        cannot."""
        from mcp import StdioServerParameters

        env = server_environment(self._env, self.config.env, self._roots)
        given = {**self._env, **self.config.env}.get("PATH", os.environ.get("PATH", os.defpath))
        self._hidden = [entry for entry in given.split(os.pathsep)
                        if os.path.isabs(entry) and inside(Path(entry), self._roots)]
        cwd = Path(self.config.cwd).expanduser() if self.config.cwd else None
        program = find_program(command, env["PATH"], cwd)
        if cwd is None:
            cwd = self._folder = private_folder(self._roots)
        return StdioServerParameters(command=program, args=list(self.config.args), env=env,
                                     cwd=cwd)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        finally:
            if self._folder is not None:
                shutil.rmtree(self._folder, ignore_errors=True)
            self._finished.set()
            if not self._ready.done():
                self._ready.set_exception(McpServerError(self._failure(
                    self.error or "stopped before it was ready")))

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        self._stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                self._client = await stack.enter_async_context(self._make_client(stack))
                tools = await self._list_tools()
                self._ready.set_result(tools)
                await self._stop.wait()
        except asyncio.CancelledError:
            if not self._closing:
                self.error = "was stopped"
        except Exception as err:
            self.error = _describe(err)
        finally:
            if not self._closing and self.error is None:
                self.error = "closed the connection (it exited or crashed)"

    def _make_client(self, stack: AsyncExitStack) -> Any:
        from mcp import Client
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client

        config = self.config
        if config.url is not None:
            import httpx2

            http = httpx2.AsyncClient(headers=dict(config.headers),
                                      timeout=httpx2.Timeout(30.0, read=300.0))
            stack.push_async_callback(http.aclose)
            transport = streamable_http_client(config.url, http_client=http)
        else:
            transport = _mending(stdio_client(self._params,
                                              errlog=self._stderr))  # type: ignore[arg-type]
        return Client(transport, message_handler=self._on_message)

    async def _list_tools(self) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(100):  # a paginator that never ends cannot hang the start
            page = await self._client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.stray_lines += 1


def server_environment(inherited: Mapping[str, str], declared: Mapping[str, str],
                       roots: Sequence[Path]) -> dict[str, str]:
    """A stdio server's environment: ``inherited`` (without a PATH, fencecall's own, as the
    SDK would take) with ``PYTHONSAFEPATH=1``, then the declaration's ``env`` over it; last,
    the PATH cleaned by :func:`clean_path`, also one the declaration gives (``${PATH}`` in it
    would bring back whatever fencecall's own PATH holds)."""
    env = {"PATH": os.environ.get("PATH", os.defpath), **inherited, "PYTHONSAFEPATH": "1",
           **declared}
    env["PATH"] = clean_path(env["PATH"], roots)
    return env


def find_program(command: str, path: str, cwd: Path | None) -> str:
    """The program ``command`` names: a bare name looked up on ``path`` (on its absolute
    entries: never in fencecall's own cwd), a relative path in the declared ``cwd``."""
    if os.sep not in command:
        absolute = os.pathsep.join(e for e in path.split(os.pathsep) if os.path.isabs(e))
        found = shutil.which(command, path=absolute)
        if found is None:
            raise ValueError(f"{command!r} is not on its PATH ({path})")
        return found
    if os.path.isabs(command):
        return command
    if cwd is None:
        raise ValueError(f"the command {command!r} is a relative path: make it absolute, "
                         f"or declare the cwd it is relative to")
    return str(cwd / command)


def private_folder(roots: Sequence[Path]) -> Path:
    """A new empty ``0700`` folder for one server to start in, outside every root (so it
    holds nothing the model wrote)."""
    folder = make_scratch("mcp")
    if inside(folder, roots):
        shutil.rmtree(folder)
        raise ValueError(f"the temporary folder {folder.parent} is in a writable root; "
                         f"point TMPDIR elsewhere, or declare the server's cwd")
    return folder


@contextlib.asynccontextmanager
async def _mending(transport: Any) -> AsyncIterator[tuple[Any, Any]]:
    """A stdio transport whose reader takes lines holding a lone surrogate (see
    :class:`_MendedLines`)."""
    async with transport as (read, write):
        yield _MendedLines(read), write


class _MendedLines:
    """The SDK's read stream, where a line its JSON reader refused for a lone surrogate
    escape (``"\\ud83d"``: a server in JavaScript writes one for half of an emoji) is read
    again with Python's, which takes it. The SDK returns such a line as an error, so the
    call's answer was lost and the call waited out its timeout; read, the result comes
    through, and the pipeline makes its text safe (:func:`~fencecall.message.safe_text`).
    A line refused for anything else stays refused."""

    def __init__(self, stream: Any):
        self._stream = stream

    @property
    def last_context(self) -> Any:
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> Any:
        return _mended(await self._stream.receive())

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __aiter__(self) -> _MendedLines:
        return self

    async def __anext__(self) -> Any:
        return _mended(await self._stream.__anext__())

    async def __aenter__(self) -> _MendedLines:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        result: bool | None = await self._stream.__aexit__(*exc)
        return result


def _mended(item: Any) -> Any:
    """``item``, or the message it is when it is a line refused for a lone surrogate."""
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter
    from pydantic import ValidationError

    if not isinstance(item, ValidationError):
        return item
    line = next((error["input"] for error in item.errors()[:1]
                 if error["type"] == "json_invalid"), None)
    if not isinstance(line, str) or not SURROGATE_ESCAPE.search(line):
        return item
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_python(json.loads(line),
                                                                      by_name=False))
    except ValueError:
        return item


def _connection_lost(err: Exception) -> bool:
    return "connection closed" in str(err).lower()


def _describe(err: BaseException) -> str:
    """A failure in a few words; exception groups (from the SDK's task groups) unwrapped."""
    while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
        err = err.exceptions[0]
    if isinstance(err, BaseExceptionGroup):
        return "failed: " + "; ".join(_describe(e) for e in err.exceptions)
    if isinstance(err, FileNotFoundError):
        return f"could not start: {err.strerror}: {err.filename}"
    return f"failed: {type(err).__name__}: {err}"
