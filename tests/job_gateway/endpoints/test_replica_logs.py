"""``GET /v1/endpoints/{id}/logs``: a custom endpoint's replica output, read on real Ray Serve.

Serve runs on the session's three-node Ray for this module; the replica is pinned to a
worker node, so its files are read by the task on that node. The bounds and the cleaning of
lines are checked on files written here.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from job_gateway.endpoints.replica_logs import MAX_LINE_CHARS, clean_line, tail_lines
from tests.job_gateway.endpoints import serve_classes
from tests.job_gateway.endpoints.factories import (
    SERVE_HEADERS,
    create,
    endpoint_body,
    new_endpoint_id,
    pickled_class,
    read_logs,
    stream_lines,
    wait_for,
    wait_running,
)
from tests.job_gateway.gateway_factories import GatewayServer


def wait_for_line(
    gateway: GatewayServer, endpoint_id: str, stream: str, line: str
) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        logs = read_logs(gateway, endpoint_id)
        if line in stream_lines(logs, stream):
            return logs
        assert time.monotonic() < deadline, logs
        time.sleep(0.5)


@pytest.mark.kubeapi
class TestReplicaLogs:
    def test_a_printed_line_is_read_on_the_replicas_node_and_stays_after_the_stop(
        self, gateway: GatewayServer
    ) -> None:
        endpoint_id = new_endpoint_id()
        function_ref = pickled_class(gateway, serve_classes.Talker, endpoint_id)
        create(gateway, **endpoint_body(endpoint_id, vendor="amd", function_ref=function_ref))
        view = wait_running(gateway, endpoint_id)
        assert view["node"] == "node-b"  # a worker node: the read runs there
        said = f"<b>hello</b> \x1b[31m{endpoint_id}"
        assert (
            httpx.post(f"{view['url']}/say", json={"text": said}, headers=SERVE_HEADERS).json()
            == said
        )

        logs = wait_for_line(gateway, endpoint_id, "stdout", f"<b>hello</b> {endpoint_id}")
        (replica,) = logs["replicas"]
        assert replica["state"] == "ALIVE" and replica["error"] is None
        assert replica["replica"] and replica["started_at"]
        stdout = stream_lines(logs, "stdout")
        assert stdout[0] == "talker ready"  # Ray's own marker lines are left out
        stderr = stream_lines(logs, "stderr")
        assert f"warned: <b>hello</b> {endpoint_id}" in stderr
        assert not [line for line in stderr if " -- GET " in line or " -- POST " in line], stderr

        one = read_logs(gateway, endpoint_id, lines=1)
        assert stream_lines(one, "stdout") == [f"<b>hello</b> {endpoint_id}"]
        assert one["lines"] == 1 and one["replicas"][0]["streams"][0]["truncated"] is True

        gateway.http.delete(f"/v1/endpoints/{endpoint_id}")
        wait_for(gateway, endpoint_id, lambda v: v["phase"] == "Stopped")
        deadline = time.monotonic() + 60
        while (left := read_logs(gateway, endpoint_id))["replicas"][0]["state"] == "ALIVE":
            assert time.monotonic() < deadline, left
            time.sleep(0.5)
        assert f"<b>hello</b> {endpoint_id}" in stream_lines(left, "stdout")

    def test_an_unknown_endpoint_is_404_and_bad_lines_422(self, gateway: GatewayServer) -> None:
        assert gateway.http.get("/v1/endpoints/nope-404/logs").status_code == 404
        for lines in ("0", "1001", "x"):
            answer = gateway.http.get("/v1/endpoints/nope-404/logs", params={"lines": lines})
            assert answer.status_code == 422
            assert answer.json()["error"]["fields"][0]["field"] == "lines"


class TestTailLines:
    def test_the_last_lines_within_the_last_bytes_cleaned(self, tmp_path: Path) -> None:
        path = tmp_path / "worker.out"
        path.write_text(
            ":actor_name:ServeReplica:app:replica\n"
            + "".join(f"line {i}\n" for i in range(100))
            + "tab\there \x1b[1mbold\x1b[0m bell\x07\n"
        )
        lines, truncated = tail_lines(path, max_lines=3)
        assert lines == ["line 98", "line 99", "tab\there bold bell"] and truncated
        everything, truncated = tail_lines(path, max_lines=1000)
        assert len(everything) == 101 and everything[0] == "line 0" and not truncated
        # the byte bound: the partial first line is dropped, never shown cut
        cut, truncated = tail_lines(path, max_lines=1000, max_bytes=40)
        assert cut == ["line 99", "tab\there bold bell"] and truncated

    def test_invalid_utf8_and_long_lines(self, tmp_path: Path) -> None:
        path = tmp_path / "worker.err"
        path.write_bytes(b"caf\xc3\xa9 \xff\n" + b"x" * (MAX_LINE_CHARS + 10) + b"\n")
        lines, _ = tail_lines(path, max_lines=10)
        assert lines[0] == "café \ufffd"
        assert lines[1] == "x" * MAX_LINE_CHARS + " [cut]"
        assert clean_line("\x1b]0;title\x07ok\r") == "ok"
