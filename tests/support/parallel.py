"""Pytest plugin: which tests ``make pytest`` runs on pytest-xdist's workers.

``make pytest`` runs the suite in two passes: the tests marked ``alone`` in one process, as
they always ran, and the rest on ``TEST_WORKERS`` workers (``-m "not alone" -n N --dist
loadgroup``). Each worker is a pytest session of its own, with its own API server,
PostgreSQL and Ray, so tests on different workers share nothing but the host.

A worker runs a module whole (its module fixtures start once), and every module with a test
on the session's three-node Ray (``ray_world``) runs on one worker: each Ray is a dozen
processes that take their share of the CPU as long as they run, and each is slow to start.

A module is marked ``alone`` when it changes what the host holds for everyone (iptables
rules, network namespaces holding a whole test cluster, a private Docker daemon building
images: their leak checks compare the host before and after, and the egress tests flush
the sandbox's chains), or when it runs a whole platform or many Ray workers for minutes
and its deadlines assume the machine to itself.
"""

from __future__ import annotations

import pytest

__all__ = ["ALONE_MODULES", "RAY_GROUP"]

#: the group of every module with a test on the session's Ray
RAY_GROUP = "ray-world"

ALONE_MODULES = (
    "tests/allinone/",
    "tests/cli/test_maps.py",
    "tests/cluster/",
    "tests/deploy/test_compose.py",
    "tests/deploy/test_images.py",
    "tests/job_gateway/endpoints/",
    "tests/job_gateway/sandbox/test_egress.py",
    "tests/job_gateway/sandbox/test_images.py",
    "tests/job_gateway/sandbox/test_pip_envs.py",
    "tests/job_gateway/test_gateway_crash.py",
    "tests/kuberay_service/test_ray_worker_groups.py",
    "tests/sdk/test_endpoints_served.py",
    "tests/sdk/test_ray.py",
    "tests/test_readme.py",
    "tests/web/test_dashboard_browser.py",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the ``alone`` modules, and give each test a unique id: schemathesis names its
    items by operation (``test[GET /v1/x]``), but on pytest 9.2 they all get the function's
    node id, and xdist schedules by node id, so all but one operation of a module would not
    run. On an xdist worker of ``--dist loadgroup``, each id ends in its group."""
    grouped = bool(getattr(config.option, "loadgroup", False))
    on_ray = {_module(item) for item in items if "ray_world" in getattr(item, "fixturenames", ())}
    for item in items:
        if item.nodeid.startswith(ALONE_MODULES):
            item.add_marker(pytest.mark.alone)
        node_id = item.nodeid
        label = item.name.partition("[")[2]
        if label and not node_id.endswith("]"):
            node_id = f"{node_id}[{label}"
        if grouped:
            # xdist's loadgroup reads the group after the id's last "@" (where its own
            # xdist_group marks would put it, were they applied to ids on pytest 9.2)
            module = _module(item)
            node_id = f"{node_id}@{RAY_GROUP if module in on_ray else module}"
        if node_id != item.nodeid:
            item._id = type(item.id).parse(node_id)


def _module(item: pytest.Item) -> str:
    return item.nodeid.partition("::")[0]
