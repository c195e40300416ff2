"""schemathesis over kuberay-service's OpenAPI: no 5xx for any generated input.

Every 4xx for bad input is a Kubernetes Status that names what was wrong.
"""

from __future__ import annotations

import schemathesis

from tests.support.fuzzing import fuzz_settings
from tests.support.kuberay_fixtures import TOKEN, kuberay_app
from tests.support.memory_store import MemoryStore

app = kuberay_app(MemoryStore())
# A watch streams until its timeoutSeconds (or forever): the watch routes have tests of
# their own (tests/kuberay_service/test_watch_routes.py).
schema = schemathesis.openapi.from_dict(app.openapi()).exclude(path_regex="^/v1/crd/watch/")
schema.app = app  # calls go to the app in process (ASGI)
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@schema.parametrize()
@fuzz_settings(40)
def test_no_server_error_and_bad_input_is_named(case) -> None:
    response = case.call(headers=AUTH)
    assert response.status_code < 500, response.text
    if 400 <= response.status_code < 500 and response.status_code != 404:
        body = response.json()
        assert body.get("kind") == "Status", (case.method, case.path, response.status_code, body)
        assert body["message"]
        if body["reason"] == "Invalid":
            causes = body.get("details", {}).get("causes", [])
            named = [cause.get("field") for cause in causes] or [body["message"]]
            assert all(named), body
