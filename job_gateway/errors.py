"""job_gateway errors, each with a code, an HTTP status and a default message.

Tree::

    GridweaveError (gridweave_runtime)
    └── GatewayError
        ├── JobNotFound        404
        ├── JobAlreadyExists   409  (the job id is taken; nothing was created)
        ├── JobFinished        409  (cancel of a job in another terminal phase)
        ├── EndpointNotFound   404
        ├── EndpointAlreadyExists 409 (the endpoint id is taken; nothing was created)
        ├── EndpointFailed     409  (a wake of a Failed endpoint: deploy it again instead)
        ├── ClusterUnavailable 503  (the CRD store could not be reached)
        └── QuotaExceeded      429  (the user's quota: quota, limit, in_use, asked)

A request that passes the schema but breaks a rule (an impossible VRAM request, a hold
reference other than the job id) raises gridweave_runtime's ``InvalidRequest`` (422
``invalid_request``, the field named).
"""

from __future__ import annotations

from gridweave_runtime.errors import GridweaveError

__all__ = [
    "BillingUnavailable",
    "ClusterUnavailable",
    "EndpointAlreadyExists",
    "EndpointFailed",
    "EndpointNotFound",
    "GatewayError",
    "JobAlreadyExists",
    "JobFinished",
    "JobNotFound",
    "QuotaExceeded",
]


class GatewayError(GridweaveError):
    """Base of job_gateway's errors."""

    code = "gateway_error"
    status_code = 400
    message = "the job operation failed"


class JobNotFound(GatewayError):
    """No such job."""

    code = "job_not_found"
    status_code = 404
    message = "no such job"


class JobAlreadyExists(GatewayError):
    """A job with this id exists already."""

    code = "job_already_exists"
    status_code = 409
    message = "a job with this id exists already"


class JobFinished(GatewayError):
    """The job has finished in a phase that cannot change."""

    code = "job_finished"
    status_code = 409
    message = "the job has finished; its phase cannot change"


class EndpointNotFound(GatewayError):
    """No such endpoint."""

    code = "endpoint_not_found"
    status_code = 404
    message = "no such endpoint"


class EndpointAlreadyExists(GatewayError):
    """An endpoint with this id exists already."""

    code = "endpoint_already_exists"
    status_code = 409
    message = "an endpoint with this id exists already"


class EndpointFailed(GatewayError):
    """The endpoint failed; a wake does not deploy it again."""

    code = "endpoint_failed"
    status_code = 409
    message = "the endpoint failed; read its reason and message"


class EndpointStopped(GatewayError):
    """The endpoint was stopped (deleted, out of credits, by its owner), not scaled to zero:
    a wake does not deploy it again."""

    code = "endpoint_stopped"
    status_code = 409
    message = "the endpoint was stopped; read its reason, and deploy it again to use it"


class ClusterUnavailable(GatewayError):
    """The CRD store (kuberay-service or the Kubernetes API) could not be reached."""

    code = "cluster_unavailable"
    status_code = 503
    message = "the cluster's job records could not be reached; try again"


class BillingUnavailable(GatewayError):
    """metering_service could not be reached to settle what an ended endpoint ran before a
    deploy replaces it; nothing was replaced."""

    code = "billing_unavailable"
    status_code = 503
    message = "the endpoint's last run could not be settled with metering; try again"


class QuotaExceeded(GatewayError):
    """The submission would take its user past a quota an admin set; nothing was created.

    Details: ``quota`` (``max_gpus`` or ``max_vram_mb``), ``limit``, ``in_use`` (what the
    user's unfinished jobs and deployed endpoints hold) and ``asked``.
    """

    code = "quota_exceeded"
    status_code = 429
    message = "the submission would exceed the user's quota"
