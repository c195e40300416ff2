"""The runner: the only code of Gridweave's that runs inside a job's container.

It needs the standard library and cloudpickle only (no Ray, no Gridweave package): the
trusted worker mounts this file and its cloudpickle read-only at ``/opt/gridweave`` in
whatever image the job runs in, and starts ``python3 -m gridweave_runner`` as the
container's init (pid 1). The one place that unpickles a job's function, its arguments and
its result is the forked child below, inside the container (see docs/architecture.md,
"The job sandbox").

pid 1 never runs user code. It serves attempts one after the other over the control
socket, descriptor 3 (a Unix stream socket; the worker holds the other end), so a warm
container runs its owner's next attempt without starting again. Per attempt:

1. the worker sends one byte carrying three descriptors (``SCM_RIGHTS``): the attempt's
   stdout, its stderr, and the write end of its result pipe; then three frames: a JSON
   header (``{"environment": {...}}``), the pickled function, the pickled
   ``(args, kwargs)`` (an empty frame: no arguments);
2. pid 1 forks; the child takes the three descriptors as 1, 2 and the result pipe, sets
   the environment, unpickles and calls the function, and writes a JSON header frame
   (``status`` ``ok`` or ``exception``, the exception's type and message, the remote
   traceback) and the pickled return value (empty on an exception) to the result pipe;
   With ``"chunk": {"retries": r}`` in the header, the arguments frame is a pickled list of
   ``(args, kwargs)`` (a chunk of a map's inputs): the child unpickles the function once,
   calls it on each in turn (an input that raises is tried again, ``r`` times at most), and
   writes one header frame (with ``attempts``) and one payload frame per input, in order,
   as each finishes;
3. pid 1 waits for the child, empties the scratch directories named on its command line
   (``/scratch``, ``/tmp`` and ``/dev/shm`` in a container: scratch is per attempt; none
   when it is not the pid 1 of a container of its own), and answers one JSON frame on the
   control socket: the child's ``exit_code`` or the ``signal`` that killed it.

A frame is an 8-byte big-endian length and that many bytes. The control socket's end
(the worker closed it, or died) ends pid 1, and the kernel then kills every process left
in the container's pid namespace. pid 1 also asks the kernel to kill it when its parent
(the runtime, itself killed with the trusted worker) dies, and makes itself undumpable so
the user's child cannot trace it and undo that.
"""

from __future__ import annotations

import ctypes
import json
import linecache
import os
import shutil
import signal
import socket
import struct
import sys
import traceback
from typing import Any

__all__ = [
    "CONTROL_FD",
    "MAX_HEADER_BYTES",
    "SOURCES_MARKER",
    "guard_init",
    "load_program",
    "main",
    "read_frame",
    "register_sources",
    "write_frame",
]

CONTROL_FD = 3
#: A JSON frame (a header, the end record) larger than this is refused.
MAX_HEADER_BYTES = 256 * 1024
#: What pid 1 empties after each attempt, in a container (its command line names them).
SCRATCH_DIRS = ("/scratch", "/tmp", "/dev/shm")
_LENGTH = struct.Struct(">Q")
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_MAX_MESSAGE_CHARS = 500
_DESCRIPTORS = 3
#: After a program's pickle, the sources of its files may follow: this, then JSON
#: ``{filename: source}`` (the SDK's ``gridweave._pickling``; pickle ignores what follows).
SOURCES_MARKER = b"\n#gridweave-sources\n"


def write_frame(fd: int, data: bytes) -> None:
    """Write one frame (length, then the bytes) to descriptor ``fd``."""
    _write_all(fd, _LENGTH.pack(len(data)))
    _write_all(fd, data)


def read_frame(fd: int, limit: int) -> bytes:
    """Read one frame of at most ``limit`` bytes; ``ValueError`` when cut short or larger."""
    (length,) = _LENGTH.unpack(_read_exactly(fd, _LENGTH.size))
    if length > limit:
        raise ValueError(f"a frame of {length} bytes is over the limit of {limit}")
    return _read_exactly(fd, length)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise ValueError(f"the stream ended {left} bytes short of a frame")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def main(scratch: list[str]) -> None:
    """pid 1: serve attempts until the control socket ends, emptying ``scratch`` after
    each (only as the pid 1 of a pid namespace of its own: never a host's directories)."""
    if os.getpid() != 1:
        scratch = []
    guard_init()
    import cloudpickle  # noqa: F401  (loaded once: every attempt's child starts with it)

    control = socket.socket(fileno=CONTROL_FD)
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(control, 1, _DESCRIPTORS)
        except OSError:
            return
        if len(fds) != _DESCRIPTORS:
            return  # the worker is gone (end of stream), or it did not follow the protocol
        try:
            header = json.loads(read_frame(CONTROL_FD, MAX_HEADER_BYTES))
            function = read_frame(CONTROL_FD, 1 << 40)
            arguments = read_frame(CONTROL_FD, 1 << 40)
        except ValueError:
            return
        end = _serve(header, function, arguments, fds)
        del function, arguments
        for directory in scratch:
            _empty(directory)
        write_frame(CONTROL_FD, json.dumps(end).encode())


