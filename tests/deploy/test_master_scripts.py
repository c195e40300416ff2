"""deploy/deploy.sh, update.sh and setup-https.sh under --dry-run: every action printed,
nothing written, secrets generated and never shown, the ports from docs/architecture.md."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from tests.deploy.scripts import DEPLOY, REPO, run_script


def _documented_ports() -> list[tuple[str, str]]:
    text = (REPO / "docs" / "architecture.md").read_text()
    table = text.split("<!-- ports:begin -->")[1].split("<!-- ports:end -->")[0]
    rows = [line.split("|")[1:3] for line in table.strip().splitlines()[2:]]
    return [(machine.strip(), port.strip()) for machine, port in rows]


class TestDeploy:
    def test_a_dry_run_prints_every_step_and_writes_nothing(self, tmp_path: Path) -> None:
        env_file = tmp_path / ".env"
        done = run_script(
            "deploy.sh",
            "--dry-run",
            "--public-address",
            "203.0.113.10",
            "--env-file",
            str(env_file),
        )
        assert done.returncode == 0, done.stderr
        out = done.stdout
        for step in (
            "down --remove-orphans",  # the clean slate
            "would run: wg-quick down wg0",
            "would write /etc/wireguard/master.key (mode 600; a secret, not shown)",
            "Address = 10.88.0.1/16",
            "would run: wg-quick up wg0",
            "would run: sh -c curl -sfL https://get.k3s.io | sh -",
            "helm upgrade --install kuberay-operator kuberay/kuberay-operator --version 1.5.0",
            "helm upgrade --install nvidia-device-plugin nvdp/nvidia-device-plugin",
            "k8s-ds-amdgpu-dp.yaml",
            f"would run: kubectl apply -f {REPO}/k8s/",
            "kind: RayCluster",
            "KUBERAY_WIREGUARD_ENDPOINT=203.0.113.10:51820",
            "KUBERAY_K3S_URL=https://10.88.0.1:6443",
            "GRIDWEAVE_TOKEN_PLATFORM= <redacted>",
            "GRIDWEAVE_TOKEN_OPERATOR= <redacted>",
            "GRIDWEAVE_SERVE_KEY= <redacted>",
            '"name":"metering"',
            "POSTGRES_PASSWORD= <redacted>",
            "POSTGRES_CREDITS_PASSWORD= <redacted>",
            "POSTGRES_KUBERAY_PASSWORD= <redacted>",
            "--profile minio up -d --build",
            f"would run: {REPO}/tools/sandbox-image/build.sh",
            "publish-token --repository gridweave/python",
            "docker://10.88.0.1:30500/gridweave/python:3.11",
        ):
            assert step in out, step
        key = re.search(r"^    KUBERAY_WIREGUARD_PUBLIC_KEY=(\S+)$", out, re.MULTILINE)
        assert key is not None and len(base64.b64decode(key.group(1))) == 32
        assert not env_file.exists()
        printed = re.findall(r"^  (master|node) +(\S+) ", out, re.MULTILINE)
        assert printed == _documented_ports()
        assert ("master", "8800/tcp") in printed and ("master", "51820/udp") in printed

    def test_an_outside_s3_runs_no_minio(self, tmp_path: Path) -> None:
        env_file = tmp_path / ".env"
        text = (DEPLOY / ".env.example").read_text()
        env_file.write_text(text.replace("S3_ENDPOINT=\n", "S3_ENDPOINT=https://s3.example.com\n"))
        done = run_script(
            "deploy.sh",
            "--dry-run",
            "--public-address",
            "gpu.example.com",
            "--env-file",
            str(env_file),
        )
        assert done.returncode == 0, done.stderr
        assert "up -d --build" in done.stdout and "--profile minio" not in done.stdout
        assert env_file.read_text() == text.replace(
            "S3_ENDPOINT=\n", "S3_ENDPOINT=https://s3.example.com\n"
        )  # untouched by a dry run

    def test_the_public_address_is_required(self) -> None:
        done = run_script("deploy.sh", "--dry-run")
        assert done.returncode == 1 and "--public-address is required" in done.stderr


class TestUpdateAndHttps:
    def test_update_rebuilds_and_keeps_the_data(self, tmp_path: Path) -> None:
        env_file = tmp_path / ".env"
        env_file.write_text((DEPLOY / ".env.example").read_text())
        done = run_script("update.sh", "--dry-run", "--env-file", str(env_file))
        assert done.returncode == 0, done.stderr
        assert f"would run: git -C {REPO} pull --ff-only" in done.stdout
        assert "--profile minio build --pull" in done.stdout
        assert "--profile minio up -d --remove-orphans" in done.stdout
        assert "--volumes" not in done.stdout and "down" not in done.stdout
        # an env file from before the services' own PostgreSQL roles gets their passwords
        assert "POSTGRES_PLATFORM_PASSWORD POSTGRES_CREDITS_PASSWORD" in done.stderr
        assert f"would write {env_file} (mode 600)" in done.stdout
        assert "    POSTGRES_FAUCET_PASSWORD= <redacted>" in done.stdout
        assert env_file.read_text() == (DEPLOY / ".env.example").read_text()  # a dry run

    def test_update_keeps_the_role_passwords_there_are(self, tmp_path: Path) -> None:
        env_file = tmp_path / ".env"
        text = (DEPLOY / ".env.example").read_text()
        for name in ("PLATFORM", "CREDITS", "METERING", "FAUCET", "CHAIN", "KUBERAY"):
            text = text.replace(f"POSTGRES_{name}_PASSWORD=\n", f"POSTGRES_{name}_PASSWORD=x\n")
        env_file.write_text(text)
        done = run_script("update.sh", "--dry-run", "--env-file", str(env_file))
        assert done.returncode == 0, done.stderr
        assert "generated into" not in done.stderr and "would write" not in done.stdout

    def test_https_writes_the_domain_and_starts_traefik(self, tmp_path: Path) -> None:
        env_file = tmp_path / ".env"
        env_file.write_text((DEPLOY / ".env.example").read_text())
        done = run_script(
            "setup-https.sh",
            "--dry-run",
            "--domain",
            "gpu.example.com",
            "--email",
            "ops@example.com",
            "--env-file",
            str(env_file),
        )
        assert done.returncode == 0, done.stderr
        assert "    HTTPS_DOMAIN=gpu.example.com" in done.stdout
        assert "docker/deploy/https.yml up -d traefik" in done.stdout
        assert "GRIDWEAVE_PUBLIC_URL=https://gpu.example.com" in done.stdout
        bad = run_script(
            "setup-https.sh",
            "--dry-run",
            "--domain",
            "not a host",
            "--email",
            "x@y.z",
            "--env-file",
            str(env_file),
        )
        assert bad.returncode == 1 and "--domain: not a host is not a host name" in bad.stderr
