"""``gridweave endpoints``, ``gridweave deploy NAME`` and ``gridweave stop NAME``."""

from __future__ import annotations

import runpy
import time
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import typer
from rich.markup import escape
from rich.table import Table

import gridweave as gw
from gridweave._endpoint import Scaling
from gridweave._pickling import dumps_program
from gridweave._units import cores
from gridweave_cli._durations import seconds_of
from gridweave_cli._errors import CliError, handle_errors
from gridweave_cli._help import add_commands
from gridweave_cli._output import (
    JsonFlag,
    age,
    credits_text,
    emit_json,
    mib_text,
    stderr,
    stdout,
)
from gridweave_cli._platform import configured_url, platform_client
from gridweave_clients.images import parse_image
from gridweave_clients.pip import check_requirements
from gridweave_clients.platform import PlatformClient
from gridweave_clients.platform.endpoints import EndpointResponse

__all__ = ["deploy", "endpoints", "register", "stop"]

#: How often ``deploy --wait`` asks how the endpoint is doing, seconds.
WAIT_POLL_SECONDS = 1.0

NameArgument = Annotated[
    str, typer.Argument(help="The endpoint's name (lowercase letters, digits and '-').")
]


def _state(endpoint: EndpointResponse) -> str:
    """The phase, with the reason when it is not running (``Stopped (OutOfCredits)``), and
    why a woken one waits (``Stopped (Idle), waking: WaitingForGpu``)."""
    state = endpoint.phase.value
    if endpoint.reason and endpoint.phase.value != "Running":
        state = f"{state} ({endpoint.reason})"
    if endpoint.waking_reason:
        state = f"{state}, waking: {endpoint.waking_reason}"
    return state


def _endpoint_json(endpoint: EndpointResponse, base_url: str) -> dict[str, Any]:
    return {**endpoint.model_dump(mode="json"), "url": f"{base_url}{endpoint.path}"}


@handle_errors
def endpoints(json_output: JsonFlag = False) -> None:
    """List your endpoints: name, mode, phase (and why it stopped), replicas, GPUs x VRAM,
    price, age, URL.

    An endpoint stopped because your credits ran out shows ``Stopped (OutOfCredits)``; one
    scaled to zero shows ``Stopped (Idle)`` and wakes on its next call; one waiting for GPUs
    shows why (``Pending (WaitingForGpu)``: every GPU that fits it is taken;
    ``Pending (RealGpuBusy)``: a vllm endpoint waits for a real GPU with room),
    and so does one a call woke (``Stopped (Idle), waking: WaitingForGpu``: every GPU that
    fits it is taken).
    --json gives the reason's message too.

    Examples:

        gridweave endpoints

        gridweave endpoints --json
    """
    base_url = configured_url()
    with platform_client() as client:
        listed = client.list_endpoints().endpoints
    if json_output:
        emit_json({"endpoints": [_endpoint_json(item, base_url) for item in listed]})
        return
    if not listed:
        stdout().print("No endpoints.")
        return
    table = Table(
        "name", "mode", "phase", "replicas", "GPUs x VRAM", "price/s", "age", "URL", box=None
    )
    for item in listed:
        price = _price(item)
        table.add_row(
            item.name,
            item.mode,
            escape(_state(item)),
            f"{item.ready_replicas}/{item.max_replicas}",
            f"{item.gpu_count} x {mib_text(item.vram_mb)}",
            price,
            age(item.created_at or item.started_at),
            f"{base_url}{item.path}",
        )
    stdout().print(table)


def _price(item: EndpointResponse) -> str:
    """Its price per second, or the most it may cost (``≤``) before it runs on a vendor."""
    if item.price_per_second is not None:
        return credits_text(item.price_per_second)
    if item.max_price_per_second is not None:
        return f"≤{credits_text(item.max_price_per_second)}"
    return "-"


