"""docker/deploy/docker-compose.yml, loaded by the loader ``docker compose config`` uses
(compose-go, pinned in tools/compose-check): it parses against the Compose Specification,
MinIO is left out when S3_ENDPOINT is set, and every variable is in deploy/.env.example."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gridweave_runtime.service_roster import SERVICE_ROLES, credentials_document
from tests.support.unavailable import fail_or_skip

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker" / "deploy" / "docker-compose.yml"
HTTPS = REPO / "docker" / "deploy" / "https.yml"
ENV_EXAMPLE = REPO / "deploy" / ".env.example"
SECRETS = {
    **{f"GRIDWEAVE_TOKEN_{name.upper()}": f"{name}-t0ken" for name in SERVICE_ROLES},
    "GRIDWEAVE_CREDENTIALS": credentials_document({"platform": "platform-t0ken"}),
    "GRIDWEAVE_SERVE_KEY": "serve-secret",
    "POSTGRES_PASSWORD": "pg-secret",
    "S3_SECRET_KEY": "s3-secret",
    "KUBERAY_WIREGUARD_ENDPOINT": "203.0.113.10:51820",
    "KUBERAY_WIREGUARD_PUBLIC_KEY": "bW1tbW1tbW1tbW1tbW1tbW1tbW1tbW1tbW1tbW1tbW0=",
    "KUBERAY_K3S_TOKEN": "k3s-token",
    **{
        f"POSTGRES_{database.upper()}_PASSWORD": f"{database}-secret"
        for database in ("platform", "credits", "metering", "faucet", "chain", "kuberay")
    },
}


@pytest.fixture(scope="module")
def compose_check() -> Path:
    try:
        done = subprocess.run(
            ["bash", str(REPO / "tools" / "compose-check" / "build.sh")],
            capture_output=True,
            text=True,
            timeout=900,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        fail_or_skip("compose-check (compose-go)", exc)
    return Path(done.stdout.strip())


def _env_file(tmp_path: Path, **values: str) -> Path:
    lines = []
    for line in ENV_EXAMPLE.read_text().splitlines():
        name = line.split("=", 1)[0]
        lines.append(f"{name}={values[name]}" if name in values and "=" in line else line)
    path = tmp_path / ".env"
    path.write_text("\n".join(lines) + "\n")
    return path


def _load(
    binary: Path, env_file: Path, *profiles: str, files: tuple[Path, ...] = (COMPOSE,)
) -> subprocess.CompletedProcess[str]:
    args = [str(binary), "-env-file", str(env_file)]
    for profile in profiles:
        args += ["-profile", profile]
    # no variable of this process leaks in: the env file is the whole configuration
    return subprocess.run(
        [*args, *map(str, files)], capture_output=True, text=True, timeout=60, env={}, check=False
    )


def _services(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    services: dict[str, Any] = yaml.safe_load(done.stdout)["services"]
    return services


class TestCompose:
    def test_every_service_with_minio_when_no_s3_endpoint(
        self, compose_check: Path, tmp_path: Path
    ) -> None:
        services = _services(_load(compose_check, _env_file(tmp_path, **SECRETS), "minio"))
        assert set(services) == {
            "postgres",
            "postgres-roles",
            "minio",
            "platform",
            "gateway",
            "metering",
            "metering-deliverer",
            "credit",
            "faucet",
            "chain",
            "kuberay",
            "registry",
        }
        assert services["platform"]["environment"]["S3_ENDPOINT"] == "http://minio:9000"
        # each service its own token, none the operator's; the Serve key's secret only where
        # replicas are called
        tokens = {
            name: service.get("environment", {}).get("GRIDWEAVE_SERVICE_TOKEN")
            for name, service in services.items()
        }
        assert tokens["metering-deliverer"] == tokens["metering"] == "metering-t0ken"
        assert tokens["credit"] == "credit-t0ken" and tokens["gateway"] == "gateway-t0ken"
        assert "operator-t0ken" not in tokens.values()
        keyed = {
            n for n, s in services.items() if "GRIDWEAVE_SERVE_KEY" in s.get("environment", {})
        }
        assert keyed == {"platform", "gateway"}
        published = {
            name: sorted(int(port["published"]) for port in service.get("ports", []))
            for name, service in services.items()
        }
        assert published["platform"] == [8100] and published["registry"] == [30500]
        kuberay = services["kuberay"]
        assert kuberay["network_mode"] == "host" and kuberay["cap_add"] == ["NET_ADMIN"]
        assert kuberay["environment"]["KUBERAY_DATABASE_URL"] == (
            "postgresql+psycopg://gw_kuberay:kuberay-secret@127.0.0.1:5432/kuberay"
        )
        deliverer = services["metering-deliverer"]
        assert deliverer["command"] == ["gridweave-metering-deliverer"]
        assert deliverer["environment"]["CHAIN_SERVICE_URL"] == "http://chain:8600"
        assert deliverer["environment"]["METERING_DATABASE_URL"].endswith("@postgres:5432/metering")

    def test_each_service_logs_in_as_its_own_role_never_the_superuser(
        self, compose_check: Path, tmp_path: Path
    ) -> None:
        services = _services(_load(compose_check, _env_file(tmp_path, **SECRETS), "minio"))
        for name, prefix, database in (
            ("platform", "PLATFORM_", "platform"),
            ("credit", "CREDITS_", "credits"),
            ("metering", "METERING_", "metering"),
            ("metering-deliverer", "METERING_", "metering"),
            ("faucet", "FAUCET_", "faucet"),
            ("chain", "CHAIN_", "chain"),
        ):
            url = services[name]["environment"][f"{prefix}DATABASE_URL"]
            assert url == (
                f"postgresql+psycopg://gw_{database}:{database}-secret@postgres:5432/{database}"
            ), name
        for name, service in services.items():
            if name not in ("postgres", "postgres-roles"):
                assert "pg-secret" not in str(service.get("environment", {})), name
        # the roles are made before any service starts, by the one place that holds the
        # superuser's password
        roles = services["postgres-roles"]
        assert roles["environment"]["PGPASSWORD"] == "pg-secret"
        assert roles["command"][-1] == "/gridweave/postgres-roles.sql"
        mounted = {volume["target"] for volume in roles["volumes"]}
        assert mounted == {"/gridweave/postgres-roles.sql", "/gridweave/postgres-role.sql"}
        assert roles["restart"] == "no"
        for name in ("platform", "gateway", "metering", "credit", "faucet", "chain", "kuberay"):
            waits_for = services[name]["depends_on"]["postgres-roles"]["condition"]
            assert waits_for == "service_completed_successfully", name

    def test_the_registry_is_registry_service_with_the_platforms_tokens(
        self, compose_check: Path, tmp_path: Path
    ) -> None:
        services = _services(_load(compose_check, _env_file(tmp_path, **SECRETS)))
        registry = services["registry"]
        assert registry["command"] == ["python", "-m", "registry_service"]
        environment = registry["environment"]
        assert environment["PLATFORM_URL"] == "http://platform:8100"
        assert environment["REGISTRY_TOKEN_REALM"] == "http://10.88.0.1:8100/v1/registry/token"
        assert environment["REGISTRY_STORAGE_DIR"] == "/var/lib/registry"  # registry:3's
        assert [port["target"] for port in registry["ports"]] == [30500]
        assert services["platform"]["environment"]["REGISTRY_QUOTA_GB"] == "200"
        assert any(v["target"] == "/var/lib/gridweave" for v in services["platform"]["volumes"])

    def test_an_outside_s3_leaves_minio_out(self, compose_check: Path, tmp_path: Path) -> None:
        env = _env_file(tmp_path, **SECRETS, S3_ENDPOINT="https://s3.example.com")
        services = _services(_load(compose_check, env))
        assert "minio" not in services
        assert services["gateway"]["environment"]["S3_ENDPOINT"] == "https://s3.example.com"

    def test_a_missing_secret_is_named(self, compose_check: Path, tmp_path: Path) -> None:
        for secret in ("POSTGRES_PASSWORD", "POSTGRES_CREDITS_PASSWORD"):
            missing = {k: v for k, v in SECRETS.items() if k != secret}
            done = _load(compose_check, _env_file(tmp_path, **missing))
            assert done.returncode == 1 and secret in done.stderr, secret

    def test_a_broken_file_is_refused(self, compose_check: Path, tmp_path: Path) -> None:
        broken = tmp_path / "docker-compose.yml"
        broken.write_text(
            COMPOSE.read_text().replace("    restart: unless-stopped\n", "    restart: 3\n", 1)
        )
        done = _load(compose_check, _env_file(tmp_path, **SECRETS), files=(broken,))
        assert done.returncode == 1 and "restart" in done.stderr

    def test_the_https_overlay_adds_traefik_in_front_of_the_api(
        self, compose_check: Path, tmp_path: Path
    ) -> None:
        env = _env_file(tmp_path, **SECRETS, HTTPS_DOMAIN="gpu.example.com", ACME_EMAIL="a@b.c")
        done = _load(compose_check, env, files=(COMPOSE, HTTPS))
        assert done.returncode == 0, done.stderr
        project = yaml.safe_load(done.stdout)
        traefik = project["services"]["traefik"]
        assert sorted(int(p["published"]) for p in traefik["ports"]) == [80, 443]
        assert "--certificatesresolvers.letsencrypt.acme.email=a@b.c" in traefik["command"]
        assert "Host(`gpu.example.com`)" in project["configs"]["traefik-dynamic"]["content"]
        without = _load(compose_check, _env_file(tmp_path, **SECRETS), files=(COMPOSE, HTTPS))
        assert without.returncode == 1
        assert "ACME_EMAIL" in without.stderr or "HTTPS_DOMAIN" in without.stderr

    def test_every_variable_is_documented(self) -> None:
        used = set(re.findall(r"\$\{([A-Z0-9_]+)", COMPOSE.read_text() + HTTPS.read_text()))
        documented = set(re.findall(r"^([A-Z0-9_]+)=", ENV_EXAMPLE.read_text(), re.MULTILINE))
        assert used <= documented, sorted(used - documented)
        for name in (
            "REGISTRY_QUOTA_GB",
            "REGISTRY_GC_INTERVAL_HOURS",
            "S3_ENDPOINT",
            "S3_ACCESS_KEY",
            "S3_SECRET_KEY",
            "CHAIN_ENABLED",
            "KUBERAY_NAMESPACE",
        ):
            assert name in documented, name
