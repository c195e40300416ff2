"""The backend of ``custom`` and ``transformers`` endpoints: the user's class, its image's own
server, or the transformers server over the endpoint's model, in a container.

The replica (a Ray Serve actor, trusted) never loads the user's code or a model. It starts a
:class:`~job_gateway.sandbox.serving.ServingContainer` of the endpoint's owner, in the
endpoint's image (pulled with the owner's token, as a job's) or the node's default image,
with only the placed GPUs, and relays each request to the container's Unix socket and the
answer back, so OpenAI's client works against an image that serves
OpenAI's API, and a class's method answers as before (``POST /{method}``, JSON; a user's
exception a 500 with its remote traceback). A request's body is read whole before it is
sent on (the platform's proxy bounds it); the answer is streamed. The pickled class
travels to the container as bytes, unread here. A custom endpoint's ``pip=`` requirements
are installed first (:func:`~job_gateway.sandbox.pip_envs.pip_environment`: once per node,
image and list, in a container of the owner, pip's output in the replica's logs) and
mounted read-only first on its ``PYTHONPATH``; a failed install fails the replica with
pip's words. A transformers replica's container runs
:mod:`job_gateway.sandbox.transformers_server` in the node's default image with the
replica's own Python packages and the model mounted read-only (a model directory the
owner's uid could not read is copied for it first: :mod:`job_gateway.endpoints.model_dir`).
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from gridweave_clients.gateway.reasons import PIP_INSTALL_FAILED
from gridweave_runtime.storage import open_object_store
from job_gateway.endpoints.model_dir import ModelNotFound, stage_model_dir
from job_gateway.endpoints.replica import ReplicaConfig, error_response
from job_gateway.sandbox.attempt import SandboxedJob, container_spec
from job_gateway.sandbox.container_names import STAGING_DIR, container_name
from job_gateway.sandbox.images import ImagePullFailed, UnpackedImage, unpacked_image
from job_gateway.sandbox.network import NetworkUnavailable
from job_gateway.sandbox.oci import RUNNER_DIR
from job_gateway.sandbox.pip_envs import PipInstallFailed, pip_environment
from job_gateway.sandbox.serving import ServingContainer, ServingFailed

__all__ = ["SandboxedBackend"]

#: Where a transformers replica's container sees its model.
MODEL_DIR = f"{RUNNER_DIR}/model"
#: How long a replica's container may take to answer (an image's server loading a model).
START_TIMEOUT_SECONDS = 600.0
#: Headers of one hop, never relayed (RFC 9110 7.6.1), and the replica's own host.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


class SandboxedBackend:
    """Relays requests to the endpoint's container; the container is started by
    :meth:`start` and deleted by :meth:`close`."""

    def __init__(self, container: ServingContainer, staging: Path | None = None) -> None:
        self.container = container
        self.staging = staging
        self.client = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=str(container.socket_path)),
            base_url="http://replica",
            timeout=httpx.Timeout(None, connect=10.0),
        )

    @classmethod
    def start(cls, config: ReplicaConfig) -> SandboxedBackend:
        """Start the endpoint's container and wait until it serves.

        Raises:
            RuntimeError: it did not come to serve, or its pip= requirements could not be
                installed (Serve fails the deployment with this).
        """
        assert config.sandbox is not None and config.owner is not None
        job = SandboxedJob(
            user_id=config.owner,
            vendor=config.vendor,
            gpu_indices=config.gpu_indices,
            gpu_count=max(1, len(config.gpu_indices)),
            environment=dict(config.devices),
            memory_mb=config.memory_mb,
            cpu_millis=config.cpu_millis,
        )
        if config.mode == "transformers":
            return cls._started(*_transformers_container(config, job))
        try:
            image = (
                None
                if config.image is None
                else unpacked_image(config.sandbox.image_dir, config.image)
            )
        except ImagePullFailed as failed:
            raise RuntimeError(f"the endpoint's image: {failed}") from None
        spec = container_spec(config.sandbox, job, image, _pip_site(config, image))
        if config.function_ref is not None:
            program = open_object_store(config.storage).get(config.function_ref)
            container = ServingContainer(spec, kind="class", program=program)
        else:
            command = image.command if image is not None else ()
            container = ServingContainer(spec, kind="command", command=command)
        return cls._started(container)

    @classmethod
    def _started(cls, container: ServingContainer, staging: Path | None = None) -> SandboxedBackend:
        try:
            container.wait_ready(START_TIMEOUT_SECONDS)
        except ServingFailed as failed:
            container.close()
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(f"the endpoint did not start: {failed}") from None
        return cls(container, staging)

    async def handle(self, method: str, path: str, request: Request) -> Response:
        """The container's answer to the request, streamed back."""
        query = request.url.query
        upstream = self.client.build_request(
            method,
            f"{path}?{query}" if query else path,
            headers=[(k, v) for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP],
            content=await request.body(),  # whole: a class's server reads Content-Length
        )
        try:
            answer = await self.client.send(upstream, stream=True)
        except httpx.HTTPError as error:
            return error_response(
                502, "endpoint_unreachable", f"the endpoint's container did not answer: {error}"
            )
        headers = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP}
        return StreamingResponse(_relayed(answer), status_code=answer.status_code, headers=headers)

    async def check_health(self) -> None:
        """Serve's health check: the container must still serve."""
        if not self.container.serving():
            raise RuntimeError("the endpoint's container ended")

    def close(self) -> None:
        """Delete the container (and the model's copy, if it made one)."""
        self.container.close()
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)


