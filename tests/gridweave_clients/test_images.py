"""Image references as a user writes them and as a job carries them (pure)."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from gridweave_clients.images import ImageName, ImageReference, PinnedImage, parse_image

DIGEST = f"sha256:{'0f' * 32}"


class TestParse:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("gridweave/python:3.11", ImageReference("gridweave/python", tag="3.11")),
            ("usr-1/tools", ImageReference("usr-1/tools")),
            ("usr-1/team/tools:v2.1_rc", ImageReference("usr-1/team/tools", tag="v2.1_rc")),
            (f"usr-1/tools@{DIGEST}", ImageReference("usr-1/tools", digest=DIGEST)),
            (f"usr-1/tools:v2@{DIGEST}", ImageReference("usr-1/tools", "v2", DIGEST)),
        ],
    )
    def test_repository_tag_and_digest(self, text: str, expected: ImageReference) -> None:
        assert parse_image(text) == expected

    def test_the_registry_is_asked_for_the_digest_else_the_tag_else_latest(self) -> None:
        assert parse_image("u/t").reference == "latest"
        assert parse_image("u/t:v2").reference == "v2"
        assert parse_image(f"u/t:v2@{DIGEST}").reference == DIGEST
        assert parse_image("u/t:v2").pinned(DIGEST) == f"u/t@{DIGEST}"
        assert str(parse_image("u/t")) == "u/t:latest"

    @pytest.mark.parametrize(
        ("text", "says"),
        [
            ("docker.io/library/python:3.11", "names a registry host (docker.io)"),
            ("localhost:30500/u/t", "e.g. u/t"),
            ("python:3.11", "<namespace>/<name>"),  # no namespace
            ("Usr/Tools", "lower case"),
            ("u/t:", "<namespace>/<name>"),
            ("u/t@sha256:abc", "<namespace>/<name>"),
            ("", "non-empty"),
            ("u/" + "t" * 400, "longer than"),
        ],
    )
    def test_what_is_not_an_image_of_the_registry_says_what_to_write(
        self, text: str, says: str
    ) -> None:
        with pytest.raises(ValueError) as caught:
            parse_image(text)
        assert says in str(caught.value)


class TestFields:
    def test_a_request_takes_a_name_and_a_job_only_a_pinned_one(self) -> None:
        TypeAdapter(ImageName).validate_python("u/t:v2")
        TypeAdapter(PinnedImage).validate_python(f"u/t@{DIGEST}")
        with pytest.raises(ValidationError):
            TypeAdapter(PinnedImage).validate_python("u/t:v2")
        with pytest.raises(ValidationError):
            TypeAdapter(ImageName).validate_python("U/t")
