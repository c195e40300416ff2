"""Every transport exposes the same public functions with the same signatures."""

from __future__ import annotations

import inspect
from types import ModuleType

import pytest

from gridweave_controller import _operation, _watch_methods, crd
from gridweave_controller.operations import OPERATIONS as DECLARED
from job_gateway import crd_client
from tests import mock_crd

#: The transports compared with ``gridweave_controller.crd``: one line each.
OTHER_TRANSPORTS: list[ModuleType] = [mock_crd, crd_client]

#: Configuration, not operations: ``init_k8s_client`` takes the same parameters everywhere
#: but returns the transport's own client; ``use_client`` exists only where the typed
#: layer runs in process (it installs a ``CrdClient``).
CONFIGURATION = {"init_k8s_client", "use_client"}
OPERATIONS = sorted(set(crd.__all__) - CONFIGURATION)


def test_crd_declares_its_public_functions() -> None:
    public = {
        name
        for name, value in vars(crd).items()
        if callable(value)
        and not isinstance(value, type)
        and name[0] != "_"
        and getattr(value, "__module__", None)
        in (crd.__name__, _operation.__name__, _watch_methods.__name__)
    }
    assert public == set(crd.__all__) | CONFIGURATION
    declared = {operation.name for operation in DECLARED}
    assert set(OPERATIONS) == declared | {"watch_jobs", "watch_endpoints"}


@pytest.mark.parametrize("module", OTHER_TRANSPORTS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("name", OPERATIONS)
def test_same_signature(module: ModuleType, name: str) -> None:
    expected = inspect.signature(getattr(crd, name))
    function = getattr(module, name, None)
    assert function is not None, f"{module.__name__} lacks {name}"
    assert inspect.signature(function) == expected
    assert (function.__doc__ or "").strip(), f"{module.__name__}.{name} has no docstring"


@pytest.mark.parametrize("module", OTHER_TRANSPORTS, ids=lambda m: m.__name__)
def test_same_init_parameters(module: ModuleType) -> None:
    expected = inspect.signature(crd.init_k8s_client).parameters
    assert inspect.signature(module.init_k8s_client).parameters == expected


def test_mock_use_client_matches() -> None:
    assert inspect.signature(mock_crd.use_client) == inspect.signature(crd.use_client)


@pytest.mark.parametrize("module", OTHER_TRANSPORTS, ids=lambda m: m.__name__)
def test_a_name_that_is_no_operation_is_an_attribute_error(module: ModuleType) -> None:
    with pytest.raises(AttributeError, match="no attribute 'delete_everything'"):
        module.delete_everything  # noqa: B018 (the lookup is the test)
