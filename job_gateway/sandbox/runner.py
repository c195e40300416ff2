"""The runner: the only code of Gridweave's that runs inside a job's container.

It needs the standard library and cloudpickle only (no Ray, no Gridweave package): the
trusted worker mounts this file and its cloudpickle read-only at ``/opt/gridweave`` in
whatever image the job runs in, and starts ``python3 -m gridweave_runner`` as the
container's init (pid 1). The one place that unpickles a job's function, its arguments and
its result is the forked child below, inside the container (see docs/architecture.md,
"The job sandbox").

The pipes, each a file descriptor the trusted side passed in:

- stdin (0): two frames, the pickled function, then the pickled ``(args, kwargs)`` (an
  empty frame: no arguments);
- 3, the result: a JSON header frame (``status`` ``ok`` or ``exception``, the exception's
  type and message, the remote traceback), then the pickled return value (empty on an
  exception); written by the child, which runs the user's function;
- 4, the end: one JSON frame written by pid 1 once the child ended: its ``exit_code`` or
  the ``signal`` that killed it.

A frame is an 8-byte big-endian length and that many bytes. stdout and stderr are the
user's, captured by the trusted side as they come.

pid 1 never runs user code: it reads the inputs, forks, waits and reports. It asks the
kernel to kill it when its parent (the runtime, itself killed with the trusted worker)
dies, and makes itself undumpable so the user's child cannot trace it and undo that. When
pid 1 exits, the kernel kills every process left in the container's pid namespace.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import struct
import sys
import traceback
from typing import Any, BinaryIO

__all__ = [
    "END_FD",
    "MAX_HEADER_BYTES",
    "RESULT_FD",
    "main",
    "read_frame",
    "write_frame",
]

RESULT_FD = 3
END_FD = 4
#: A JSON frame (the result's header, the end record) larger than this is refused.
MAX_HEADER_BYTES = 256 * 1024
_LENGTH = struct.Struct(">Q")
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_MAX_MESSAGE_CHARS = 500


def write_frame(stream: BinaryIO, data: bytes) -> None:
    """Write one frame (length, then the bytes)."""
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)


def read_frame(stream: BinaryIO, limit: int) -> bytes:
    """Read one frame of at most ``limit`` bytes; ``ValueError`` when cut short or larger."""
    head = _read_exactly(stream, _LENGTH.size)
    (length,) = _LENGTH.unpack(head)
    if length > limit:
        raise ValueError(f"a frame of {length} bytes is over the limit of {limit}")
    return _read_exactly(stream, length)


def _read_exactly(stream: BinaryIO, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise ValueError(f"the stream ended {left} bytes short of a frame")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def main() -> None:
    """pid 1: read the inputs, run them in a child, report how the child ended."""
    _guard_init()
    stdin = sys.stdin.buffer
    function = read_frame(stdin, limit=1 << 40)
    arguments = read_frame(stdin, limit=1 << 40)
    child = os.fork()
    if child == 0:
        os.close(END_FD)
        code = _run_child(function, arguments)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    os.close(RESULT_FD)
    del function, arguments
    _, status = os.waitpid(child, 0)
    end: dict[str, Any] = {"exit_code": None, "signal": None}
    if os.WIFSIGNALED(status):
        end["signal"] = os.WTERMSIG(status)
    else:
        end["exit_code"] = os.WEXITSTATUS(status)
    with os.fdopen(END_FD, "wb") as channel:
        write_frame(channel, json.dumps(end).encode())
    # pid 1's exit takes down whatever the function left behind in the container


def _guard_init() -> None:
    """Die with the parent, and stay out of reach of the user's child (no ptrace, no
    /proc/1/mem): a process may undo its own parent-death signal, so pid 1 keeps it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    if os.getppid() == 1:  # the runtime ended before the signal was asked for
        os._exit(137)


def _run_child(function_bytes: bytes, argument_bytes: bytes) -> int:
    """Unpickle and call the function, then write the result frames; the exit code."""
    import cloudpickle

    header: dict[str, Any] = {"status": "ok"}
    payload = b""
    try:
        function = cloudpickle.loads(function_bytes)
        args, kwargs = cloudpickle.loads(argument_bytes) if argument_bytes else ((), {})
        del function_bytes, argument_bytes
        payload = cloudpickle.dumps(function(*args, **kwargs))
    except BaseException as error:  # SystemExit and KeyboardInterrupt are the user's too
        header = {
            "status": "exception",
            "exception_type": type(error).__qualname__[:500],
            "message": _short(error),
            "traceback": _user_traceback(error),
        }
        payload = b""
    with os.fdopen(RESULT_FD, "wb") as channel:
        write_frame(channel, json.dumps(header).encode())
        write_frame(channel, payload)
    return 0


def _user_traceback(error: BaseException) -> str:
    """The traceback from the user's frames on (the runner's own frame left out)."""
    frames = error.__traceback__
    if frames is not None and frames.tb_next is not None:
        frames = frames.tb_next
    text = "".join(traceback.format_exception(type(error), error, frames))
    return text[-(MAX_HEADER_BYTES // 8) :]  # JSON may escape a character to 6 bytes


def _short(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    if len(text) <= _MAX_MESSAGE_CHARS:
        return text
    return text[: _MAX_MESSAGE_CHARS - 3] + "..."


if __name__ == "__main__":
    main()
