"""``gridweave run FILE.py::FUNCTION [ARGS...]``: one call of a function on the platform.

The file is imported here (as a module of its own, not ``__main__``), and the function is
sent by value with the file's own globals (``cloudpickle.register_pickle_by_value``), so
the worker needs only the packages the file imports, not the file itself.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, NoReturn

import cloudpickle
import typer

import gridweave as gw
from gridweave._units import cores
from gridweave_cli._errors import CliError, exit_with, handle_errors
from gridweave_cli._follow import OutputFollower
from gridweave_cli._help import add_commands
from gridweave_cli._output import JsonFlag, emit_json, stderr
from gridweave_cli._platform import platform_client, user_config
from gridweave_cli.exit_codes import ExitCode

__all__ = ["load_function", "parse_arguments", "register", "run"]

#: The longest a single wait for the result lasts before the spinner shows the new phase.
PHASE_REFRESH_SECONDS = 0.5
_KEYWORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)


def parse_arguments(texts: list[str]) -> tuple[list[Any], dict[str, Any]]:
    """``7 '[1, 2]' name=ada`` as ``[7, [1, 2]], {"name": "ada"}``: JSON, else a string."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for text in texts:
        keyword = _KEYWORD.fullmatch(text)
        if keyword is None:
            args.append(_value(text))
            continue
        name, value = keyword.groups()
        if name in kwargs:
            raise typer.BadParameter(f"{name}= is given twice", param_hint="ARGS")
        kwargs[name] = _value(value)
    return args, kwargs


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _import_file(path: Path) -> ModuleType:
    name = f"gridweave_run_{uuid.uuid4().hex[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise typer.BadParameter(f"{path} cannot be imported as Python", param_hint="TARGET")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # Like ``python file.py``: modules beside the file are importable from it.
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        message = f"importing {path} raised {type(exc).__name__}: {exc}{where}"
        raise CliError(message, ExitCode.FAILED) from exc
    cloudpickle.register_pickle_by_value(module)
    return module


def load_function(target: str) -> gw.Function[..., Any] | Callable[..., Any]:
    """The object ``FILE.py::NAME`` names: a ``@gw.function`` or a plain function."""
    file_text, separator, name = target.rpartition("::")
    if not separator or not file_text or not name:
        raise typer.BadParameter(f"{target!r}: expected FILE.py::FUNCTION", param_hint="TARGET")
    path = Path(file_text)
    if not path.is_file():
        raise typer.BadParameter(f"{path}: no such file", param_hint="TARGET")
    module = _import_file(path)
    found: object = getattr(module, name, None)
    if found is None:
        raise typer.BadParameter(f"{path} has no {name!r}", param_hint="TARGET")
    if isinstance(found, gw.Function):
        return found
    if not callable(found):
        raise typer.BadParameter(f"{name!r} in {path} is not a function", param_hint="TARGET")
    return found


def _remote_function(
    found: gw.Function[..., Any] | Callable[..., Any],
    *,
    vram: str | None,
    gpus: int | None,
    vendor: str | None,
    timeout: str | None,
    retries: int | None,
    memory: str | None = None,
    cpu: float | None = None,
    image: str | None = None,
    pip: list[str] | None = None,
    gpu_model: list[str] | None = None,
) -> gw.Function[..., Any]:
    """The function with its resources: the decorator's, each option given overriding."""
    if isinstance(found, gw.Function):
        base = found.resources
        return gw.function(
            vram=vram or base.vram_mb,
            gpus=base.gpu_count if gpus is None else gpus,
            vendor=vendor or base.vendor,
            timeout=timeout or base.timeout_seconds,
            retries=base.max_retries if retries is None else retries,
            memory=memory or base.memory_mb,
            cpu=cpu if cpu is not None else cores(base.cpu_millis),
            image=image or base.image,
            pip=pip or list(base.pip),
            gpu_model=gpu_model or list(base.gpu_models) or None,
        )(found.fn)
    if vram is None:
        raise typer.BadParameter(
            "a plain function needs --vram (or decorate it with @gw.function)",
            param_hint="--vram",
        )
    return gw.function(
        vram=vram,
        gpus=1 if gpus is None else gpus,
        vendor=vendor or "any",
        timeout=timeout or "10m",
        retries=0 if retries is None else retries,
        memory=memory,
        cpu=cpu,
        image=image,
        pip=pip,
        gpu_model=gpu_model or None,
    )(found)


def _wait(handle: gw.JobHandle[Any], output: OutputFollower) -> Any:
    """The job's value, with a spinner naming its phase on stderr meanwhile and the job's
    output printed as it comes (the spinner stopped while it prints)."""
    label = f"{handle.job_id}: {{}}"
    with stderr().status(label.format("Pending"), spinner="dots") as status:
        try:
            while True:
                try:
                    return handle.result(timeout=PHASE_REFRESH_SECONDS)
                except gw.JobNotFinished as waiting:
                    status.update(label.format(waiting.phase or "waiting"))
                    status.stop()  # its redirection of stdout ends while the output prints
                    output.read()
                    status.start()
        finally:
            status.stop()
            output.read()  # what the job wrote last, before its value or its traceback