#: What ``gridweave deploy`` asks when neither its options nor the class's ``@gw.endpoint``
#: say: 8 GB of VRAM on one GPU of any maker, one replica at most, idle after 5 minutes.
DEFAULT_SCALING = Scaling.parse(
    vram="8GB", gpus=1, vendor="any", min_replicas=0, max_replicas=1, idle="5m"
)


def _custom_class(spec: str) -> tuple[bytes, gw.EndpointClass[Any] | None]:
    """``FILE.py:Class`` pickled (the file runs here, as ``gridweave run`` runs one), and the
    class's ``@gw.endpoint`` when it has one (its settings are the options' defaults)."""
    path_text, _, class_name = spec.rpartition(":")
    path = Path(path_text)
    if not path_text or not class_name or not path.is_file():
        raise typer.BadParameter(f"{spec!r}: expected FILE.py:Class", param_hint="--class")
    namespace = runpy.run_path(str(path), run_name="__gridweave_endpoint__")
    target = namespace.get(class_name)
    decorated = target if isinstance(target, gw.EndpointClass) else None
    if decorated is not None:
        target = decorated.cls
    if not isinstance(target, type):
        raise typer.BadParameter(f"{path} has no class {class_name}", param_hint="--class")
    return dumps_program(target), decorated


@handle_errors
def deploy(
    name: NameArgument,
    model: Annotated[
        str | None, typer.Option("--model", help="The model's id or name.", show_default=False)
    ] = None,
    model_ref: Annotated[
        str | None,
        typer.Option(
            "--model-ref",
            help="The model's directory: a path on the GPU node or an object-storage URI.",
            show_default=False,
        ),
    ] = None,
    class_spec: Annotated[
        str | None,
        typer.Option(
            "--class",
            help="FILE.py:Class to serve (custom mode): its public methods become routes.",
            show_default=False,
        ),
    ] = None,
    image: Annotated[
        str | None,
        typer.Option(
            "--image",
            help=(
                "An image of the platform's registry (custom mode): with --class, the class "
                "runs in it; alone, its own command is served (it must listen on $PORT)."
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
                "A package to install for it (custom mode), as a pip requirement of a package "
                "of the index (numpy==2.1.3); repeat it for more."
            ),
            show_default=False,
        ),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            help=(
                "vllm, transformers or custom (default: custom with --class or --image, else "
                "transformers)."
            ),
            show_default=False,
        ),
    ] = None,
    vram: Annotated[
        str | None,
        typer.Option("--vram", help="VRAM per GPU (default: the class's @gw.endpoint, else 8GB)."),
    ] = None,
    gpus: Annotated[
        int | None, typer.Option("--gpus", help="GPUs per replica (default 1).", min=1)
    ] = None,
    vendor: Annotated[
        str | None, typer.Option("--vendor", help="nvidia, amd or any (default any).")
    ] = None,
    gpu_model: Annotated[
        list[str] | None,
        typer.Option(
            "--gpu-model",
            metavar="MODEL",
            help="A GPU model that will do (A100, 'H100 80GB'); repeat it for several.",
            show_default=False,
        ),
    ] = None,
    memory: Annotated[
        str | None,
        typer.Option(
            "--memory",
            help="Memory of each replica's container, e.g. 16GB (default: the node's per GPU).",
            show_default=False,
        ),
    ] = None,
    cpu: Annotated[
        float | None,
        typer.Option(
            "--cpu",
            min=0.01,
            help="CPU cores of each replica's container (default: the node's per GPU).",
            show_default=False,
        ),
    ] = None,
    min_replicas: Annotated[
        int | None,
        typer.Option(
            "--min-replicas",
            min=0,
            help="Replicas kept while it runs (at least 1; scaling to zero is --idle's).",
            show_default="0",
        ),
    ] = None,
    max_replicas: Annotated[
        int | None,
        typer.Option(
            "--max-replicas",
            min=1,
            help=(
                "Replicas at most: above 1, replicas are added and removed on the requests "
                "under way; the endpoint's GPUs hold --vram for each, and each running "
                "replica is billed."
            ),
            show_default="1",
        ),
    ] = None,
    idle: Annotated[
        str | None,
        typer.Option(
            "--idle", help="Idle time before scaling to zero (0: never).", show_default="5m"
        ),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="Wait until it runs, showing its phase and why it waits; exit 1 if it fails.",
        ),
    ] = False,
    timeout: Annotated[
        str, typer.Option("--timeout", help="With --wait: give up after this long (10m, 1h).")
    ] = "10m",
    json_output: JsonFlag = False,
) -> None:
    """Deploy a model (OpenAI-compatible routes) or a class of yours as an endpoint.

    It is served at <platform>/v1/endpoints/NAME/ with your API key; an OpenAI client's
    base_url is <platform>/v1/endpoints/NAME/v1. A --class decorated with @gw.endpoint
    deploys with the decorator's settings (vram, gpus, pip, image, memory, ...) where an
    option does not say otherwise. You pay per second while it runs, per
    replica; it scales to zero after --idle without calls and wakes on the next one.
    NAME of a stopped or failed endpoint is deployed again (it is replaced); one running,
    starting or scaled to zero is kept (stop it first). --mode vllm needs a real GPU in the
    cluster; until the endpoint runs, gridweave endpoints shows why it waits (e.g.
    Pending (RealGpuBusy): no real GPU has room for it yet). With --wait the command
    follows it until it runs (a spinner shows its phase and why it waits) and fails
    (exit 1) if it fails, stops, or still does not run after --timeout; it is left as it
    is then, deploying or waiting.

    Examples:

        gridweave deploy chat --model-ref ~/.gridweave/models/gpt2 --vram 4GB --wait

        gridweave deploy llama --mode vllm --model-ref s3://models/llama-3-8b --vram 24GB

        gridweave deploy embedder --class serve.py:Embedder --vram 2GB --idle 10m --json

        gridweave deploy my-server --image usr-1234/server:v1 --vram 8GB --wait

        gridweave deploy tagger --class serve.py:Tagger --pip spacy==3.8.2 --vram 2GB

        gridweave deploy big --class serve.py:Big --gpu-model A100 --memory 32GB --cpu 8
    """
    chosen = mode or ("custom" if class_spec or image else "transformers")
    if chosen not in ("vllm", "transformers", "custom"):
        raise typer.BadParameter(
            f"{chosen!r}: expected vllm, transformers or custom", param_hint="--mode"
        )
    if vendor not in (None, "nvidia", "amd", "any"):
        raise typer.BadParameter(f"{vendor!r}: expected nvidia, amd or any", param_hint="--vendor")
    function, decorated = _custom_class(class_spec) if class_spec else (None, None)
    if decorated is not None:  # the class's @gw.endpoint: what the options leave out
        image = image or decorated.image
        pip = pip or list(decorated.pip)
    if chosen == "custom" and class_spec is None and image is None:
        raise typer.BadParameter(
            "a custom endpoint needs --class FILE.py:Class or --image", param_hint="--class"
        )
    if chosen != "custom" and image is not None:
        raise typer.BadParameter(
            f"a {chosen} endpoint serves a model, not an image", param_hint="--image"
        )
    if image is not None:
        try:
            parse_image(image)
        except ValueError as bad:
            raise typer.BadParameter(str(bad), param_hint="--image") from None
    if pip and chosen != "custom":
        raise typer.BadParameter(
            f"a {chosen} endpoint serves with the node's own packages", param_hint="--pip"
        )
    try:
        requirements = check_requirements(pip or [])
    except ValueError as bad:
        raise typer.BadParameter(str(bad), param_hint="--pip") from None
    if chosen != "custom" and model is None and model_ref is None:
        raise typer.BadParameter(
            f"a {chosen} endpoint needs --model or --model-ref", param_hint="--model"
        )
    base = decorated.scaling if decorated is not None else DEFAULT_SCALING
    scaling = Scaling.parse(
        vram=vram or base.vram_mb,
        gpus=base.gpu_count if gpus is None else gpus,
        vendor=cast(Literal["nvidia", "amd", "any"], vendor or base.vendor),
        min_replicas=base.min_replicas if min_replicas is None else min_replicas,
        max_replicas=base.max_replicas if max_replicas is None else max_replicas,
        idle=base.idle_seconds if idle is None else idle,
        memory=memory or base.memory_mb,
        cpu=cpu if cpu is not None else cores(base.cpu_millis),
        gpu_model=gpu_model or list(base.gpu_models) or None,
    )
    timeout_seconds = seconds_of(timeout, param_hint="--timeout")
    base_url = configured_url()
    with platform_client() as client:
        created = client.deploy_endpoint(
            name,
            mode=cast(Literal["vllm", "transformers", "custom"], chosen),
            model=model,
            model_ref=model_ref,
            function=function,
            image=image,
            pip=list(requirements) or None,
            vram_mb=scaling.vram_mb,
            gpu_count=scaling.gpu_count,
            vendor=scaling.vendor,
            gpu_models=list(scaling.gpu_models) or None,
            memory_mb=scaling.memory_mb,
            cpu_millis=scaling.cpu_millis,
            min_replicas=scaling.min_replicas,
            max_replicas=scaling.max_replicas,
            idle_seconds=scaling.idle_seconds,
        )
        if wait:
            created = _wait_running(client, created, timeout_seconds)
    if json_output:
        emit_json(_endpoint_json(created, base_url))
        return
    stdout().print(f"{created.name}: {_state(created)} at {base_url}{created.path}")


