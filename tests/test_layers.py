"""The layer contract (import-linter, run by ``make test``): it holds, and it can fail.

Each forbidden import is added to a copy of the packages, and ``lint-imports`` must then
name the contract it breaks; the unchanged copy must pass, so a failure is the import's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
#: Benchmarks drive the test suite's real servers (tests.support); they are tools, not layers.
NOT_LAYERED = {"bench"}
SERVER_PACKAGES = (
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "alembic",
    "psycopg",
    "kubernetes",
    "pydantic_settings",
    "prometheus_client",
    "gridweave_runtime",
)


def _root_packages() -> list[str]:
    with (REPO_ROOT / "pyproject.toml").open("rb") as handle:
        packages: list[str] = tomllib.load(handle)["tool"]["importlinter"]["root_packages"]
    return packages


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH first: the packages under ``root`` are analysed, not the installed ones
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The layered packages and pyproject.toml, copied: bad imports are added there."""
    root = tmp_path_factory.mktemp("layers")
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    for package in _root_packages():
        shutil.copytree(
            REPO_ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    yield root


class TestLayerContract:
    def test_the_repository_keeps_every_contract(self) -> None:
        result = _lint_imports(REPO_ROOT)

        assert result.returncode == 0, result.stdout + result.stderr
        assert "0 broken" in result.stdout

    def test_the_unchanged_copy_keeps_every_contract(self, repo_copy: Path) -> None:
        result = _lint_imports(repo_copy)

        assert result.returncode == 0, result.stdout + result.stderr

    @pytest.mark.parametrize(
        ("module", "bad_import", "contract"),
        [
            (
                "metering_service/app.py",
                "import credit_service.app",
                "runtime and controller, then clients, then independent services",
            ),
            (
                "gridweave_runtime/migrations_env.py",
                "import credit_service.models",
                "runtime and controller, then clients, then independent services",
            ),
            (
                "gridweave_clients/base.py",
                "import job_gateway",
                "runtime and controller, then clients, then independent services",
            ),
            (
                "gridweave_controller/billing.py",
                "import gridweave_runtime.errors",
                "the controller library does not import the service runtime",
            ),
            (
                "gridweave_clients/fields.py",
                "import fastapi",
                "the clients import no server part",
            ),
            ("gridweave/_function.py", "import ray", "the SDK imports no server part"),
            ("gridweave_cli/jobs.py", "import gridweave_runtime", "the CLI imports no server"),
            (
                "gridweave_allinone/services.py",
                "import platform_service",
                "runtime and controller, then clients, then independent services",
            ),
            ("credit_service/errors.py", "import tests.support", "no package imports the tests"),
        ],
    )
    def test_a_forbidden_import_breaks_its_contract(
        self, repo_copy: Path, module: str, bad_import: str, contract: str
    ) -> None:
        path = repo_copy / module
        original = path.read_text()
        path.write_text(f"{original}\n{bad_import}  # noqa\n")
        try:
            result = _lint_imports(repo_copy)
        finally:
            path.write_text(original)

        assert result.returncode == 1, result.stdout + result.stderr
        # "BROKEN", or "BROKEN (n ignored imports)" for a contract with ignore_imports
        broken = [line for line in result.stdout.splitlines() if " BROKEN" in line]
        # one import may break more than its own contract (the clients import the controller)
        assert any(line.startswith(contract) for line in broken), result.stdout

    def test_every_top_level_package_is_a_root_package(self) -> None:
        packages = {
            path.parent.name
            for path in REPO_ROOT.glob("*/__init__.py")
            if path.parent.name not in NOT_LAYERED
        }

        assert packages == set(_root_packages())


def test_the_clients_and_the_sdk_import_without_any_server_package() -> None:
    code = (
        "import sys\n"
        "import gridweave_clients, gridweave_clients.credit, gridweave_clients.metering\n"
        "import gridweave_clients.faucet, gridweave_clients.kuberay, gridweave_clients.nodes\n"
        "import gridweave_clients.platform\n"
        "import gridweave_clients.chain\n"
        "import gridweave\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({SERVER_PACKAGES!r})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert result.stdout.strip() == "[]"
