"""The gateway's hand on Ray Serve: start it, deploy, delete and read applications.

Every function blocks (Ray calls): the reconciler runs them in threads. One Serve
application per endpoint, named ``gw-ep-<id>``, routed at ``/gw/<id>`` on the HTTP proxy
of the head node (``127.0.0.1:<GATEWAY_SERVE_PORT>``). Its one deployment, ``replica``,
asks Ray for no CPU and no GPU (the gateway, not Ray, chose the node and the GPUs, as for
jobs) and is pinned to the node by the ``gridweave.io/node`` label; the replica shows its
process the chosen GPUs itself. Nothing read back from Serve is user data: the status
comes from Serve's controller, and the replica's answers are read over HTTP as JSON.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from gridweave_controller.models import Endpoint
from job_gateway.endpoints.replica import EndpointReplica, ReplicaConfig
from job_gateway.execution.actors import NODE_LABEL

__all__ = [
    "APP_PREFIX",
    "AppState",
    "app_name",
    "delete_app",
    "deploy_app",
    "read_apps",
    "route_prefix",
    "start_serve",
]

#: Serve application names of endpoints (``GATEWAY_SERVE_APP_PREFIX``); other applications
#: on the cluster are left alone.
APP_PREFIX = "gw-ep-"
_DEPLOYMENT = "replica"


def _serve() -> ModuleType:
    """``ray.serve``, imported on first use: its import is slow, and its pydantic models
    warn of deprecated ``Field`` arguments (Ray's own code)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ray import serve
    return serve


def app_name(endpoint_id: str, prefix: str = APP_PREFIX) -> str:
    """The Serve application of an endpoint."""
    return f"{prefix}{endpoint_id}"


def route_prefix(endpoint_id: str) -> str:
    """Where Serve's HTTP proxy routes the endpoint."""
    return f"/gw/{endpoint_id}"


@dataclass(frozen=True, slots=True)
class AppState:
    """One endpoint's application as Serve's controller reports it."""

    status: str  # NOT_STARTED, DEPLOYING, DEPLOY_FAILED, RUNNING, UNHEALTHY, DELETING
    message: str
    running_replicas: int
    #: When it was last deployed (Unix seconds, Serve's controller's clock: the head's).
    deployed_at: float = 0.0


def start_serve(host: str, port: int) -> tuple[str, int]:
    """Start Serve (its controller and the head's HTTP proxy), or find it running; the
    proxy's host and port as Serve has them (a running Serve keeps its own)."""
    serve = _serve()
    serve.start(proxy_location="HeadOnly", http_options={"host": host, "port": port})
    config = serve.context._get_global_client().http_config  # the controller's own
    return str(config.host), int(config.port)


def deploy_app(
    endpoint: Endpoint,
    config: ReplicaConfig,
    *,
    node: str,
    health_check_period_s: float,
    prefix: str = APP_PREFIX,
) -> None:
    """Deploy (or update) the endpoint's application; returns without waiting for it."""
    spec = endpoint.spec
    scaling: dict[str, Any]
    if spec.max_replicas > 1:  # autoscaled on queue length (ongoing requests per replica)
        scaling = {
            "autoscaling_config": {
                "min_replicas": max(1, spec.min_replicas),
                "max_replicas": spec.max_replicas,
                "target_ongoing_requests": 2,
                "upscale_delay_s": 2.0,
                "downscale_delay_s": 30.0,
            }
        }
    else:
        scaling = {"num_replicas": 1}
    serve = _serve()
    deployment = serve.deployment(
        name=_DEPLOYMENT,
        ray_actor_options={
            "num_cpus": 0,
            "num_gpus": 0,
            "label_selector": {NODE_LABEL: node},
        },
        max_ongoing_requests=64,
        health_check_period_s=health_check_period_s,
        health_check_timeout_s=30.0,
        graceful_shutdown_timeout_s=2.0,
        # no access log: the probe's call every few seconds would bury the replica's own
        # output in its logs (the platform counts the calls itself)
        logging_config={"enable_access_log": False},
        **scaling,
    )(EndpointReplica)
    target = serve.RunTarget(
        deployment.bind(config),
        name=app_name(endpoint.name, prefix),
        route_prefix=route_prefix(endpoint.name),
    )
    serve.run_many(
        [target], wait_for_ingress_deployment_creation=False, wait_for_applications_running=False
    )


def delete_app(endpoint_id: str, prefix: str = APP_PREFIX) -> None:
    """Delete the endpoint's application (its replicas stop); nothing when there is none."""
    _serve().delete(app_name(endpoint_id, prefix), _blocking=False)


def read_apps(prefix: str = APP_PREFIX) -> dict[str, AppState]:
    """Every endpoint's application by endpoint id."""
    found: dict[str, AppState] = {}
    for name, app in _serve().status().applications.items():
        if not name.startswith(prefix):
            continue
        running = sum(
            count
            for deployment in app.deployments.values()
            for state, count in deployment.replica_states.items()
            if str(getattr(state, "value", state)) == "RUNNING"
        )
        messages = [app.message] + [d.message for d in app.deployments.values() if d.message]
        found[name.removeprefix(prefix)] = AppState(
            status=str(app.status.value if hasattr(app.status, "value") else app.status),
            message="; ".join(m for m in messages if m)[:4000],
            running_replicas=running,
            deployed_at=float(getattr(app, "last_deployed_time_s", 0.0) or 0.0),
        )
    return found
