"""Mapping apiserver failures to the one error hierarchy."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from gridweave_controller import (
    AlreadyExists,
    Conflict,
    CrdError,
    CRDNotInstalled,
    Expired,
    Invalid,
    InvalidTransition,
    NotFound,
    TransportError,
    WaitTimedOut,
    error_from_status,
)
from gridweave_controller._kube_store import KubeStore
from gridweave_controller.errors import parse_status_body


def status(reason: str, code: int, **details: Any) -> dict[str, Any]:
    """A Kubernetes Status dict."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": f"{reason} happened",
        "reason": reason,
        "details": details,
        "code": code,
    }


class TestErrorFromStatus:
    @pytest.mark.parametrize(
        ("reason", "code", "expected"),
        [
            ("NotFound", 404, NotFound),
            ("AlreadyExists", 409, AlreadyExists),
            ("Conflict", 409, Conflict),
            ("Invalid", 422, Invalid),
            ("BadRequest", 400, Invalid),
            ("Expired", 410, Expired),
            ("Gone", 410, Expired),
            ("Forbidden", 403, TransportError),
            ("InternalError", 500, TransportError),
        ],
    )
    def test_reason_decides(self, reason: str, code: int, expected: type[CrdError]) -> None:
        error = error_from_status(status(reason, code), code)
        assert type(error) is expected
        assert error.status["reason"] == reason
        assert error.message == f"{reason} happened"

    def test_reason_wins_over_the_code(self) -> None:
        assert type(error_from_status(status("AlreadyExists", 500), 500)) is AlreadyExists
        assert type(error_from_status(status("Conflict", 200), 200)) is Conflict

    @pytest.mark.parametrize(
        ("code", "expected"),
        [(409, Conflict), (410, Expired), (422, Invalid), (400, Invalid), (503, TransportError)],
    )
    def test_code_decides_without_a_known_reason(self, code: int, expected: type[CrdError]) -> None:
        assert type(error_from_status(status("SomethingNew", code), code)) is expected

    def test_plain_404_is_a_missing_crd_not_a_missing_object(self) -> None:
        error = error_from_status(None, 404, fallback="404 page not found")
        assert type(error) is CRDNotInstalled
        assert isinstance(error, NotFound)
        assert "CRD" in str(error)
        assert type(error_from_status(status("NotFound", 404), 404)) is NotFound

    def test_unserved_resource_status_is_a_missing_crd(self) -> None:
        """kube-apiserver's answer for a path no resource type serves."""
        body = status("NotFound", 404)
        body["message"] = "the server could not find the requested resource"
        assert type(error_from_status(body, 404)) is CRDNotInstalled
        named = status("NotFound", 404, name="job-1", kind="gridweavejobs")
        named["message"] = "the server could not find the requested resource"
        assert type(error_from_status(named, 404)) is NotFound

    def test_invalid_names_the_first_cause_field(self) -> None:
        body = status("Invalid", 422, causes=[{"field": "spec.vramMb", "message": "x"}])
        error = error_from_status(body, 422)
        assert isinstance(error, Invalid) and error.field == "spec.vramMb"

    @pytest.mark.parametrize(
        "error",
        [
            NotFound("gone"),
            CRDNotInstalled("not served"),
            AlreadyExists("twice"),
            Conflict("stale"),
            Invalid("bad", field="spec.x"),
            WaitTimedOut("slow"),
            TransportError("down"),
            InvalidTransition("GridweaveJob", "job-1", "Completed", "Running"),
        ],
        ids=lambda e: type(e).__name__,
    )
    def test_round_trip_through_a_status(self, error: CrdError) -> None:
        """What a proxy sends (to_status) comes back as the same error class."""
        wire = json.loads(json.dumps(error.to_status()))
        back = error_from_status(wire, wire["code"])
        assert type(back) is type(error)
        assert str(back) == str(error)
        if isinstance(error, InvalidTransition):
            assert isinstance(back, InvalidTransition)
            assert (back.kind, back.name, back.current, back.target) == (
                "GridweaveJob",
                "job-1",
                "Completed",
                "Running",
            )


class TestParseStatusBody:
    def test_bytes_and_str_parse_alike(self) -> None:
        body = json.dumps(status("Conflict", 409))
        assert (
            parse_status_body(body) == parse_status_body(body.encode()) == status("Conflict", 409)
        )

    @pytest.mark.parametrize(
        "body", [None, "", "404 page not found\n", b"\xff\xfe", '{"kind":"X"}']
    )
    def test_not_a_status(self, body: bytes | str | None) -> None:
        assert parse_status_body(body) is None


class TestKubeStoreMapping:
    @pytest.mark.parametrize("as_bytes", [True, False], ids=["bytes", "str"])
    def test_api_exception_body_in_either_form(self, as_bytes: bool) -> None:
        text = json.dumps(status("AlreadyExists", 409, name="job-1"))
        body: Any = text.encode() if as_bytes else text
        exc = ApiException(status=409, reason="Conflict")
        exc.body = body

        class Raising:
            def create_namespaced_custom_object(self, *args: Any, **kwargs: Any) -> Any:
                raise exc

        store = KubeStore.__new__(KubeStore)
        store._api = Raising()  # type: ignore[assignment]
        with pytest.raises(AlreadyExists) as caught:
            store.create("ns", "gridweavejobs", {})
        assert caught.value.status["details"]["name"] == "job-1"
        assert caught.value.__cause__ is exc

    def test_unreachable_server_is_a_transport_error(self, tmp_path: Any) -> None:
        from tests.support.http_server import free_port

        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {"name": "c", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}
                    ],
                    "users": [{"name": "u", "user": {}}],
                    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                    "current-context": "x",
                }
            )
        )
        from gridweave_controller import crd

        client = crd.init_k8s_client(kubeconfig=kubeconfig, namespace="gridweave")
        try:
            with pytest.raises(TransportError):
                client.get_job("job-1")
        finally:
            client.store.close()  # type: ignore[attr-defined]
