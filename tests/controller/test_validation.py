"""Names, labels and user ids are checked before any request."""

from __future__ import annotations

import re

import pytest

from gridweave_controller import Invalid, user_label_value
from gridweave_controller.validation import check_gpu_indices, check_labels, check_name

LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@pytest.mark.parametrize("name", ["a", "job-1", "0abc", "a" * 63])
def test_dns1123_names_pass(name: str) -> None:
    assert check_name(name, field="job_id") == name


@pytest.mark.parametrize("name", ["", "A", "job_1", "-a", "a-", "a.b", "a" * 64, "é"])
def test_other_names_are_refused_naming_the_field(name: str) -> None:
    with pytest.raises(Invalid) as caught:
        check_name(name, field="endpoint_id")
    assert caught.value.field == "endpoint_id"
    assert "endpoint_id" in str(caught.value)


class TestLabels:
    def test_valid_labels_are_copied(self) -> None:
        labels = {"team": "ml", "gridweave.io/tier": "gold", "empty": ""}
        assert check_labels(labels) == labels
        assert check_labels(None) == {}

    def test_too_long_value_names_the_label(self) -> None:
        with pytest.raises(Invalid) as caught:
            check_labels({"team": "x" * 64})
        assert caught.value.field == "labels[team]"
        assert "64 characters" in str(caught.value)

    @pytest.mark.parametrize("value", ["a b", "-a", "a-", "a/b", "ü", "gold\n"])
    def test_bad_characters_name_the_label(self, value: str) -> None:
        with pytest.raises(Invalid) as caught:
            check_labels({"team": value})
        assert caught.value.field == "labels[team]"

    @pytest.mark.parametrize("key", ["", "bad key", "UPPER.example/x", "a/" + "b" * 64, "-x"])
    def test_bad_keys(self, key: str) -> None:
        with pytest.raises(Invalid):
            check_labels({key: "v"})


class TestUserLabelValue:
    @pytest.mark.parametrize("user_id", ["alice", "u-123", "A.B_c", "x" * 63])
    def test_valid_label_values_are_kept(self, user_id: str) -> None:
        assert user_label_value(user_id) == user_id

    @pytest.mark.parametrize(
        "user_id",
        [
            "alice@example.com",
            "Bob Smith",
            "x" * 64,
            "",
            "@@@",
            "ü-user",
            "-lead",
            "trail.",
            "alice\n",
        ],
    )
    def test_others_become_valid_stable_values(self, user_id: str) -> None:
        value = user_label_value(user_id)
        assert LABEL_VALUE.fullmatch(value) and 0 < len(value) <= 63
        assert value == user_label_value(user_id)

    def test_distinct_ids_stay_distinct(self) -> None:
        ids = ["alice@example.com", "alice@example.org", "alice example.com", "x" * 64, "x" * 65]
        assert len({user_label_value(i) for i in ids}) == len(ids)

    def test_sanitized_value_stays_readable(self) -> None:
        assert user_label_value("alice@example.com").startswith("alice-example.com-")


def test_gpu_indices() -> None:
    assert check_gpu_indices((0, 3)) == [0, 3]
    bad_lists: list[list[int]] = [[-1], [0, 0], [True]]
    for bad in bad_lists:
        with pytest.raises(Invalid) as caught:
            check_gpu_indices(bad)
        assert caught.value.field == "gpu_indices"
