"""The images' build context (the repository root, .dockerignore applied as Docker applies
it): what the Dockerfiles COPY is in it, and nothing else of size: no virtualenv,
node_modules, caches, .git, state directories or test results."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.dockerignore import context_files

REPO = Path(__file__).resolve().parents[2]
DOCKERFILES = (REPO / "docker" / "Dockerfile", REPO / "docker" / "ray-worker" / "Dockerfile")
#: the context is source only; a few MB at most
CONTEXT_LIMIT_BYTES = 8 * 1024 * 1024


def _copied_sources(dockerfile: Path) -> list[str]:
    sources = []
    for line in dockerfile.read_text().splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from=") for w in words):
            sources += words[1:-1]
    return sources


def _base_image_default(dockerfile: Path) -> str:
    found = re.search(r"^ARG BASE_IMAGE=(\S+)$", dockerfile.read_text(), re.MULTILINE)
    assert found, f"{dockerfile} declares no ARG BASE_IMAGE with a default"
    return found.group(1)


class TestBuildContext:
    def test_the_context_is_small_and_carries_no_local_state(self) -> None:
        files = [path.relative_to(REPO).as_posix() for path in context_files(REPO)]
        size = sum((REPO / name).stat().st_size for name in files)
        assert size < CONTEXT_LIMIT_BYTES, f"the build context is {size} bytes"
        unwanted = re.compile(
            r"(^|/)(\.venv|\.git|node_modules|__pycache__|\.mypy_cache|\.ruff_cache"
            r"|\.pytest_cache|\.hypothesis|\.gridweave|test-results|dist)(/|$)|\.egg-info/"
            r"|^(tests|docs|bench|web|deploy)/"
        )
        assert [name for name in files if unwanted.search(name)] == []

    def test_every_copied_source_is_in_the_context(self) -> None:
        files = {path.relative_to(REPO).as_posix() for path in context_files(REPO)}
        for dockerfile in DOCKERFILES:
            for source in _copied_sources(dockerfile):
                assert source in files or any(name.startswith(f"{source}/") for name in files), (
                    f"{dockerfile.name} copies {source}, which .dockerignore leaves out"
                )

    def test_both_images_build_from_the_same_python(self) -> None:
        # Ray refuses a worker whose Python differs from the head's by a patch level
        defaults = {_base_image_default(dockerfile) for dockerfile in DOCKERFILES}
        assert len(defaults) == 1, defaults
        assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", defaults.pop())
