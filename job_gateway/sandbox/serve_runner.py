"""The serving runner: an endpoint replica's container, serving HTTP on a Unix socket.

Like :mod:`job_gateway.sandbox.runner` (whose frames and guard it uses), it needs only the
standard library and cloudpickle: the trusted replica mounts it read-only at
``/opt/gridweave`` as ``gridweave_serve`` and starts ``python3 -m gridweave_serve`` as the
container's pid 1. The container has no network but its own loopback; the only way in is
the Unix socket ``/run/gridweave/serve.sock``, in a directory of the host the replica
mounts read-write for the container's user and connects to from outside.

pid 1 reads one JSON header frame on the control socket (descriptor 3), then one frame of
bytes, and serves in one of two ways:

- ``"kind": "class"``: the frame is the user's pickled class (or object). pid 1 forks; the
  child unpickles it, instantiates it, and serves its public methods as ``POST /{method}``
  (a JSON object is keyword arguments, an array positional ones, an empty body none; the
  answer is the return value as JSON, an exception a 500 ``{"error": {"type", "message",
  "traceback"}}``) and ``GET /-/gw/ready`` on the socket itself. This child is the one
  place an endpoint's class is unpickled.
- ``"kind": "command"``: the image's own server. pid 1 forks and execs ``command`` (the
  image's entrypoint and command) with ``PORT`` set, and relays every connection on the
  socket to ``127.0.0.1:PORT`` inside the container, byte for byte (streaming answers
  included).

pid 1 never runs user code. It ends when the control socket ends (the replica closed it or
died: the kernel then kills everything left in the pid namespace), or when the child ends,
after writing ``{"exit_code", "signal"}`` on the control socket. A class whose constructor
raised leaves its error in ``/run/gridweave/failed.json`` for the replica to report.
"""

from __future__ import annotations

import inspect
import json
import os
import signal
import socket
import socketserver
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler
from typing import Any

try:  # in a container: the runner beside it in /opt/gridweave
    from gridweave_runner import (  # type: ignore[import-not-found]
        CONTROL_FD,
        MAX_HEADER_BYTES,
        guard_init,
        load_program,
        read_frame,
        write_frame,
    )
except ImportError:  # read in the repository (tests, runtime none)
    from job_gateway.sandbox.runner import (
        CONTROL_FD,
        MAX_HEADER_BYTES,
        guard_init,
        load_program,
        read_frame,
        write_frame,
    )

__all__ = [
    "FAILED_NAME",
    "READY_PATH",
    "SERVE_DIR",
    "SERVE_DIR_VARIABLE",
    "SOCKET_NAME",
    "main",
]

#: Where the socket's directory is mounted in the container.
SERVE_DIR = "/run/gridweave"
#: Another directory for it, outside a container only (the runtime ``none``).
SERVE_DIR_VARIABLE = "GRIDWEAVE_SERVE_DIR"
SOCKET_NAME = "serve.sock"
FAILED_NAME = "failed.json"
#: The class server's own readiness route.
READY_PATH = "/-/gw/ready"
_MAX_BODY_BYTES = 64 << 20
_MAX_ERROR_CHARS = 4000


def main() -> None:
    """pid 1: read what to serve, start it in a child, relay or wait, end with it."""
    if os.getpid() == 1:
        guard_init()
    # a peer that hangs up must not kill the relay or the server (guard_init restores the
    # default action, which ends the process)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        header = json.loads(read_frame(CONTROL_FD, MAX_HEADER_BYTES))
        program = read_frame(CONTROL_FD, 1 << 40)
    except ValueError:
        return
    serve_dir = os.environ.get(SERVE_DIR_VARIABLE, SERVE_DIR)
    socket_path = os.path.join(serve_dir, SOCKET_NAME)
    environment = {str(k): str(v) for k, v in header.get("environment", {}).items()}
    if header.get("kind") == "command":
        port = int(header["port"])
        environment["PORT"] = str(port)
        child = _start_child(lambda: _exec_command(list(header["command"]), environment))
        listener = _listen(socket_path)
        threading.Thread(target=_relay_forever, args=(listener, port), daemon=True).start()
    else:
        child = _start_child(lambda: _serve_class(program, environment, socket_path))
    threading.Thread(target=_end_with_control, daemon=True).start()
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        end = {"exit_code": None, "signal": os.WTERMSIG(status)}
    else:
        end = {"exit_code": os.WEXITSTATUS(status), "signal": None}
    try:
        write_frame(CONTROL_FD, json.dumps(end).encode())
    except OSError:
        pass


def _start_child(run: Any) -> int:
    child = os.fork()
    if child == 0:
        os.close(CONTROL_FD)
        try:
            run()
        finally:
            os._exit(1)
    return child


def _end_with_control() -> None:
    """The replica closed the control socket (or died): end pid 1, and so the container."""
    control = socket.socket(fileno=os.dup(CONTROL_FD))
    while True:
        try:
            if not control.recv(1):
                break
        except OSError:
            break
    os._exit(0)


def _listen(path: str) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    return listener


