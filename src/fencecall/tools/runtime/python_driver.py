"""The child side of the python tool: a persistent namespace driven over two pipes.

Run as a script (stdlib only, so it starts fast):
``python_driver.py REQUEST_FD REPLY_FD STOP_SIGNAL REPLY_LIMIT``. Messages are JSON lines;
none this side sends is longer than REPLY_LIMIT bytes. Requests: ``exec`` (code, and how
many characters of its result or traceback to keep), ``functions`` (names to stub), and the
``return``/``raise`` answers to a stub's call. Replies: ``ready`` (the interpreter's pid,
first), ``done`` (with the request id; the repr of a trailing expression or a traceback, each
a string or, when cut, ``[head, characters cut, tail]``; and how many threads other than the
main one run), ``call`` (a stub calling back into the parent) and ``stopping`` (with the
request id: the stop handler ran). stdout and stderr are the files the parent gave, so output
of child processes is captured too.

STOP_SIGNAL stops the code for good. Its handler raises KeyboardInterrupt, and from then until
the exec returns, a trace function raises it again at every line of every frame but the
driver's, and a profile function at every call. CPython drops a trace or profile function
that raised, so each re-arms the other before it raises: code that catches the interrupt
makes no further call (no output, no file, no process), and runs no further line unless it
caught it twice over; what then loops without a call is killed by the parent, which repeats
the signal (re-arming both) until the driver answers or its grace ends.

The handler also tells the parent at once (``stopping``) that it ran: code that blocked the
signal, ignored it or put its own handler in its place never sends it, and the parent freezes
and kills the interpreter instead of waiting out the grace. And it silences what the code left
to run by itself: its interval timers are cancelled, and the handlers it set are replaced by
one that does nothing; once the block has unwound, every signal's handler and the signal mask
are put back to what they were when the driver started (see :func:`_settle`).
"""

import _thread
import ast
import faulthandler
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from types import FrameType
from typing import Any

namespace: dict[str, Any] = {"__name__": "__main__"}
_HOME = globals()
_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
_C = sys.modules["_signal"]
"""The C functions that ``signal`` wraps in Python, for what runs with the stop hooks armed:
a line of ``signal.py`` is not the driver's, and would raise KeyboardInterrupt there."""
_HANDLERS: dict[int, Any] = {}
"""Every signal's handler when the driver started (but the two no handler can take), as the
C functions give them (SIG_DFL and SIG_IGN as plain ints)."""
_MASK: set[int] = set()
"""The signals blocked when the driver started."""


class _Block:
    """The block being run, as the stop handler sees it (a signal handler cannot be told)."""

    running = False
    """Whether a block is being run: STOP_SIGNAL stops it only then."""
    id = 0
    stopped = False
    """Whether STOP_SIGNAL came while it ran: then it is cleaned up after (:func:`_settle`)."""
    reply_fd = -1
    sending = False
    """Whether a message is being written: the ack must not land in its middle."""
    ack_owed = False
    """Whether the stop handler cut into a message: the ack is sent once it is written."""


_block = _Block()


