"""Where the local Ray head keeps its temporary directory: short enough for Ray's sockets."""

from __future__ import annotations

from pathlib import Path

from gridweave_runtime.local_ray import ray_temp_dir

#: The longest socket path Ray makes under its temporary directory (a 7-digit pid).
_SOCKET = "/session_2026-12-06_00-47-05_135564_4194304/sockets/plasma_store"
_AF_UNIX_MAX = 107


def _state_dir(ray_dir_chars: int) -> Path:
    """A state directory whose ``ray`` subdirectory is ``ray_dir_chars`` long."""
    name = "x" * (ray_dir_chars - len("/tmp/") - len("/ray"))
    return Path("/tmp") / name


def test_every_socket_path_fits_whatever_the_state_directory() -> None:
    for chars in range(10, 120):
        temp_dir = ray_temp_dir(_state_dir(chars))
        assert len(str(temp_dir) + _SOCKET) <= _AF_UNIX_MAX, chars


def test_a_short_state_directory_keeps_ray_inside_it() -> None:
    state = _state_dir(43)
    assert ray_temp_dir(state) == state / "ray"


def test_a_longer_one_gets_a_short_path_of_its_own() -> None:
    first, second = ray_temp_dir(_state_dir(44)), ray_temp_dir(_state_dir(45))
    assert first.parent == Path("/tmp") and first.name.startswith("gridweave-ray-")
    assert first != second
