"""One decoding of error bodies into one exception tree; a decoder of another format plugs in."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gridweave_clients import (
    ROLE_HEADER,
    USER_HEADER,
    Answer,
    Call,
    Conflict,
    ErrorDecoder,
    Forbidden,
    Gone,
    InternalClient,
    InvalidRequest,
    NotFound,
    PaymentRequired,
    RateLimited,
    ServiceRefused,
    ServiceUnavailable,
    Unauthorized,
)
from gridweave_controller import errors as controller_errors
from tests.gridweave_clients.conftest import TOKEN, Probe
from tests.gridweave_clients.drivers import DRIVERS, CountingTransport, request
from tests.support.http_server import free_port


@pytest.mark.parametrize("driver", DRIVERS)
class TestGridweaveErrorBodies:
    @pytest.mark.parametrize(
        ("kind", "error_class", "status", "code", "details"),
        [
            ("not_found", NotFound, 404, "widget_not_found", {"widget_id": "w-1"}),
            ("payment", PaymentRequired, 402, "insufficient_funds", {"available": 5, "needed": 9}),
            ("conflict", Conflict, 409, "widget_busy", {}),
            ("gone", Gone, 410, "code_expired", {}),
            ("rate", RateLimited, 429, "rate_limited", {"window_seconds": 60}),
            ("teapot", ServiceRefused, 418, "teapot", {}),
        ],
    )
    def test_a_refusal_carries_status_code_and_details(
        self,
        driver: str,
        probe: Probe,
        kind: str,
        error_class: type[ServiceRefused],
        status: int,
        code: str,
        details: dict[str, Any],
    ) -> None:
        with pytest.raises(ServiceRefused) as raised:
            request(driver, probe.url, "GET", f"/v1/refusals/{kind}")

        assert type(raised.value) is error_class
        assert (raised.value.status_code, raised.value.code) == (status, code)
        assert raised.value.details == details
        assert raised.value.message == f"refused with {code}"
        assert raised.value.service == "service"
        assert raised.value.operation == f"GET /v1/refusals/{kind}"

    def test_a_service_rule_names_the_field(self, driver: str, probe: Probe) -> None:
        with pytest.raises(InvalidRequest) as raised:
            request(driver, probe.url, "GET", "/v1/invalid")

        assert raised.value.field == "to_user_id"
        assert raised.value.fields == [
            {"field": "to_user_id", "message": "a transfer needs two different accounts"}
        ]

    def test_a_schema_refusal_names_every_field(self, driver: str, probe: Probe) -> None:
        with pytest.raises(InvalidRequest) as raised:
            request(
                driver,
                probe.url,
                "POST",
                "/v1/validated",
                json={"amount": 0},
                params={"limit": "0"},
            )

        assert raised.value.status_code == 422
        assert sorted(item["field"] for item in raised.value.fields) == ["amount", "limit", "note"]

    def test_a_wrong_token_is_unauthorized(self, driver: str, probe: Probe) -> None:
        with pytest.raises(Unauthorized) as raised:
            request(driver, probe.url, "GET", "/v1/echo", token="not-the-token")

        assert (raised.value.status_code, raised.value.code) == (401, "unauthorized")

    def test_a_role_refusal_is_forbidden(self, driver: str, probe: Probe) -> None:
        with pytest.raises(Forbidden, match="requires the role admin"):
            request(driver, probe.url, "GET", "/v1/admin-only", headers={ROLE_HEADER: "platform"})

    def test_an_internal_error_is_unavailable_with_its_status(
        self, driver: str, probe: Probe
    ) -> None:
        with pytest.raises(ServiceUnavailable) as raised:
            request(driver, probe.url, "GET", "/v1/crash")

        assert raised.value.status_code == 500

    def test_a_2xx_that_is_not_json_is_unavailable(self, driver: str, probe: Probe) -> None:
        with pytest.raises(ServiceUnavailable, match="not JSON"):
            request(driver, probe.url, "GET", "/v1/not-json")


@pytest.mark.parametrize("driver", DRIVERS)
class TestOtherErrorBodies:
    @pytest.mark.parametrize(
        ("answer", "error_class", "code", "message"),
        [
            (
                httpx.Response(400, html="<html>Bad Request</html>"),
                ServiceRefused,
                "http_400",
                "<html>Bad Request</html>",
            ),
            (httpx.Response(404, json={"detail": "Not Found"}), NotFound, "http_404", "Not Found"),
            (httpx.Response(404), NotFound, "http_404", "HTTP 404"),
            (httpx.Response(409, json=["odd"]), Conflict, "http_409", '["odd"]'),
            (
                httpx.Response(422, json={"error": {"message": "bad"}}),
                InvalidRequest,
                "http_422",
                "bad",
            ),
        ],
    )
    def test_any_4xx_body_is_decoded(
        self,
        driver: str,
        answer: httpx.Response,
        error_class: type[ServiceRefused],
        code: str,
        message: str,
    ) -> None:
        transport = CountingTransport(answer)

        with pytest.raises(ServiceRefused) as raised:
            request(driver, "http://probe", "GET", "/v1/things", transport=transport)

        assert type(raised.value) is error_class
        assert (raised.value.code, raised.value.message) == (code, message)
        assert len(transport.requests) == 1


class _KubeStatusDecoder(ErrorDecoder):
    """What the proxied CRD client plugs in: Status bodies become the controller's errors."""

    def refused(self, call: Call, answer: Answer) -> Exception:
        status = controller_errors.parse_status_body(answer.content)
        if status is None:
            return controller_errors.TransportError(f"HTTP {answer.status_code}")
        return controller_errors.error_from_status(status, answer.status_code)

    def unavailable(self, call: Call, reason: str) -> Exception:
        return controller_errors.TransportError(f"kuberay-service {call.method}: {reason}")

    def closed(self, call: Call) -> Exception:
        return controller_errors.TransportError("the connection was closed")