def _print_value(value: Any, json_output: bool) -> None:
    if not json_output:
        sys.stdout.write(f"{value!r}\n")
        return
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        message = f"the result ({type(value).__name__}) is not JSON: {exc}; leave out --json"
        raise CliError(message, ExitCode.FAILED) from exc
    emit_json(value)


def _report_remote_failure(job_id: str, error: Exception, remote_traceback: str) -> NoReturn:
    """The remote traceback as it was, then the one error line; exit 1."""
    sys.stderr.write(remote_traceback.rstrip("\n") + "\n")
    sys.stderr.flush()
    if isinstance(error, gw.RemoteError):
        exit_with(str(error), ExitCode.FAILED)
    exit_with(f"job {job_id} raised {type(error).__name__}: {error}", ExitCode.FAILED)


@handle_errors
def run(
    target: Annotated[
        str, typer.Argument(help="FILE.py::FUNCTION, the function to run.", show_default=False)
    ],
    arguments: Annotated[
        list[str] | None,
        typer.Argument(
            help="Its arguments: each a JSON literal (7, 2.5, true, '[1, 2]', '{\"a\": 1}'), "
            "else a string; NAME=VALUE passes a keyword argument.",
            show_default=False,
        ),
    ] = None,
    vram: Annotated[
        str | None,
        typer.Option(
            help="VRAM per GPU, e.g. 16GB, 512MiB (needed for a plain function).",
            show_default=False,
        ),
    ] = None,
    gpus: Annotated[
        int | None,
        typer.Option(min=1, help="GPUs, all on one node (default 1).", show_default=False),
    ] = None,
    vendor: Annotated[
        str | None, typer.Option(help="nvidia, amd or any (default any).", show_default=False)
    ] = None,
    timeout: Annotated[
        str | None,
        typer.Option(
            help="The longest the call may run, e.g. 90s, 10m, 1h (default 10m).",
            show_default=False,
        ),
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option(min=0, help="Runs again after a lost node (default 0).", show_default=False),
    ] = None,
    memory: Annotated[
        str | None,
        typer.Option(
            help=(
                "Memory limit of the call, e.g. 8GB (default: the node's per GPU); past it "
                "the call fails OutOfMemory."
            ),
            show_default=False,
        ),
    ] = None,
    cpu: Annotated[
        float | None,
        typer.Option(
            min=0.01,
            help="CPU cores the call may use (default: the node's per GPU).",
            show_default=False,
        ),
    ] = None,
    image: Annotated[
        str | None,
        typer.Option(
            help=(
                "The image to run in, from the platform's registry: <namespace>/<name>[:tag] "
                "(default: the node's image, Debian's Python 3.11)."
            ),
            show_default=False,
        ),
    ] = None,
    pip: Annotated[
        list[str] | None,
        typer.Option(
            "--pip",
            metavar="REQUIREMENT",
            help=(
                "A package to install for the call, as a pip requirement of a package of the "
                "index (numpy==2.1.3); repeat it for more (replaces the decorator's pip=)."
            ),
            show_default=False,
        ),
    ] = None,
    gpu_model: Annotated[
        list[str] | None,
        typer.Option(
            "--gpu-model",
            metavar="MODEL",
            help=(
                "A GPU model that will do (A100, 'H100 80GB'); repeat it for several, any of "
                "them (replaces the decorator's gpu_model=)."
            ),
            show_default=False,
        ),
    ] = None,
    detach: Annotated[
        bool, typer.Option("--detach", "-d", help="Print the job id and return at once.")
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Run a function of a Python file on the platform and print its value (its repr; JSON
    with --json).

    The function is a @gw.function (its resources apply; options given override them) or a
    plain function (--vram is then needed). The command waits, showing the job's phase and
    printing what the function prints as it runs (its stdout on stdout, its stderr on stderr;
    both on stderr with --json), then prints the value; when the function raises, its remote
    traceback is printed and the exit code is 1. Put -- before arguments that start with a
    dash.

    Examples:

        gridweave run train.py::square 7

        gridweave run train.py::fit '[0.1, 0.2]' epochs=3 --vram 16GB

        gridweave run train.py::fit --detach -- -1
    """
    user_config()  # not logged in: exit 6 before the file is imported
    args, kwargs = parse_arguments(arguments or [])
    function = _remote_function(
        load_function(target),
        vram=vram,
        gpus=gpus,
        vendor=vendor,
        timeout=timeout,
        retries=retries,
        memory=memory,
        cpu=cpu,
        image=image,
        pip=pip,
        gpu_model=gpu_model,
    )
    handle = function.spawn(*args, **kwargs)
    if detach:
        if json_output:
            emit_json({"job_id": handle.job_id})
        else:
            sys.stdout.write(f"{handle.job_id}\n")
        return
    try:
        with platform_client() as client:
            value = _wait(handle, OutputFollower(client, handle.job_id, quiet_stdout=json_output))
    except KeyboardInterrupt:
        exit_with(
            f"stopped waiting; job {handle.job_id} goes on (`gridweave cancel "
            f"{handle.job_id}` stops it)",
            ExitCode.FAILED,
        )
    except Exception as exc:
        remote = getattr(exc, "remote_traceback", None)
        if not isinstance(remote, str):
            raise
        _report_remote_failure(handle.job_id, exc, remote)
    _print_value(value, json_output)


def register(app: typer.Typer) -> None:
    """Add ``run`` to ``app``."""
    add_commands(app, run)