# -- the image's own server ------------------------------------------------------------------


def _exec_command(command: list[str], environment: dict[str, str]) -> None:
    os.environ.update(environment)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # the image's server as it would run
    try:
        os.execvp(command[0], command)
    except OSError as error:
        sys.stderr.write(f"gridweave: the image's command {command!r} did not start: {error}\n")


def _relay_forever(listener: socket.socket, port: int) -> None:
    while True:
        try:
            outside, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_relay, args=(outside, port), daemon=True).start()


def _relay(outside: socket.socket, port: int) -> None:
    """One connection from the replica, to the image's server (tried for a few seconds:
    it may be starting)."""
    inside = None
    deadline = time.monotonic() + 5.0
    while inside is None:
        try:
            inside = socket.create_connection(("127.0.0.1", port), timeout=5.0)
        except OSError:
            if time.monotonic() > deadline:
                outside.close()
                return
            time.sleep(0.05)
    inside.settimeout(None)
    threading.Thread(target=_pump, args=(inside, outside), daemon=True).start()
    _pump(outside, inside)


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while True:
            chunk = source.recv(1 << 16)
            if not chunk:
                break
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# -- a user's class ------------------------------------------------------------------------


def _serve_class(program: bytes, environment: dict[str, str], socket_path: str) -> None:
    os.environ.update(environment)
    try:
        loaded = load_program(program)
        instance = loaded() if inspect.isclass(loaded) else loaded
    except BaseException as error:  # the user's constructor: reported, never served
        _write_failed(error, os.path.dirname(socket_path))
        traceback.print_exc()
        return
    methods = {
        name: getattr(instance, name)
        for name in dir(instance)
        if not name.startswith("_") and callable(getattr(instance, name, None))
    }
    server = _UnixHTTPServer(socket_path, _handler(methods))
    names = ", ".join(sorted(methods))
    sys.stderr.write(f"gridweave: serving {type(instance).__name__}: {names}\n")
    sys.stderr.flush()
    server.serve_forever()


def _write_failed(error: BaseException, serve_dir: str) -> None:
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    record = {
        "type": type(error).__name__,
        "message": f"{type(error).__name__}: {error}"[:_MAX_ERROR_CHARS],
        "traceback": text[-_MAX_ERROR_CHARS:],
    }
    with open(os.path.join(serve_dir, FAILED_NAME), "w") as handle:
        json.dump(record, handle)


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def _handler(methods: dict[str, Any]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def address_string(self) -> str:
            return "replica"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return  # the replica's own counting is its log

        def do_GET(self) -> None:
            if self.path == READY_PATH:
                self._answer(200, {"methods": sorted(methods)})
            elif self.path.strip("/") in methods:
                self._error(405, "method_not_allowed", f"call {self.path.strip('/')} with POST")
            else:
                self._not_found()

        def do_POST(self) -> None:
            name = self.path.strip("/")
            target = methods.get(name)
            if target is None:
                self._not_found()
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > _MAX_BODY_BYTES:
                self._error(413, "too_large", f"the body is over {_MAX_BODY_BYTES} bytes")
                return
            body = self.rfile.read(length) if length else b""
            try:
                arguments = json.loads(body) if body.strip() else None
            except ValueError as error:
                self._error(422, "invalid_json", f"the body is not JSON: {error}")
                return
            args, kwargs = _arguments(arguments)
            try:
                result = _call(target, args, kwargs)
                encoded = json.dumps(result).encode()
            except Exception as error:  # the user's error: answered, never fatal
                self._error(500, type(error).__name__, str(error), _user_traceback(error))
                return
            self._send(200, encoded)

        def _not_found(self) -> None:
            known = ", ".join(sorted(methods)) or "none"
            self._error(404, "not_found", f"no method {self.path.strip('/')!r}; methods: {known}")

        def _error(self, status: int, kind: str, message: str, trace: str = "") -> None:
            error = {"type": kind, "message": message[:_MAX_ERROR_CHARS]}
            if trace:
                error["traceback"] = trace
            self._answer(status, {"error": error})

        def _answer(self, status: int, body: Any) -> None:
            self._send(status, json.dumps(body).encode())

        def _send(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _arguments(arguments: Any) -> tuple[list[Any], dict[str, Any]]:
    if arguments is None:
        return [], {}
    if isinstance(arguments, dict):
        return [], arguments
    if isinstance(arguments, list):
        return arguments, {}
    return [arguments], {}


def _call(target: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    result = target(*args, **kwargs)
    if inspect.isawaitable(result):
        import asyncio

        async def awaited() -> Any:
            return await result

        return asyncio.run(awaited())
    return result


def _user_traceback(error: BaseException) -> str:
    """The traceback from the user's frames on (the server's own left out)."""
    frames = error.__traceback__
    while frames is not None and frames.tb_frame.f_code.co_filename == __file__:
        frames = frames.tb_next
    text = "".join(traceback.format_exception(type(error), error, frames))
    return text[-_MAX_ERROR_CHARS:]


if __name__ == "__main__":
    main()
