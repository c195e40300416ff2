"""GridweaveJob through every transport: create, read, list, delete and every setter."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from gridweave_controller import (
    USER_LABEL,
    AlreadyExists,
    Conflict,
    Invalid,
    InvalidTransition,
    JobPhase,
    NotFound,
    WaitTimedOut,
    user_label_value,
)
from tests.contract.factories import make_job, new_id, run_job
from tests.contract.transports import Transport

RFC3339_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$")


class TestCreateJob:
    def test_new_job_reads_as_pending_with_apiserver_metadata(self, transport: Transport) -> None:
        job = make_job(transport, gpu_count=2, vendor="nvidia", timeout_seconds=60, max_retries=1)
        assert job.phase is JobPhase.PENDING
        assert job.status.attempts == 0
        assert job.metadata.generation == 1
        assert job.metadata.uid
        assert job.metadata.resource_version
        assert job.metadata.namespace == transport.namespace
        assert job.metadata.creation_timestamp is not None
        assert (job.spec.gpu_count, job.spec.vendor) == (2, "nvidia")
        assert (job.spec.timeout_seconds, job.spec.max_retries) == (60, 1)
        assert job.raw["status"] == {"phase": "Pending"}  # the CRD's status default

    def test_arguments_and_priority_are_kept_in_spec(self, transport: Transport) -> None:
        job = make_job(transport, args_ref="s3://gridweave/args/a.pkl", priority=7)
        assert (job.spec.args_ref, job.spec.priority) == ("s3://gridweave/args/a.pkl", 7)
        plain = make_job(transport)
        assert (plain.spec.args_ref, plain.spec.priority) == (None, 0)
        assert "argsRef" not in plain.raw["spec"]

    def test_raw_user_id_stays_in_spec_and_label_is_sanitized(self, transport: Transport) -> None:
        job = make_job(transport, user_id="Bob Smith <bob@example.com>")
        assert job.spec.user_id == "Bob Smith <bob@example.com>"
        assert job.metadata.labels[USER_LABEL] == user_label_value("Bob Smith <bob@example.com>")
        assert job.billing_owner == "Bob Smith <bob@example.com>"

    def test_owner_is_billed_when_given(self, transport: Transport) -> None:
        job = make_job(transport, owner="team-ml")
        assert job.billing_owner == "team-ml"

    def test_duplicate_name_is_already_exists(self, transport: Transport) -> None:
        job = make_job(transport)
        with pytest.raises(AlreadyExists) as caught:
            make_job(transport, job.name)
        assert caught.value.status["reason"] == "AlreadyExists"

    @pytest.mark.parametrize("bad_id", ["Job_1", "-job", "job.1", "a" * 64, ""])
    def test_bad_job_id_is_refused_before_any_request(
        self, transport: Transport, bad_id: str
    ) -> None:
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            make_job(transport, bad_id)
        assert caught.value.field == "job_id"
        assert sum(requests.values()) == 0

    def test_a_jobs_memory_and_cpu_are_kept_in_its_spec(self, transport: Transport) -> None:
        job = make_job(transport, memory_mb=512, cpu_millis=1500)
        assert (job.spec.memory_mb, job.spec.cpu_millis) == (512, 1500)
        assert (job.raw["spec"]["memoryMb"], job.raw["spec"]["cpuMillis"]) == (512, 1500)
        read = transport.api.get_job(job.name)
        assert (read.spec.memory_mb, read.spec.cpu_millis) == (512, 1500)
        plain = make_job(transport)
        assert (plain.spec.memory_mb, plain.spec.cpu_millis) == (None, None)

    def test_a_jobs_image_is_kept_pinned_in_its_spec(self, transport: Transport) -> None:
        image = f"usr-0123/tools@sha256:{'ab' * 32}"
        job = make_job(transport, image=image)
        assert job.spec.image == image and job.raw["spec"]["image"] == image
        assert transport.api.get_job(job.name).spec.image == image
        assert make_job(transport).spec.image is None

    def test_a_jobs_gpu_models_are_kept_in_its_spec(self, transport: Transport) -> None:
        models = ["A100", "H100 80GB"]
        job = make_job(transport, gpu_models=models)
        assert job.spec.gpu_models == tuple(models) and job.raw["spec"]["gpuModels"] == models
        assert transport.api.get_job(job.name).spec.gpu_models == tuple(models)
        assert make_job(transport).spec.gpu_models is None

    def test_a_jobs_pip_requirements_are_kept_in_its_spec(self, transport: Transport) -> None:
        pip = ["six==1.16.0", "requests[socks]>=2; python_version < '3.13'"]
        job = make_job(transport, pip=pip)
        assert job.spec.pip == tuple(pip) and job.raw["spec"]["pip"] == pip
        assert transport.api.get_job(job.name).spec.pip == tuple(pip)
        assert make_job(transport).spec.pip is None
        assert "pip" not in make_job(transport, pip=[]).raw["spec"]  # none asked: none written

    def test_a_map_workers_share_is_kept_in_its_spec(self, transport: Transport) -> None:
        share = {"map_id": "map-1a2b", "worker": 2, "workers": 4, "items": 1000}
        job = make_job(transport, map_share={**share, "chunk_items": 50, "retries": 1})
        assert job.spec.map is not None
        assert (job.spec.map.map_id, job.spec.map.worker, job.spec.map.workers) == (
            "map-1a2b",
            2,
            4,
        )
        assert (job.spec.map.items, job.spec.map.chunk_items, job.spec.map.retries) == (
            1000,
            50,
            1,
        )
        assert job.raw["spec"]["map"]["chunkItems"] == 50
        assert transport.api.get_job(job.name).spec.map == job.spec.map
        assert make_job(transport).spec.map is None

    @pytest.mark.parametrize(
        ("share", "field"),
        [
            ({"worker": 4}, "map_share.worker"),  # not below workers
            ({"workers": 0}, "map_share.workers"),
            ({"items": 0}, "map_share.items"),
            ({"chunk_items": "50"}, "map_share.chunk_items"),
            ({"retries": 11}, "map_share.retries"),
            ({"map_id": "Map_1"}, "map_share.map_id"),
            ({"colour": 1}, "map_share"),
        ],
    )
    def test_a_bad_map_share_is_refused_naming_its_field(
        self, transport: Transport, share: dict[str, Any], field: str
    ) -> None:
        good = {"map_id": "map-1", "worker": 0, "workers": 4, "items": 10, "chunk_items": 5}
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            make_job(transport, map_share={**good, "retries": 0, **share})
        assert caught.value.field == field
        assert sum(requests.values()) == 0

    @pytest.mark.parametrize(
        ("arguments", "field"),
        [
            ({"image": "usr-0123/tools:v2"}, "image"),  # a tag: the platform pins it first
            ({"image": f"Usr/tools@sha256:{'ab' * 32}"}, "image"),
            ({"image": f"localhost:30500/u/tools@sha256:{'ab' * 32}"}, "image"),
            ({"image": f"u/t@sha256:{'ab' * 31}"}, "image"),
            ({"pip": ["--index-url=https://evil.example/simple"]}, "pip"),  # an option
            ({"pip": ["-e ."]}, "pip"),
            ({"pip": ["six @ https://example.com/six.whl"]}, "pip"),  # a URL
            ({"pip": ["six\n--index-url http://evil.example"]}, "pip"),  # a second line
            ({"pip": ["six=="]}, "pip"),
            ({"pip": "six"}, "pip"),  # a string, not a list
            ({"pip": ["six"] * 65}, "pip"),
            ({"pip": ["s" * 201]}, "pip"),
            ({"vram_mb": "lots"}, "vram_mb"),
            ({"vram_mb": 0}, "vram_mb"),
            ({"gpu_count": 2.5}, "gpu_count"),
            ({"vendor": "intel"}, "vendor"),
            ({"max_retries": -1}, "max_retries"),
            ({"priority": 1001}, "priority"),
            ({"priority": -1001}, "priority"),
            ({"args_ref": ""}, "args_ref"),
            ({"memory_mb": 63}, "memory_mb"),
            ({"cpu_millis": 0}, "cpu_millis"),
            ({"gpu_models": "A100"}, "gpu_models"),  # a string, not a list
            ({"gpu_models": []}, "gpu_models"),
            ({"gpu_models": ["A100"] * 2}, "gpu_models"),
            ({"gpu_models": ["-A100"]}, "gpu_models"),
            ({"gpu_models": ["A100;rm"]}, "gpu_models"),
            ({"gpu_models": ["a" * 101]}, "gpu_models"),
            ({"gpu_models": [f"m{i}" for i in range(9)]}, "gpu_models"),
        ],
    )
    def test_bad_arguments_name_the_parameter(
        self, transport: Transport, arguments: dict[str, Any], field: str
    ) -> None:
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            make_job(transport, **arguments)
        assert caught.value.field == field
        assert sum(requests.values()) == 0

    @pytest.mark.parametrize(
        ("labels", "field"),
        [
            ({"team": "x" * 64}, "labels[team]"),
            ({"team": "ml team"}, "labels[team]"),
            ({"bad key!": "v"}, "labels"),
        ],
    )
    def test_bad_labels_are_refused_before_any_request(
        self, transport: Transport, labels: dict[str, str], field: str
    ) -> None:
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            make_job(transport, labels=labels)
        assert caught.value.field == field
        assert field.split("[")[0] in str(caught.value)
        assert sum(requests.values()) == 0


class TestReadListDeleteJobs:
    def test_get_missing_is_not_found(self, transport: Transport) -> None:
        with pytest.raises(NotFound) as caught:
            transport.api.get_job(new_id())
        assert caught.value.status["code"] == 404

    def test_delete_then_get_is_not_found(self, transport: Transport) -> None:
        job = make_job(transport)
        transport.api.delete_job(job.name)
        with pytest.raises(NotFound):
            transport.api.get_job(job.name)
        with pytest.raises(NotFound):
            transport.api.delete_job(job.name)

    def test_list_by_label_selector_and_user(self, transport: Transport) -> None:
        a = make_job(transport, user_id="alice", labels={"tier": "gold", "zone": "eu"})
        b = make_job(transport, user_id="bob", labels={"tier": "silver"})
        c = make_job(transport, user_id="alice")

        def names(selector: str | None = None, user_id: str | None = None) -> set[str]:
            return {j.name for j in transport.api.list_jobs(selector, user_id=user_id)}

        assert names() == {a.name, b.name, c.name}
        assert names("tier=gold") == {a.name}
        assert names("tier==gold") == {a.name}
        assert names("tier!=gold") == {b.name, c.name}
        assert names("tier in (gold,silver)") == {a.name, b.name}
        assert names("tier notin (gold)") == {b.name, c.name}
        assert names("tier") == {a.name, b.name}
        assert names("!tier") == {c.name}
        assert names("tier,zone=eu") == {a.name}
        assert names(user_id="alice") == {a.name, c.name}
        assert names("tier", user_id="alice") == {a.name}

    def test_a_user_whose_id_equals_anothers_label_value_sees_only_their_own(
        self, transport: Transport
    ) -> None:
        victim = make_job(transport, user_id="alice@example.com")
        impostor_id = user_label_value("alice@example.com")  # a valid id, the same label
        impostor = make_job(transport, user_id=impostor_id)
        mine = transport.api.list_jobs(user_id=impostor_id)
        theirs = transport.api.list_jobs(user_id="alice@example.com")
        assert [j.name for j in mine] == [impostor.name]
        assert [j.name for j in theirs] == [victim.name]

    def test_a_job_made_without_the_user_label_is_listed_by_its_user(
        self, transport: Transport
    ) -> None:
        name = new_id()
        body = {
            "apiVersion": "gridweave.io/v1",
            "kind": "GridweaveJob",
            "metadata": {"name": name},  # as kubectl makes it: no gridweave.io/user label
            "spec": {"userId": "carol@example.com", "functionRef": "s3://f", "vramMb": 1},
        }
        transport.client.store.create(transport.namespace, "gridweavejobs", body)
        mine = transport.api.list_jobs(user_id="carol@example.com")
        assert [job.name for job in mine] == [name]
        assert transport.api.list_jobs(user_id="dave@example.com") == []

    @pytest.mark.parametrize("user_id", ["a,b", "team=ml", "back\\slash", "x=1,y=2\\"])
    def test_user_ids_with_selector_syntax_list_exactly_their_jobs(
        self, transport: Transport, user_id: str
    ) -> None:
        mine = make_job(transport, user_id=user_id)
        make_job(transport, user_id=user_id + "x")
        make_job(transport, user_id="a")
        assert [job.name for job in transport.api.list_jobs(user_id=user_id)] == [mine.name]

    def test_list_of_other_namespace_is_empty(self, transport: Transport) -> None:
        make_job(transport)
        other = type(transport.client)(transport.client.store, new_id("ns"))
        assert other.list_jobs() == []


class TestJobSetters:
    def test_full_lifecycle_stamps_times_and_bills_rounded_up(self, transport: Transport) -> None:
        api = transport.api
        job = make_job(transport, gpu_count=2)
        allocated = api.set_job_allocated(job.name, "gpu-node-1", [0, 1])
        assert allocated.phase is JobPhase.ALLOCATED
        assert (allocated.status.node, allocated.status.gpu_indices) == ("gpu-node-1", (0, 1))
        assert allocated.status.allocated_at is not None
        assert RFC3339_Z.match(allocated.raw["status"]["allocatedAt"])
        running = api.set_job_running(job.name)
        assert running.status.started_at is not None
        done = api.set_job_completed(
            job.name, 12.2, result_ref="s3://gridweave/results/r.pkl", result_sha256="ab" * 32
        )
        assert done.phase is JobPhase.COMPLETED
        assert done.status.result_sha256 == "ab" * 32
        assert (done.status.wall_seconds, done.status.billed_seconds) == (12.2, 13)
        assert done.status.result_ref == "s3://gridweave/results/r.pkl"
        assert done.status.finished_at is not None
        assert done.status.finished_at <= datetime.now(UTC)
        finished = done.status.condition("Finished")
        assert finished is not None and finished.status == "True"
        assert finished.reason == "Completed"
        for condition in done.raw["status"]["conditions"]:
            assert RFC3339_Z.match(condition["lastTransitionTime"])
            assert condition["observedGeneration"] == 1

    def test_status_write_keeps_generation(self, transport: Transport) -> None:
        job = make_job(transport)
        allocated = transport.api.set_job_allocated(job.name, "n1", [0])
        assert allocated.metadata.generation == 1
        assert allocated.status.observed_generation == 1
        assert int(allocated.metadata.resource_version) > int(job.metadata.resource_version)

    def test_requeue_frees_the_gpu_and_counts_the_attempt(self, transport: Transport) -> None:
        job = run_job(transport)
        requeued = transport.api.set_job_pending(job.name, "NodeLost", "gpu-node-1 vanished")
        assert requeued.phase is JobPhase.PENDING
        assert requeued.status.attempts == 1
        assert requeued.status.node is None and requeued.status.gpu_indices == ()
        assert requeued.status.started_at is None
        assert (requeued.status.reason, requeued.status.message) == (
            "NodeLost",
            "gpu-node-1 vanished",
        )
        allocated = requeued.status.condition("Allocated")
        assert allocated is not None and allocated.status == "False"
        transport.api.set_job_allocated(job.name, "gpu-node-2", [1])
        again = transport.api.set_job_pending(job.name, "NodeLost")
        assert again.status.attempts == 2

    def test_a_lost_attempts_seconds_are_billed_with_the_last(self, transport: Transport) -> None:
        api = transport.api
        job = run_job(transport)
        lost = api.set_job_pending(job.name, "WorkerLost", "its worker died", wall_seconds=25.2)
        assert lost.status.earlier_seconds == 25.2 and lost.raw["status"]["earlierSeconds"] == 25.2
        # where it ran stays (billed there should the job end before it is placed again)
        assert (lost.status.earlier_node, lost.status.earlier_gpu_indices) == ("gpu-node-1", (0,))
        assert lost.status.node is None and lost.status.gpu_indices == ()
        api.set_job_allocated(job.name, "gpu-node-2", [1])
        api.set_job_running(job.name)
        again = api.set_job_pending(job.name, "NodeLost", wall_seconds=4.3)
        assert again.status.earlier_seconds == 29.5
        assert (again.status.earlier_node, again.status.earlier_gpu_indices) == ("gpu-node-2", (1,))
        # a lost attempt that never ran keeps the one that did
        api.set_job_allocated(job.name, "gpu-node-3", [2])
        unstarted = api.set_job_pending(job.name, "WorkerNotStarted")
        assert (unstarted.status.earlier_node, unstarted.status.earlier_gpu_indices) == (
            "gpu-node-2",
            (1,),
        )
        api.set_job_allocated(job.name, "gpu-node-2", [1])
        api.set_job_running(job.name)
        done = api.set_job_completed(job.name, 10.1)
        assert done.status.wall_seconds == 10.1  # the last attempt's own
        assert done.status.billed_seconds == 40  # ceil(25.2 + 4.3 + 10.1): every second
        with pytest.raises(Invalid) as caught:
            api.set_job_pending(make_job(transport).name, "NodeLost", wall_seconds=-1)
        assert caught.value.field == "wall_seconds"

    def test_failed_cancelled_timed_out(self, transport: Transport) -> None:
        api = transport.api
        failed = api.set_job_failed(make_job(transport).name, "ImageMissing", "no such image")
        assert (failed.phase, failed.status.reason) == (JobPhase.FAILED, "ImageMissing")
        assert failed.status.billed_seconds is None
        cancelled = api.set_job_cancelled(run_job(transport).name, "user asked", 3.5)
        assert (cancelled.phase, cancelled.status.billed_seconds) == (JobPhase.CANCELLED, 4)
        timed_out = api.set_job_timed_out(run_job(transport).name, wall_seconds=60.0)
        assert (timed_out.phase, timed_out.status.billed_seconds) == (JobPhase.TIMED_OUT, 60)
        running = timed_out.status.condition("Running")
        assert running is not None and running.status == "False"

    def test_illegal_move_names_both_phases_and_writes_nothing(self, transport: Transport) -> None:
        job = make_job(transport)
        with transport.count_requests() as requests, pytest.raises(InvalidTransition) as caught:
            transport.api.set_job_running(job.name)
        assert (caught.value.current, caught.value.target) == ("Pending", "Running")
        assert "Pending" in str(caught.value) and "Running" in str(caught.value)
        assert requests == {"GET": 1}

    def test_terminal_phase_never_changes(self, transport: Transport) -> None:
        job = run_job(transport)
        transport.api.set_job_completed(job.name, 1.0)
        with pytest.raises(InvalidTransition):
            transport.api.set_job_failed(job.name, "Late")
        with pytest.raises(InvalidTransition):
            transport.api.set_job_pending(job.name, "Requeue")
        assert transport.api.get_job(job.name).phase is JobPhase.COMPLETED

    def test_repeating_the_current_move_writes_nothing(self, transport: Transport) -> None:
        job = make_job(transport)
        first = transport.api.set_job_allocated(job.name, "n1", [0])
        with transport.count_requests() as requests:
            again = transport.api.set_job_allocated(job.name, "n1", [0])
        assert requests == {"GET": 1}
        assert again.metadata.resource_version == first.metadata.resource_version
        assert again == first

    @pytest.mark.parametrize(
        ("setter", "arguments", "reached_by"),
        [
            ("set_job_allocated", ("n1", [0]), ()),
            ("set_job_running", (), ("allocated",)),
            ("set_job_completed", (2.5,), ("allocated", "running")),
            ("set_job_failed", ("Crashed", "exit 1", 2.0), ()),
            ("set_job_cancelled", (), ()),
            ("set_job_timed_out", ("", 9.0), ("allocated", "running")),
            ("set_job_pending", ("NodeLost",), ("allocated",)),
        ],
    )
    def test_uncontended_setter_is_one_get_and_one_patch(
        self,
        transport: Transport,
        setter: str,
        arguments: tuple[object, ...],
        reached_by: tuple[str, ...],
    ) -> None:
        job = make_job(transport)
        for step in reached_by:
            if step == "allocated":
                transport.api.set_job_allocated(job.name, "n1", [0])
            else:
                transport.api.set_job_running(job.name)
        with transport.count_requests() as requests:
            getattr(transport.api, setter)(job.name, *arguments)
        assert requests == {"GET": 1, "PATCH": 1}

    @pytest.mark.parametrize(
        ("call", "field"),
        [
            (lambda api, n: api.set_job_failed(n, "not camel case"), "reason"),
            (lambda api, n: api.set_job_pending(n, "Bad-Reason"), "reason"),
            (lambda api, n: api.set_job_completed(n, -1.0), "wall_seconds"),
            (lambda api, n: api.set_job_completed(n, float("nan")), "wall_seconds"),
            (lambda api, n: api.set_job_failed(n, "Lost", "", float("inf")), "wall_seconds"),
            (lambda api, n: api.set_job_allocated(n, "n1", [0, 0]), "gpu_indices"),
            (lambda api, n: api.set_job_allocated(n, "", [0]), "node"),
            (lambda api, n: api.get_job("Not_A_Name"), "job_id"),
            (lambda api, n: api.get_job(n + "\n"), "job_id"),
            (lambda api, n: api.set_job_failed(n, "Failed\n"), "reason"),
            (lambda api, n: api.set_job_completed(n, 1.0, None, "AB" * 32), "result_sha256"),
            (lambda api, n: api.set_job_completed(n, 1.0, None, "ab" * 31), "result_sha256"),
        ],
    )
    def test_bad_setter_arguments_are_refused_before_any_request(
        self, transport: Transport, call: object, field: str
    ) -> None:
        job = make_job(transport)
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            call(transport.api, job.name)  # type: ignore[operator]
        assert caught.value.field == field
        assert sum(requests.values()) == 0

    @pytest.mark.parametrize("indices", [[0], [0, 1, 2]], ids=["fewer", "more"])
    def test_allocation_takes_one_index_per_gpu_of_the_spec(
        self, transport: Transport, indices: list[int]
    ) -> None:
        job = make_job(transport, gpu_count=2)
        with transport.count_requests() as requests, pytest.raises(Invalid) as caught:
            transport.api.set_job_allocated(job.name, "gpu-node-1", indices)
        assert caught.value.field == "gpu_indices"
        assert "spec.gpuCount" in str(caught.value)
        assert requests == {"GET": 1}  # read to learn gpuCount; nothing written
        assert transport.client.get_job(job.name).phase is JobPhase.PENDING

    def test_a_repeat_with_other_arguments_is_a_conflict(self, transport: Transport) -> None:
        job = make_job(transport)
        placed = transport.api.set_job_allocated(job.name, "node-a", [0])
        with pytest.raises(Conflict, match="node-a"):
            transport.api.set_job_allocated(job.name, "node-b", [3])
        with pytest.raises(Conflict, match="gpuIndices"):
            transport.api.set_job_allocated(job.name, "node-a", [1])
        again = transport.api.set_job_allocated(job.name, "node-a", [0])
        assert again.metadata.resource_version == placed.metadata.resource_version
        transport.api.set_job_running(job.name)
        transport.api.set_job_completed(job.name, 2.5)
        with pytest.raises(Conflict, match="wallSeconds"):
            transport.api.set_job_completed(job.name, 7.0)
        assert transport.api.get_job(job.name).status.wall_seconds == 2.5

    def test_missing_job_setter_is_not_found(self, transport: Transport) -> None:
        with pytest.raises(NotFound):
            transport.api.set_job_running(new_id())


class TestWaitForJob:
    def test_returns_once_in_a_wanted_phase(self, transport: Transport) -> None:
        job = run_job(transport)
        transport.api.set_job_completed(job.name, 1.0)
        found = transport.api.wait_for_job(job.name, [JobPhase.COMPLETED, "Failed"], timeout=5)
        assert found.phase is JobPhase.COMPLETED

    def test_raises_when_the_phase_never_comes(self, transport: Transport) -> None:
        job = make_job(transport)
        with pytest.raises(WaitTimedOut) as caught:
            transport.api.wait_for_job(job.name, [JobPhase.RUNNING], timeout=0.05)
        assert "Pending" in str(caught.value)
