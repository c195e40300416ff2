"""GridweaveEndpoint through every transport: create, read, list, delete and every setter."""

from __future__ import annotations

from typing import Any

import pytest

from gridweave_controller import (
    USER_LABEL,
    Conflict,
    EndpointPhase,
    Invalid,
    InvalidTransition,
    NotFound,
    user_label_value,
)
from tests.contract.factories import make_endpoint, new_id
from tests.contract.transports import Transport

#: A custom endpoint's source: a pickled class.
CUSTOM: dict[str, Any] = {"model": None, "function_ref": "s3://gridweave/ep/c.pkl"}


def deployed(transport: Transport) -> str:
    """An endpoint moved to Running; its id."""
    endpoint = make_endpoint(transport)
    transport.api.set_endpoint_deploying(endpoint.name, "gpu-node-1", [0])
    transport.api.set_endpoint_running(endpoint.name, "http://gpu-node-1:9000")
    return str(endpoint.name)


class TestCreateEndpoint:
    def test_new_endpoint_is_pending_with_pricing_and_defaults(self, transport: Transport) -> None:
        endpoint = make_endpoint(
            transport, micro_credits_per_second=25, micro_credits_per_request=3, replicas=2
        )
        assert endpoint.phase is EndpointPhase.PENDING
        assert endpoint.status.health == "Unknown"
        assert endpoint.spec.mode == "vllm"
        assert endpoint.spec.pricing.micro_credits_per_second == 25
        assert endpoint.spec.pricing.micro_credits_per_request == 3
        assert (endpoint.spec.replicas, endpoint.spec.gpu_count) == (2, 1)
        assert endpoint.metadata.generation == 1
        assert endpoint.metadata.labels[USER_LABEL] == user_label_value("alice@example.com")

    def test_image_means_custom_mode(self, transport: Transport) -> None:
        image = f"acme/server@sha256:{'cd' * 32}"
        endpoint = make_endpoint(transport, model=None, image=image)
        assert (endpoint.spec.mode, endpoint.spec.image) == ("custom", image)

    def test_an_image_not_pinned_to_its_digest_is_refused_naming_it(
        self, transport: Transport
    ) -> None:
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            make_endpoint(transport, model=None, image="ghcr.io/acme/server:1")
        assert caught.value.field == "image"
        assert sum(requests.values()) == 0

    def test_neither_model_nor_image_is_refused_before_any_request(
        self, transport: Transport
    ) -> None:
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            make_endpoint(transport, model=None)
        assert caught.value.field == "model"
        assert sum(requests.values()) == 0

    def test_serving_fields_and_defaults(self, transport: Transport) -> None:
        plain = make_endpoint(transport)
        assert plain.spec.owner == "alice@example.com" == plain.billing_owner
        assert (plain.spec.min_replicas, plain.spec.max_replicas, plain.spec.idle_seconds) == (
            0,
            1,
            0,
        )
        endpoint = make_endpoint(
            transport,
            model="tiny-gpt2",
            mode="transformers",
            model_ref="s3://gridweave/models/tiny-gpt2",
            owner="team-a",
            min_replicas=1,
            max_replicas=3,
            idle_seconds=300,
        )
        spec = endpoint.spec
        assert (spec.mode, spec.model_ref, spec.owner) == (
            "transformers",
            "s3://gridweave/models/tiny-gpt2",
            "team-a",
        )
        assert (spec.min_replicas, spec.max_replicas, spec.idle_seconds) == (1, 3, 300)
        assert transport.api.get_endpoint(endpoint.name).spec == spec

    def test_a_class_means_custom_mode(self, transport: Transport) -> None:
        endpoint = make_endpoint(transport, model=None, function_ref="s3://gridweave/ep/c.pkl")
        assert (endpoint.spec.mode, endpoint.spec.function_ref) == (
            "custom",
            "s3://gridweave/ep/c.pkl",
        )

    def test_a_custom_endpoints_pip_requirements_are_kept_in_its_spec(
        self, transport: Transport
    ) -> None:
        pip = ["six==1.16.0", "requests[socks]>=2; python_version < '3.13'"]
        endpoint = make_endpoint(transport, pip=pip, **CUSTOM)
        assert endpoint.spec.pip == tuple(pip) and endpoint.raw["spec"]["pip"] == pip
        assert transport.api.get_endpoint(endpoint.name).spec.pip == tuple(pip)
        assert make_endpoint(transport, **CUSTOM).spec.pip is None
        assert "pip" not in make_endpoint(transport, pip=[], **CUSTOM).raw["spec"]
        assert make_endpoint(transport, pip=[]).spec.pip is None  # none asked: any mode

    def test_an_endpoints_resources_are_kept_in_its_spec(self, transport: Transport) -> None:
        models = ["A100", "H100 80GB"]
        endpoint = make_endpoint(transport, memory_mb=2048, cpu_millis=2500, gpu_models=models)
        spec, raw = endpoint.spec, endpoint.raw["spec"]
        assert (spec.memory_mb, spec.cpu_millis, spec.gpu_models) == (2048, 2500, tuple(models))
        assert (raw["memoryMb"], raw["cpuMillis"], raw["gpuModels"]) == (2048, 2500, models)
        read = transport.api.get_endpoint(endpoint.name).spec
        assert (read.memory_mb, read.cpu_millis, read.gpu_models) == (2048, 2500, tuple(models))
        plain = make_endpoint(transport).spec
        assert (plain.memory_mb, plain.cpu_millis, plain.gpu_models) == (None, None, None)

    @pytest.mark.parametrize(
        ("overrides", "field"),
        [
            ({"memory_mb": 63}, "memory_mb"),
            ({"memory_mb": 4_194_305}, "memory_mb"),
            ({"cpu_millis": 9}, "cpu_millis"),
            ({"gpu_models": "A100"}, "gpu_models"),  # a string, not a list
            ({"gpu_models": []}, "gpu_models"),
            ({"gpu_models": ["A100", "A100"]}, "gpu_models"),
            ({"gpu_models": ["A100;rm"]}, "gpu_models"),
        ],
        ids=["memory-low", "memory-high", "cpu", "models-string", "no-models", "twice", "name"],
    )
    def test_bad_resources_are_refused_naming_them_before_any_request(
        self, transport: Transport, overrides: dict[str, Any], field: str
    ) -> None:
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            make_endpoint(transport, **overrides)
        assert caught.value.field == field
        assert sum(requests.values()) == 0

    @pytest.mark.parametrize(
        "overrides",
        [
            CUSTOM | {"pip": ["--index-url=https://evil.example/simple"]},  # an option
            CUSTOM | {"pip": ["six @ https://example.com/six.whl"]},  # a URL
            CUSTOM | {"pip": ["six\n--index-url http://evil.example"]},  # a second line
            CUSTOM | {"pip": "six"},  # a string, not a list
            CUSTOM | {"pip": ["six"] * 65},
            {"pip": ["six"]},  # vllm: the node's own packages
            {"pip": ["six"], "mode": "transformers", "model": "tiny-gpt2"},
        ],
        ids=["option", "url", "second-line", "string", "too-many", "vllm", "transformers"],
    )
    def test_bad_pip_is_refused_naming_it_before_any_request(
        self, transport: Transport, overrides: dict[str, Any]
    ) -> None:
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            make_endpoint(transport, **overrides)
        assert caught.value.field == "pip"
        assert sum(requests.values()) == 0

    @pytest.mark.parametrize(
        ("overrides", "field"),
        [
            ({"mode": "custom"}, "function_ref"),
            ({"mode": "transformers", "model": None, "function_ref": "s3://b/c.pkl"}, "model"),
            ({"mode": "tgi"}, "mode"),
            ({"min_replicas": 3, "max_replicas": 2}, "min_replicas"),
            ({"max_replicas": 0}, "max_replicas"),
            ({"idle_seconds": -1}, "idle_seconds"),
            ({"owner": "o" * 254}, "owner"),
            ({"model_ref": "x" * 2049}, "model_ref"),
        ],
        ids=["custom-without-class", "no-model", "mode", "min-max", "max", "idle", "owner", "ref"],
    )
    def test_bad_serving_fields_are_refused_before_any_request(
        self, transport: Transport, overrides: dict[str, Any], field: str
    ) -> None:
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            make_endpoint(transport, **overrides)
        assert caught.value.field == field
        assert sum(requests.values()) == 0

    def test_list_get_delete(self, transport: Transport) -> None:
        mine = make_endpoint(transport, user_id="carol", labels={"app": "chat"})
        make_endpoint(transport, user_id="dave")
        assert [e.name for e in transport.api.list_endpoints(user_id="carol")] == [mine.name]
        assert [e.name for e in transport.api.list_endpoints("app in (chat)")] == [mine.name]
        assert transport.api.get_endpoint(mine.name) == mine
        transport.api.delete_endpoint(mine.name)
        with pytest.raises(NotFound):
            transport.api.get_endpoint(mine.name)