def _pip_site(config: ReplicaConfig, image: UnpackedImage | None) -> Path | None:
    """The endpoint's pip environment on the node, from its cache or built now (pip's output
    on the replica's stderr: its logs); None when it asks for none.

    Raises:
        RuntimeError: the build failed (``PipInstallFailed: `` and pip's error lines, which
            the reconciler makes the endpoint's reason and message) or got no network.
    """
    if not config.pip:
        return None
    assert config.sandbox is not None and config.owner is not None
    try:
        environment = pip_environment(
            config.sandbox,
            config.owner,
            config.pip,
            output=2,  # the replica's stderr, as its container's: the replica's logs
            image=image,
            image_name=config.image.image if config.image is not None else None,
        )
    except PipInstallFailed as failed:
        raise RuntimeError(f"{PIP_INSTALL_FAILED}: {failed}") from None
    except NetworkUnavailable as error:
        raise RuntimeError(f"the pip build's network could not be made: {error}") from None
    return environment.site


def _transformers_container(
    config: ReplicaConfig, job: SandboxedJob
) -> tuple[ServingContainer, Path]:
    """The transformers server's container: the node's default image, this replica's own
    Python packages read-only at ``/opt/gridweave/env``, the model read-only at
    ``/opt/gridweave/model`` (staged for the owner's uid when it must be); and the staging
    directory, for the caller to delete with it.

    Raises:
        RuntimeError: the model directory is missing or refused.
    """
    assert config.sandbox is not None
    sandbox = config.sandbox
    staging = sandbox.state_dir / STAGING_DIR / container_name()  # swept with the replica
    spec = container_spec(sandbox, job, None, Path(sysconfig.get_paths()["purelib"]))
    try:
        model = stage_model_dir(
            config.model_ref or config.model,
            open_object_store(config.storage).get,
            staging=staging,
            host_uid=spec.host_uid,
        )
    except ModelNotFound as missing:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(str(missing)) from None
    contained = sandbox.runtime != "none"
    command = [
        "python3" if contained else sys.executable,
        "-m",
        "gridweave_transformers",
        "--model",
        MODEL_DIR if contained else str(model),
        "--name",
        config.model or config.endpoint_id,
    ]
    mount = {
        "destination": MODEL_DIR,
        "type": "bind",
        "source": str(model),
        "options": ["rbind", "ro", "nosuid", "nodev"],
    }
    container = ServingContainer(
        spec,
        kind="command",
        command=command,
        environment={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        mounts=[mount] if contained else [],
    )
    return container, staging


async def _relayed(answer: httpx.Response) -> AsyncIterator[bytes]:
    try:
        async for chunk in answer.aiter_raw():
            yield chunk
    finally:
        await answer.aclose()