def _serving(endpoint: EndpointResponse) -> bool:
    """Running, or scaled to zero (its next call wakes it)."""
    phase = endpoint.phase.value
    return phase == "Running" or (phase == "Stopped" and endpoint.reason == "Idle")


def _why(endpoint: EndpointResponse) -> str:
    """Its state, with the message that says why (``Pending (RealGpuBusy): ...``)."""
    message = endpoint.message if endpoint.phase.value != "Running" else None
    message = endpoint.waking_message or message
    return f"{_state(endpoint)}: {message}" if message else _state(endpoint)


def _wait_running(
    client: PlatformClient, endpoint: EndpointResponse, timeout_seconds: int
) -> EndpointResponse:
    """Ask again every :data:`WAIT_POLL_SECONDS` until it runs; exit 1 if it fails, stops
    or the timeout passes (it is left as it is)."""
    deadline = time.monotonic() + timeout_seconds
    label = f"{escape(endpoint.name)}: {{}}"
    with stderr().status(label.format(escape(_why(endpoint))), spinner="dots") as status:
        while not _serving(endpoint):
            if endpoint.phase.value in ("Failed", "Stopped"):
                raise CliError(f"{endpoint.name} did not start: {_why(endpoint)}")
            if time.monotonic() >= deadline:
                raise CliError(
                    f"{endpoint.name} is not running after {timeout_seconds} s: "
                    f"{_why(endpoint)} (left as it is; gridweave endpoints follows it)"
                )
            time.sleep(min(WAIT_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
            endpoint = client.get_endpoint(endpoint.name)
            status.update(label.format(escape(_why(endpoint))))
    return endpoint


@handle_errors
def stop(name: NameArgument, json_output: JsonFlag = False) -> None:
    """Stop an endpoint: its GPUs are freed and its usage settled.

    Stopping a stopped endpoint again answers as it is. Another user's endpoint, or none,
    is not found (exit code 3).

    Examples:

        gridweave stop chat

        gridweave stop chat --json
    """
    base_url = configured_url()
    with platform_client() as client:
        stopped = client.stop_endpoint(name)
    if json_output:
        emit_json(_endpoint_json(stopped, base_url))
        return
    stdout().print(f"{stopped.name}: {_state(stopped)}")


def register(app: typer.Typer) -> None:
    """Add ``endpoints``, ``deploy`` and ``stop`` to ``app``."""
    add_commands(app, endpoints, deploy, stop)