class TestEndpointSetters:
    def test_deploy_run_stop_and_redeploy(self, transport: Transport) -> None:
        api = transport.api
        endpoint = make_endpoint(transport)
        deploying = api.set_endpoint_deploying(endpoint.name, "gpu-node-1", [2])
        assert deploying.phase is EndpointPhase.DEPLOYING
        assert (deploying.status.node, deploying.status.gpu_indices) == ("gpu-node-1", (2,))
        running = api.set_endpoint_running(endpoint.name, "http://gpu-node-1:9000")
        assert running.status.url == "http://gpu-node-1:9000"
        assert running.status.started_at is not None
        ready = running.status.condition("Ready")
        assert ready is not None and ready.status == "True"
        stopped = api.set_endpoint_stopped(endpoint.name, "UserStopped", "stopped from the CLI")
        assert stopped.phase is EndpointPhase.STOPPED
        assert stopped.status.stopped_at is not None
        assert stopped.status.billed_seconds >= 1  # a positive run rounds up to a second
        assert stopped.status.reason == "UserStopped"
        again = api.set_endpoint_deploying(endpoint.name, "gpu-node-2", [0])
        assert again.phase is EndpointPhase.DEPLOYING
        assert again.status.url is None and again.status.stopped_at is None

    def test_a_redeploy_while_running_keeps_the_billed_run(self, transport: Transport) -> None:
        name = deployed(transport)
        redeployed = transport.api.set_endpoint_deploying(name, "gpu-node-2", [1])
        assert redeployed.phase is EndpointPhase.DEPLOYING
        first_run = redeployed.status.billed_seconds
        assert first_run is not None and first_run >= 1
        transport.api.set_endpoint_running(name, "http://gpu-node-2:9000")
        stopped = transport.api.set_endpoint_stopped(name, "UserStopped")
        assert stopped.status.billed_seconds >= first_run + 1

    def test_the_placed_gpus_vendor_is_recorded_and_a_redeploy_clears_the_run_it_replaced(
        self, transport: Transport
    ) -> None:
        api = transport.api
        endpoint = make_endpoint(transport, vendor="any")
        placed = api.set_endpoint_deploying(endpoint.name, "gpu-node-1", [0], "amd")
        assert placed.status.vendor == "amd"
        api.set_endpoint_running(endpoint.name, "http://gpu-node-1:9000")
        api.set_endpoint_health(endpoint.name, True, "ok", 2)
        stopped = api.set_endpoint_stopped(endpoint.name, "Idle", "no request")
        # the ended run stays until a placement replaces it (billing settles it first)
        assert stopped.status.started_at is not None and stopped.status.stopped_at is not None
        assert stopped.status.run_replicas == 2
        woken = api.set_endpoint_deploying(endpoint.name, "gpu-node-2", [1], "nvidia")
        assert woken.status.vendor == "nvidia"
        assert woken.status.started_at is None and woken.status.stopped_at is None
        assert woken.status.run_replicas is None  # the new run counts its own
        raw = woken.raw["status"]
        assert not [key for key in raw if key.startswith(("previous", "earlier"))]
        api.set_endpoint_running(endpoint.name, "http://gpu-node-2:9000")
        api.set_endpoint_health(endpoint.name, True, "ok", 3)
        again = api.set_endpoint_health(endpoint.name, True, "ok", 0)
        assert again.status.run_replicas == 3  # a probe of none keeps the run's replicas
        redeployed = api.set_endpoint_deploying(endpoint.name, "gpu-node-1", [0])
        assert redeployed.status.vendor is None  # placed on GPUs of no known maker
        assert redeployed.status.billed_seconds >= 1  # the replaced run's seconds
        with pytest.raises(Invalid) as refused:
            api.set_endpoint_deploying(make_endpoint(transport).name, "n1", [0], "any")
        assert refused.value.field == "vendor"

    def test_a_repeat_with_other_arguments_is_a_conflict(self, transport: Transport) -> None:
        endpoint = make_endpoint(transport)
        transport.api.set_endpoint_deploying(endpoint.name, "gpu-node-1", [0])
        with pytest.raises(Conflict, match="gpu-node-1"):
            transport.api.set_endpoint_deploying(endpoint.name, "gpu-node-2", [0])
        running = transport.api.set_endpoint_running(endpoint.name, "http://gpu-node-1:9000")
        with pytest.raises(Conflict, match="url"):
            transport.api.set_endpoint_running(endpoint.name, "http://elsewhere:9000")
        same = transport.api.set_endpoint_running(endpoint.name, "http://gpu-node-1:9000")
        assert same.metadata.resource_version == running.metadata.resource_version

    def test_health_is_a_condition_beside_the_phase(self, transport: Transport) -> None:
        name = deployed(transport)
        healthy = transport.api.set_endpoint_health(name, True, "200 OK", ready_replicas=1)
        assert (healthy.status.health, healthy.status.ready_replicas) == ("Healthy", 1)
        assert healthy.phase is EndpointPhase.RUNNING
        first = healthy.status.condition("Healthy")
        assert first is not None and first.status == "True"
        same = transport.api.set_endpoint_health(name, True, "200 OK again", ready_replicas=1)
        kept = same.status.condition("Healthy")
        assert kept is not None and kept.message == "200 OK again"
        assert kept.last_transition_time == first.last_transition_time
        sick = transport.api.set_endpoint_health(name, False, "503", ready_replicas=0)
        assert sick.status.health == "Unhealthy"
        flipped = sick.status.condition("Healthy")
        assert flipped is not None and flipped.status == "False"

    @pytest.mark.parametrize("end", ["stopped", "failed"])
    def test_a_late_probe_cannot_mark_an_ended_endpoint_healthy(
        self, transport: Transport, end: str
    ) -> None:
        name = deployed(transport)
        getattr(transport.api, f"set_endpoint_{end}")(name, "UserStopped")
        with pytest.raises(Conflict, match="health probe"):
            transport.api.set_endpoint_health(name, True, "200 OK", ready_replicas=1)
        assert transport.api.get_endpoint(name).status.health == "Unknown"

    def test_repeated_health_report_writes_nothing(self, transport: Transport) -> None:
        name = deployed(transport)
        transport.api.set_endpoint_health(name, True, "ok", ready_replicas=1)
        with transport.count_requests() as requests:
            transport.api.set_endpoint_health(name, True, "ok", ready_replicas=1)
        assert requests == {"GET": 1}

    def test_failed_then_redeploy(self, transport: Transport) -> None:
        endpoint = make_endpoint(transport)
        transport.api.set_endpoint_deploying(endpoint.name, "n1", [0])
        failed = transport.api.set_endpoint_failed(endpoint.name, "ImagePullFailed", "401")
        assert (failed.phase, failed.status.message) == (EndpointPhase.FAILED, "401")
        with pytest.raises(InvalidTransition) as caught:
            transport.api.set_endpoint_running(endpoint.name, "http://x")
        assert (caught.value.current, caught.value.target) == ("Failed", "Running")
        assert transport.api.set_endpoint_deploying(endpoint.name, "n2", [1]).phase == "Deploying"

    def test_a_lost_node_sends_a_running_endpoint_back_to_placement_and_ends_its_run(
        self, transport: Transport
    ) -> None:
        api = transport.api
        endpoint = make_endpoint(transport, vendor="any")
        api.set_endpoint_deploying(endpoint.name, "gpu-node-1", [0], "amd")
        running = api.set_endpoint_running(endpoint.name, "http://gpu-node-1:9000")
        api.set_endpoint_health(endpoint.name, True, "ok", 2)
        lost = api.set_endpoint_pending(endpoint.name, "NodeLost", "node gpu-node-1 is NotReady")
        assert lost.phase is EndpointPhase.PENDING
        assert (lost.status.reason, lost.status.message) == (
            "NodeLost",
            "node gpu-node-1 is NotReady",
        )
        assert lost.status.node is None and not lost.status.gpu_indices
        assert lost.status.url is None and lost.status.ready_replicas == 0
        ready = lost.status.condition("Ready")
        assert ready is not None and (ready.status, ready.reason) == ("False", "NodeLost")
        # the run ends at the loss, priced at its own GPUs; billing sees it settled there
        assert lost.status.started_at == running.status.started_at
        assert lost.status.stopped_at is not None and lost.status.vendor == "amd"
        assert lost.status.billed_seconds >= 1
        again = api.set_endpoint_pending(endpoint.name, "NodeLost", "node gpu-node-1 is NotReady")
        assert again.metadata.resource_version == lost.metadata.resource_version
        assert lost.status.run_replicas == 2  # the replicas it ran with, billing's to price
        placed = api.set_endpoint_deploying(endpoint.name, "gpu-node-2", [1], "nvidia")
        assert placed.status.started_at is None and placed.status.stopped_at is None
        assert placed.status.billed_seconds == lost.status.billed_seconds  # the gap is free

    def test_a_pending_endpoint_says_why_it_waits_until_it_is_placed(
        self, transport: Transport
    ) -> None:
        api = transport.api
        endpoint = make_endpoint(transport)
        told = api.set_endpoint_waiting(endpoint.name, "RealGpuBusy", "only simulated GPUs free")
        assert told.phase is EndpointPhase.PENDING
        assert (told.status.reason, told.status.message) == (
            "RealGpuBusy",
            "only simulated GPUs free",
        )
        ready = told.status.condition("Ready")
        assert ready is not None and (ready.status, ready.reason) == ("False", "RealGpuBusy")
        again = api.set_endpoint_waiting(endpoint.name, "RealGpuBusy", "only simulated GPUs free")
        assert again.metadata.resource_version == told.metadata.resource_version
        with pytest.raises(Invalid) as refused:
            api.set_endpoint_waiting(endpoint.name, "Real GPU busy")
        assert refused.value.field == "reason"
        placed = api.set_endpoint_deploying(endpoint.name, "gpu-node-1", [0])
        assert placed.status.reason is None and placed.status.message is None
        with pytest.raises(Conflict):  # placed: no longer waiting
            api.set_endpoint_waiting(endpoint.name, "RealGpuBusy")
        stopped = make_endpoint(transport)
        api.set_endpoint_stopped(stopped.name, "Idle")
        with pytest.raises(Conflict):  # a stopped endpoint keeps its stop's reason
            api.set_endpoint_waiting(stopped.name, "RealGpuBusy")

    def test_a_placement_decided_on_a_pending_endpoint_is_refused_once_it_stopped(
        self, transport: Transport
    ) -> None:
        api = transport.api
        endpoint = make_endpoint(transport)
        api.set_endpoint_stopped(endpoint.name, "OutOfCredits")
        with pytest.raises(InvalidTransition):
            api.set_endpoint_deploying(endpoint.name, "n1", [0], from_phase=EndpointPhase.PENDING)
        assert api.get_endpoint(endpoint.name).phase is EndpointPhase.STOPPED
        woken = api.set_endpoint_deploying(
            endpoint.name, "n1", [0], from_phase=EndpointPhase.STOPPED
        )
        assert woken.phase is EndpointPhase.DEPLOYING
        again = api.set_endpoint_deploying(
            endpoint.name, "n1", [0], from_phase=EndpointPhase.STOPPED
        )  # a repeat writes nothing
        assert again.metadata.resource_version == woken.metadata.resource_version

    def test_only_a_placed_endpoint_goes_back_to_placement(self, transport: Transport) -> None:
        api = transport.api
        endpoint = make_endpoint(transport)
        api.set_endpoint_stopped(endpoint.name, "UserStopped")
        with pytest.raises(InvalidTransition):  # a stopped one is woken, never lost
            api.set_endpoint_pending(endpoint.name, "NodeLost")
        deploying = make_endpoint(transport)
        api.set_endpoint_deploying(deploying.name, "n1", [0])
        lost = api.set_endpoint_pending(deploying.name, "NodeLost")
        assert lost.status.stopped_at is None and lost.status.started_at is None
        with pytest.raises(Invalid) as refused:
            api.set_endpoint_pending(deploying.name, "Node Lost")
        assert refused.value.field == "reason"

    @pytest.mark.parametrize(
        ("setter", "arguments", "reached_by"),
        [
            ("set_endpoint_deploying", ("n1", [0]), ()),
            ("set_endpoint_running", ("http://n1:9000",), ("deploying",)),
            ("set_endpoint_stopped", ("UserStopped",), ("deploying", "running")),
            ("set_endpoint_failed", ("Crashed", "oom"), ("deploying",)),
            ("set_endpoint_pending", ("NodeLost", "n1 is gone"), ("deploying", "running")),
            ("set_endpoint_health", (True, "ok", 1), ("deploying", "running")),
            ("set_endpoint_waiting", ("RealGpuBusy", "busy"), ()),
        ],
    )
    def test_uncontended_setter_is_one_get_and_one_patch(
        self,
        transport: Transport,
        setter: str,
        arguments: tuple[object, ...],
        reached_by: tuple[str, ...],
    ) -> None:
        endpoint = make_endpoint(transport)
        for step in reached_by:
            if step == "deploying":
                transport.api.set_endpoint_deploying(endpoint.name, "n1", [0])
            else:
                transport.api.set_endpoint_running(endpoint.name, "http://n1:9000")
        with transport.count_requests() as requests:
            getattr(transport.api, setter)(endpoint.name, *arguments)
        assert requests == {"GET": 1, "PATCH": 1}

    def test_missing_endpoint_is_not_found(self, transport: Transport) -> None:
        with pytest.raises(NotFound):
            transport.api.set_endpoint_running(new_id("ep"), "http://x")