def _serve(header: dict[str, Any], function: bytes, arguments: bytes, fds: list[int]) -> Any:
    """Run one attempt in a child; how the child ended."""
    stdout, stderr, result = fds
    child = os.fork()
    if child == 0:
        os.close(CONTROL_FD)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        os.close(stdout)
        os.close(stderr)
        os.environ.update({str(k): str(v) for k, v in header.get("environment", {}).items()})
        chunk = header.get("chunk")
        if isinstance(chunk, dict):
            os._exit(_run_chunk(function, arguments, result, int(chunk.get("retries", 0))))
        os._exit(_run_child(function, arguments, result))
    for fd in fds:
        os.close(fd)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        return {"exit_code": None, "signal": os.WTERMSIG(status)}
    return {"exit_code": os.WEXITSTATUS(status), "signal": None}


def _empty(directory: str) -> None:
    """Remove what the attempt left in ``directory`` (its own files: pid 1 is the same uid)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, onerror=_writable_then_retry)  # the image's Python may be 3.11
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def _writable_then_retry(function: Any, path: str, _error: Any) -> None:
    """A directory the job made unwritable: make it writable and try again, once."""
    try:
        os.chmod(os.path.dirname(path), 0o700)
        os.chmod(path, 0o700)
        function(path)
    except OSError:
        pass


def register_sources(program: bytes) -> None:
    """Give ``linecache`` the sources that follow the program's pickle, if any, so a
    traceback through the user's code shows its lines (the files are not in the container).

    The marker's newlines cannot occur inside the JSON (it escapes them), so its last
    occurrence starts the trailer; anything that does not read as one is ignored.
    """
    start = program.rfind(SOURCES_MARKER)
    if start < 0:
        return
    try:
        sources = json.loads(program[start + len(SOURCES_MARKER) :])
    except ValueError:
        return
    if not isinstance(sources, dict):
        return
    for filename, text in sources.items():
        if isinstance(filename, str) and isinstance(text, str):
            # mtime None: checkcache leaves the entry alone (as for a loader's source)
            linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)


def load_program(program: bytes) -> Any:
    """The pickled function or class, its sources registered with ``linecache`` first."""
    import cloudpickle

    register_sources(program)
    return cloudpickle.loads(program)


def guard_init() -> None:
    """Die with the parent, and stay out of reach of the user's child (no ptrace, no
    /proc/1/mem): a process may undo its own parent-death signal, so pid 1 keeps it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)


def _run_child(function_bytes: bytes, argument_bytes: bytes, result_fd: int) -> int:
    """Unpickle and call the function, then write the result frames; the exit code."""
    import cloudpickle

    header: dict[str, Any] = {"status": "ok"}
    payload = b""
    try:
        function = load_program(function_bytes)
        args, kwargs = cloudpickle.loads(argument_bytes) if argument_bytes else ((), {})
        del function_bytes, argument_bytes
        payload = cloudpickle.dumps(function(*args, **kwargs))
    except BaseException as error:  # SystemExit and KeyboardInterrupt are the user's too
        header = _exception_header(error)
        payload = b""
    _flush_streams()
    return 0 if _write_result(result_fd, header, payload) else 1


def _run_chunk(function_bytes: bytes, chunk_bytes: bytes, result_fd: int, retries: int) -> int:
    """Call the function on each input of the chunk, writing each one's frames as it ends;
    the exit code (1: the chunk could not be read, its one header says why)."""
    import cloudpickle

    try:
        function = load_program(function_bytes)
        calls = cloudpickle.loads(chunk_bytes)
        del function_bytes, chunk_bytes
    except BaseException as error:
        _write_result(result_fd, _exception_header(error), b"")
        return 1
    for args, kwargs in calls:
        for attempt in range(1, retries + 2):
            header: dict[str, Any] = {"status": "ok", "attempts": attempt}
            payload = b""
            try:
                payload = cloudpickle.dumps(function(*args, **kwargs))
                break
            except BaseException as error:  # the user's: tried again, then reported
                header = {**_exception_header(error), "attempts": attempt}
        _flush_streams()
        if not _write_result(result_fd, header, payload):
            return 1
    return 0


def _exception_header(error: BaseException) -> dict[str, Any]:
    return {
        "status": "exception",
        "exception_type": type(error).__qualname__[:500],
        "message": _short(error),
        "traceback": _user_traceback(error),
    }


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()  # the child ends with os._exit, which flushes nothing
        except (OSError, ValueError):
            pass


def _write_result(result_fd: int, header: dict[str, Any], payload: bytes) -> bool:
    try:
        write_frame(result_fd, json.dumps(header).encode())
        write_frame(result_fd, payload)
    except OSError:
        return False
    return True


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
    main(sys.argv[1:])
