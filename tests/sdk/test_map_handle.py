"""A map's handle shows its progress (done of all, and the failed) as last read."""

from __future__ import annotations

import gridweave as gw
from gridweave_clients.platform.maps import MapResponse


def _status(**changes: object) -> MapResponse:
    status = MapResponse(
        map_id="map-0123456789abcdef0123",
        function_name="square",
        phase="Running",
        finished=False,
        items=100,
        chunks=10,
        chunk_items=10,
        done=40,
        failed=2,
        workers=[],
        created_at=None,
    )
    return status.model_copy(update=changes)


class TestMapHandle:
    def test_repr_and_progress_show_done_of_all_as_last_read(self) -> None:
        handle: gw.MapHandle[int] = gw.MapHandle(_status(), gw.Config("http://127.0.0.1:9", "k"))
        assert handle.progress == "40/100 (2 failed)"
        assert repr(handle) == "<MapHandle map-0123456789abcdef0123 Running 40/100 (2 failed)>"

    def test_no_failed_input_shows_done_of_all_alone(self) -> None:
        assert _status(done=100, failed=0, phase="Completed").progress == "100/100"