def _foreign(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs the code or what it called, not the driver."""
    return frame is not None and frame.f_globals is not _HOME


def _arm(frame: FrameType | None) -> None:
    """Profile every call, and trace every new frame and each one on the stack."""
    sys.setprofile(_profile)
    sys.settrace(_trace)
    while frame is not None:
        if _foreign(frame):
            frame.f_trace = _trace
        frame = frame.f_back


def _trace(frame: FrameType, event: str, arg: object) -> Any:
    where = frame.f_back if event == "call" else frame
    if event in ("call", "line") and _foreign(where):
        sys.setprofile(_profile)
        raise KeyboardInterrupt
    return _trace


def _profile(frame: FrameType, event: str, arg: object) -> None:
    where = frame.f_back if event == "call" else frame  # a C call's frame is the caller's
    if event in ("call", "c_call") and _foreign(where):
        _arm(frame)
        raise KeyboardInterrupt


def _on_stop(signum: int, frame: FrameType | None) -> None:
    if _block.running:
        _block.stopped = True
        _quiet()
        _acknowledge()
        _arm(frame)
        if _foreign(frame):  # in the driver's own lines, the code's first line raises
            raise KeyboardInterrupt


def _acknowledge() -> None:
    """Tell the parent the stop handler ran: the code is unwinding, and deserves the grace.
    Written straight to the pipe (the handler may have cut into the buffered file's write),
    or right after the message being written if the handler cut into one. Plain C calls,
    as the hooks may be armed."""
    if _block.sending:
        _block.ack_owed = True
        return
    _block.ack_owed = False
    try:  # not contextlib.suppress: its lines are not the driver's, and would raise
        os.write(_block.reply_fd, f'{{"op": "stopping", "id": {_block.id:d}}}\n'.encode())
    except OSError:  # the parent is gone: nobody to tell
        return


def _swallow(signum: int, frame: FrameType | None) -> None:
    """The handler of a signal whose handler the code set, once it was stopped: the code's
    would run a line of it, or (in the driver's lines) raise KeyboardInterrupt there."""


def _record() -> None:
    """Note every signal's handler and the signal mask, at start, for :func:`_settle`."""
    for signum in signal.valid_signals():
        handler = _C.getsignal(signum)
        if handler is None:  # set outside Python: nothing to put back
            continue
        try:
            _C.signal(signum, handler)  # SIGKILL and SIGSTOP take none
        except (OSError, ValueError):
            continue
        _HANDLERS[signum] = handler
    _MASK.update(signal.pthread_sigmask(signal.SIG_BLOCK, ()))


def _quiet() -> None:
    """Silence what the code left to run by itself: cancel every interval timer (the alarm
    is ITIMER_REAL's), and put :func:`_swallow` in place of each handler the code set. Timers
    first, so that none comes meanwhile; quick, as it runs in the stop handler, and only C
    calls, as it runs with the hooks armed too."""
    for which in _TIMERS:
        signal.setitimer(which, 0)
    signal.alarm(0)
    for signum, handler in _HANDLERS.items():
        if _C.getsignal(signum) != handler:
            _C.signal(signum, _swallow)


def _settle() -> None:
    """Once a stopped block has unwound: leave nothing of it to run, and the signals as the
    driver had them. The timers are cancelled again (:func:`_quiet`), the signal mask is put
    back (what the code held back comes now, to :func:`_swallow`), then every handler, set
    again even where Python saw no change (the code may have called ``sigaction`` itself), the
    wakeup fd, and a pending traceback dump.

    Only after a stop: a handler or timer the model sets in one block on purpose, to rely on
    in the next, is its business; a stopped block is one the model did not get to finish, and
    what it left running would act behind the model's back (and, for the stop signal itself,
    keep the next block from being stopped). What earlier blocks set goes too: which block set
    what cannot be told, and a stop is the point where the model is told to start afresh."""
    _quiet()
    _C.pthread_sigmask(signal.SIG_SETMASK, _MASK)
    for signum, handler in _HANDLERS.items():
        _C.signal(signum, handler)
    signal.set_wakeup_fd(-1)
    faulthandler.cancel_dump_traceback_later()


def main(request_fd: int, reply_fd: int, stop_signal: int, reply_limit: int) -> None:
    signal.signal(stop_signal, _on_stop)
    _record()
    _block.reply_fd = reply_fd
    requests = os.fdopen(request_fd, "r", encoding="utf-8")
    replies = os.fdopen(reply_fd, "w", encoding="utf-8", buffering=1)

    def send(message: dict[str, Any]) -> None:
        line = json.dumps(message) + "\n"
        if len(line) > reply_limit:  # ASCII: as many bytes as characters
            raise ValueError(f"{len(line)} bytes as JSON, over the {reply_limit} the "
                             "python tool takes")
        _block.sending = True
        try:
            replies.write(line)  # line-buffered: all written when it returns
        finally:
            _block.sending = False
            if _block.ack_owed:
                _acknowledge()

    def receive() -> dict[str, Any]:
        line = requests.readline()
        if not line:
            raise SystemExit(0)
        request: dict[str, Any] = json.loads(line)
        return request

    def make_stub(name: str) -> Callable[..., Any]:
        def stub(*args: Any, **kwargs: Any) -> Any:
            try:
                send({"op": "call", "name": name, "args": args, "kwargs": kwargs})
            except ValueError as err:
                raise ValueError(f"the arguments of {name}() are too large: {err}") from None
            answer = receive()
            if answer["op"] == "raise":
                raise RuntimeError(answer["error"])
            return answer["value"]

        stub.__name__ = name
        return stub

    send({"op": "ready", "pid": os.getpid()})
    while True:
        request = receive()
        if request["op"] == "functions":
            for name in request["names"]:
                namespace[name] = make_stub(name)
            continue
        _block.id = request["id"]
        done = {"op": "done", "id": request["id"], **run(request["code"], request["limit"])}
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            send(done)
        except ValueError as err:
            send({**done, "result": None, "error": f"The result could not be sent: {err}."})


def run(code: str, limit: int) -> dict[str, Any]:
    """Run ``code``; the fields of its ``done`` reply, texts cut to ``limit`` characters."""
    try:
        result, error = execute(code), None
    except BaseException as err:  # the model should see SystemExit and Ctrl-C too
        result, error = None, _traceback(err)
    return {"result": _cut(result, limit), "error": _cut(error, limit),
            "threads": _thread._count()}


def execute(code: str) -> str | None:
    """Run ``code`` in the namespace, stoppable by STOP_SIGNAL from the moment it came; the
    repr of its trailing expression (None when there is none, or it is None). After a stop,
    the hooks stay armed until :func:`_settle` is done, so that nothing of the code runs
    meanwhile; and they are disarmed whatever happens there."""
    _block.running, _block.stopped = True, False
    try:
        tree = ast.parse(code, "<input>", "exec")
        last = None
        if tree.body and isinstance(trailing := tree.body[-1], ast.Expr):
            tree.body.pop()
            last = compile(ast.Expression(trailing.value), "<input>", "eval")
        exec(compile(tree, "<input>", "exec"), namespace)
        value = None if last is None else eval(last, namespace)
        if value is None:
            return None
        namespace["_"] = value
        return repr(value)
    finally:
        try:
            if _block.stopped:
                _settle()
        finally:
            _block.running = False
            sys.settrace(None)
            sys.setprofile(None)


def _traceback(err: BaseException) -> str:
    """The traceback of ``err`` from the code's first frame on, the driver's frames (its
    stubs, its stop handlers) left out, in each exception it chains too."""
    report = traceback.TracebackException.from_exception(err)
    todo = [report]
    while todo:
        part = todo.pop()
        frames = list(part.stack)
        first = next((i for i, f in enumerate(frames) if f.filename == "<input>"), len(frames))
        part.stack = traceback.StackSummary.from_list(
            [f for f in frames[first:] if f.filename != __file__])
        todo += [chained for chained in (part.__cause__, part.__context__) if chained]
    return "".join(report.format())


def _cut(text: str | None, limit: int) -> str | list[Any] | None:
    """``text``, or ``[head, characters cut, tail]`` when it is longer than ``limit``."""
    if text is None or len(text) <= limit:
        return text
    half = limit // 2
    return [text[:half], len(text) - 2 * half, text[-half:]]


if __name__ == "__main__":
    main(*map(int, sys.argv[1:5]))
