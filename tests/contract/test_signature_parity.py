"""Every transport exposes the same public functions with the same signatures."""

from __future__ import annotations

import inspect
from types import ModuleType

import pytest

from gridweave_controller import crd
from tests import mock_crd

#: The transports compared with ``gridweave_controller.crd``; add ``job_gateway.crd_client``
#: here once it exists.
OTHER_TRANSPORTS: list[ModuleType] = [mock_crd]


def test_crd_declares_its_public_functions() -> None:
    public = {
        name
        for name, value in vars(crd).items()
        if inspect.isfunction(value) and value.__module__ == crd.__name__ and name[0] != "_"
    }
    assert public == set(crd.__all__)


@pytest.mark.parametrize("module", OTHER_TRANSPORTS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("name", sorted(crd.__all__))
def test_same_signature(module: ModuleType, name: str) -> None:
    expected = inspect.signature(getattr(crd, name))
    function = getattr(module, name, None)
    assert function is not None, f"{module.__name__} lacks {name}"
    assert inspect.signature(function) == expected
    assert (function.__doc__ or "").strip(), f"{module.__name__}.{name} has no docstring"
