"""The child side of the python tool: a persistent namespace driven over two pipes.

Run as a script (stdlib only, so it starts fast): ``python_driver.py REQUEST_FD REPLY_FD``.
Messages are JSON lines. Requests: ``exec`` (code), ``functions`` (names to stub), and the
``return``/``raise`` answers to a stub's call. Replies: ``done`` (with the request id, the
repr of a trailing expression, or a traceback) and ``call`` (a stub calling back into the
parent). stdout and stderr are the files the parent gave, so output of child processes is
captured too.
"""

import ast
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

namespace: dict[str, Any] = {"__name__": "__main__"}


def main(request_fd: int, reply_fd: int) -> None:
    requests = os.fdopen(request_fd, "r", encoding="utf-8")
    replies = os.fdopen(reply_fd, "w", encoding="utf-8", buffering=1)

    def send(message: dict[str, Any]) -> None:
        replies.write(json.dumps(message) + "\n")

    def receive() -> dict[str, Any]:
        line = requests.readline()
        if not line:
            raise SystemExit(0)
        request: dict[str, Any] = json.loads(line)
        return request

    def make_stub(name: str) -> Callable[..., Any]:
        def stub(*args: Any, **kwargs: Any) -> Any:
            send({"op": "call", "name": name, "args": args, "kwargs": kwargs})
            answer = receive()
            if answer["op"] == "raise":
                raise RuntimeError(answer["error"])
            return answer["value"]

        stub.__name__ = name
        return stub

    while True:
        try:
            request = receive()
            if request["op"] == "functions":
                for name in request["names"]:
                    namespace[name] = make_stub(name)
                continue
            result, error = run(request["code"])
            sys.stdout.flush()
            sys.stderr.flush()
            send({"op": "done", "id": request["id"], "result": result, "error": error})
        except KeyboardInterrupt:  # an interrupt that arrived between requests
            continue


def run(code: str) -> tuple[str | None, str | None]:
    try:
        tree = ast.parse(code, "<input>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body[-1].value)
            tree.body.pop()
        exec(compile(tree, "<input>", "exec"), namespace)
        if last is not None:
            value = eval(compile(last, "<input>", "eval"), namespace)
            if value is not None:
                namespace["_"] = value
                return repr(value), None
        return None, None
    except BaseException as err:  # the model should see SystemExit and Ctrl-C too
        frames = traceback.extract_tb(err.__traceback__)
        keep = [i for i, f in enumerate(frames) if f.filename == "<input>"]
        tb = err.__traceback__
        for _ in range(keep[0] if keep else 0):
            assert tb is not None
            tb = tb.tb_next
        lines = traceback.format_exception(type(err), err, tb if keep else None)
        return None, "".join(lines)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