def _status(code: int, reason: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "Status", "status": "Failure", "code": code, "reason": reason, **extra}


@pytest.mark.parametrize("driver", DRIVERS)
class TestPluggableDecoder:
    def test_status_bodies_become_the_controllers_errors(self, driver: str) -> None:
        transport = CountingTransport(
            httpx.Response(
                404,
                json=_status(404, "NotFound", message="job j-1 not found", details={"name": "j"}),
            )
        )

        with pytest.raises(controller_errors.NotFound, match="j-1"):
            request(
                driver, "http://kuberay", "GET", "/v1/crd/jobs/j-1",
                transport=transport, decoder=_KubeStatusDecoder("kuberay_service"),
            )  # fmt: skip

    def test_an_invalid_status_keeps_its_field(self, driver: str) -> None:
        body = _status(
            422,
            "Invalid",
            message="bad",
            details={"causes": [{"field": "vramMb", "message": "must be positive"}]},
        )
        transport = CountingTransport(httpx.Response(422, json=body))

        with pytest.raises(controller_errors.Invalid) as raised:
            request(
                driver, "http://kuberay", "POST", "/v1/crd/jobs",
                transport=transport, decoder=_KubeStatusDecoder("kuberay_service"),
            )  # fmt: skip

        assert raised.value.field == "vramMb"

    def test_no_answer_and_a_closed_client_are_its_transport_errors(self, driver: str) -> None:
        dead = f"http://127.0.0.1:{free_port()}"
        decoder = _KubeStatusDecoder("kuberay_service")

        with pytest.raises(controller_errors.TransportError, match="ConnectError"):
            request(driver, dead, "GET", "/v1/crd/jobs", decoder=decoder)
        with pytest.raises(controller_errors.TransportError, match="closed"):
            request(driver, dead, "GET", "/v1/crd/jobs", decoder=decoder, close_first=True)


class TestIdentityHeaders:
    def test_the_token_and_the_identity_reach_the_service(self, probe: Probe) -> None:
        with InternalClient(probe.url, TOKEN, role="metering", user="u-1") as client:
            assert client.request("GET", "/v1/echo") == {"user": "u-1", "role": "metering"}
            per_call = client.request("GET", "/v1/echo", headers={USER_HEADER: "u-2"})

        assert per_call == {"user": "u-2", "role": "metering"}

    def test_a_client_without_a_token_is_refused_at_once(self) -> None:
        with pytest.raises(ValueError, match="token"):
            InternalClient("http://probe", "")
