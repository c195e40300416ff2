"""The operation declarations: binding a call's arguments, routes, derived methods."""

from __future__ import annotations

from typing import Any

import pytest

from gridweave_controller.operations import OPERATIONS, Operations


def _bound(operation: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    bound = operation.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


class TestArguments:
    @pytest.mark.parametrize(
        ("operation", "args", "kwargs"),
        [
            (Operations.create_job, ("j", "u", "f"), {"vram_mb": 1}),
            (
                Operations.create_job,
                ("j", "u"),
                {"function_ref": "f", "vram_mb": 1, "gpu_count": 2},
            ),
            (
                Operations.create_job,
                (),
                {"job_id": "j", "user_id": "u", "function_ref": "f", "vram_mb": 1},
            ),
            (Operations.list_jobs, (), {}),
            (Operations.list_jobs, ("tier=gold",), {"user_id": "alice"}),
            (Operations.set_job_failed, ("j", "Lost"), {}),
            (Operations.set_job_failed, ("j", "Lost", "gone", 2.0), {}),
            (Operations.set_endpoint_health, ("e", True), {"ready_replicas": 1}),
        ],
    )
    def test_the_fast_binding_equals_inspect_bind(self, operation, args, kwargs) -> None:
        assert operation.arguments(args, kwargs) == _bound(operation, args, kwargs)

    @pytest.mark.parametrize(
        ("args", "kwargs"),
        [
            (("j", "u", "f", 1), {}),  # vram_mb is keyword-only
            (("j", "u", "f"), {}),  # vram_mb is required
            (("j", "u", "f"), {"vram_mb": 1, "colour": "red"}),  # no such parameter
            (("j", "u", "f"), {"vram_mb": 1, "user_id": "v"}),  # given twice
            (("j", "u", "f", "x", "y"), {"vram_mb": 1}),  # too many positional
        ],
    )
    def test_a_wrong_call_is_the_type_error_of_the_direct_call(self, args, kwargs) -> None:
        with pytest.raises(TypeError):
            Operations.create_job.arguments(args, kwargs)


class TestDeclarations:
    def test_names_are_unique_and_jobs_come_first(self) -> None:
        names = [operation.name for operation in OPERATIONS]
        assert len(names) == len(set(names)) == 25
        assert names.index("create_endpoint") > names.index("wait_for_job")

    def test_each_operation_documents_itself(self) -> None:
        for operation in OPERATIONS:
            assert (operation.__doc__ or "").strip(), operation.name
            assert "Flow" not in str(operation.signature.return_annotation)

    def test_an_object_that_runs_nothing_cannot_bind_an_operation(self) -> None:
        with pytest.raises(TypeError, match="runs no operations"):
            Operations().get_job  # type: ignore[call-overload]  # noqa: B018 (mypy refuses it too)
