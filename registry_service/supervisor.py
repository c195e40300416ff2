"""The registry process, its garbage collection and the usage it reports to the platform.

One :class:`RegistrySupervisor` owns one ``registry serve`` process. A collection first has
the platform stop granting pushes (refused with a message saying why) and waits until the
push tokens granted before have expired (``REGISTRY_GC_DRAIN_SECONDS`` at most), so pushes
under way finish; then it restarts the registry read-only (``storage.maintenance.readonly``:
pulls go on, pushes are refused), runs ``registry
garbage-collect --delete-untagged``, restarts it read-write and reconciles the usage. A file
``collecting`` in the work directory marks a collection under way: a supervisor that starts
and finds it (the previous one died mid-collection) starts the registry read-write as usual
and collects again at once, so the registry always restarts clean.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from prometheus_client import CollectorRegistry, Counter, Gauge

from gridweave_runtime.secrets import without_secrets
from registry_service.config import registry_config, write_config
from registry_service.settings import RegistrySettings
from registry_service.storage import blob_bytes, usage_report

__all__ = ["CollectionError", "CollectionResult", "RegistryStartError", "RegistrySupervisor"]

_logger = logging.getLogger("gridweave.registry")
_STOP_SECONDS = 15.0
#: The longest the platform refuses pushes for one collection if the supervisor dies in it.
_MAINTENANCE_SECONDS = 3600


class RegistryStartError(RuntimeError):
    """The registry did not answer after a start (its log's tail in the message)."""


class CollectionError(RuntimeError):
    """``registry garbage-collect`` failed (its output in the message)."""


@dataclass(frozen=True)
class CollectionResult:
    """What one garbage collection did."""

    before_bytes: int
    after_bytes: int
    seconds: float

    @property
    def reclaimed_bytes(self) -> int:
        """Bytes of blobs the collection deleted."""
        return max(0, self.before_bytes - self.after_bytes)


class _Metrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        registry = registry or CollectorRegistry()
        self.collections = Counter(
            "gridweave_registry_gc_runs",
            "Garbage collections of the image registry, by outcome.",
            ["outcome"],
            registry=registry,
        )
        self.reclaimed = Counter(
            "gridweave_registry_gc_reclaimed_bytes",
            "Bytes of blobs the registry's garbage collections deleted.",
            registry=registry,
        )
        self.last_reclaimed = Gauge(
            "gridweave_registry_gc_last_reclaimed_bytes",
            "Bytes the last garbage collection deleted.",
            registry=registry,
        )
        self.read_only = Gauge(
            "gridweave_registry_read_only", "1 while the registry is read-only.", registry=registry
        )
        self.stored = Gauge(
            "gridweave_registry_stored_bytes",
            "Bytes of blobs the registry's storage holds.",
            registry=registry,
        )


def _alive(pid: int) -> bool:
    """The process exists and has not exited (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


class RegistrySupervisor:
    """Runs the registry, collects its garbage, reports its usage to the platform."""

    def __init__(
        self,
        settings: RegistrySettings,
        *,
        binary: Path,
        metrics: CollectorRegistry | None = None,
    ) -> None:
        settings.own_token()  # ValueError: unset
        self.settings = settings
        self.binary = binary
        self.work_dir = settings.state_dir / "registry"
        self.storage_dir = settings.resolved_storage_dir()
        self.config_path = self.work_dir / "config.yml"
        self.jwks_path = self.work_dir / "jwks.json"
        self.log_path = self.work_dir / "registry.log"
        self.marker_path = self.work_dir / "collecting"
        self.pid_path = self.work_dir / "registry.pid"
        self.read_only = False
        self._metrics = _Metrics(metrics)
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.RLock()  # one start, stop or collection at a time
        self._collecting = False
        self._closing = threading.Event()
        self._http_secret = secrets.token_urlsafe(32)
        self._platform = httpx.Client(
            base_url=settings.platform_url.rstrip("/"),
            headers={"Authorization": f"Bearer {settings.own_token()}"},
            timeout=30.0,
        )

    @property
    def url(self) -> str:
        """The registry's base URL (loopback when it listens on every address)."""
        host = "127.0.0.1" if self.settings.host in ("0.0.0.0", "") else self.settings.host
        return f"http://{host}:{self.settings.port}"

    @property
    def interrupted_collection(self) -> bool:
        """True when a collection was under way when the last supervisor stopped."""
        return self.marker_path.exists()

    # -- the process ---------------------------------------------------------------------------

    def start(self) -> None:
        """Fetch the platform's JWK Set, write the configuration and start the registry.

        A registry left running by a supervisor that was killed (its pid in
        ``registry.pid``, its command line naming this configuration) is stopped first.
        """
        with self._lock:
            self._stop_orphan()
            self.work_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            # garbage-collect fails on a registry that has never held an image
            for folder in ("repositories", "blobs"):
                (self.storage_dir / "docker" / "registry" / "v2" / folder).mkdir(
                    parents=True, exist_ok=True
                )
            if self.settings.auth:
                self._fetch_jwks()
            if self.interrupted_collection:
                _logger.warning("registry: a garbage collection was interrupted; it runs again")
            self._spawn(read_only=False)

    def stop(self) -> None:
        """Stop the registry (SIGTERM, then SIGKILL after a while)."""
        with self._lock:
            process, self._process = self._process, None
            if process is None or process.poll() is not None:
                return
            process.terminate()
            try:
                process.wait(timeout=_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def close(self) -> None:
        """Stop the registry and close the platform client (a collection's wait ends)."""
        self._closing.set()
        self.stop()
        self._platform.close()

    def _stop_orphan(self) -> None:
        try:
            pid = int(self.pid_path.read_text())
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            return
        if str(self.config_path).encode() not in command or b"serve" not in command:
            return  # another process has the pid now
        _logger.warning("registry: stopping the registry a previous supervisor left (%d)", pid)
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_SECONDS
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)

    def running(self) -> bool:
        """True while the registry process lives."""
        return self._process is not None and self._process.poll() is None

    def healthy(self) -> bool:
        """The registry answers its API (or is being restarted by a collection)."""
        if self._collecting:
            return True
        return self.running() and self._answers()

    def restart_if_dead(self) -> bool:
        """Start the registry again when its process died; True when it did."""
        with self._lock:
            if self._collecting or self.running():
                return False
            _logger.warning("registry: the process died; starting it again")
            self._spawn(read_only=False)
            return True

    def refresh_jwks(self) -> bool:
        """Read the platform's JWK Set again; restart the registry when it changed (a new
        signing key). True when it did."""
        if not self.settings.auth:
            return False
        response = self._platform.get("/v1/registry/jwks")
        response.raise_for_status()
        with self._lock:
            known = self.jwks_path.read_bytes() if self.jwks_path.exists() else b""
            if response.content == known:
                return False
            _logger.warning("registry: the platform's signing key changed; restarting")
            self.jwks_path.write_bytes(response.content)
            if not self._collecting:
                self._spawn(read_only=False)
            return True

    def _fetch_jwks(self) -> None:
        deadline = time.monotonic() + self.settings.start_timeout_seconds
        while True:
            try:
                response = self._platform.get("/v1/registry/jwks")
                response.raise_for_status()
                break
            except httpx.HTTPError as exc:
                if time.monotonic() > deadline:
                    raise RegistryStartError(
                        f"the platform's JWK Set ({self.settings.platform_url}"
                        f"/v1/registry/jwks) could not be read: {exc}"
                    ) from exc
                time.sleep(0.5)
        self.jwks_path.write_bytes(response.content)

    def _spawn(self, *, read_only: bool) -> None:
        self.stop()
        config = registry_config(
            self.settings,
            jwks_file=self.jwks_path,
            http_secret=self._http_secret,
            read_only=read_only,
        )
        write_config(self.config_path, config)
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [str(self.binary), "serve", str(self.config_path)],
                env=without_secrets(os.environ),  # the registry's token is in its config only
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.pid_path.write_text(f"{self._process.pid}\n")
        self.read_only = read_only
        self._metrics.read_only.set(1 if read_only else 0)
        self._wait_ready()

    def _answers(self) -> bool:
        try:
            status = httpx.get(f"{self.url}/v2/", timeout=2.0).status_code
        except httpx.HTTPError:
            return False
        return status in (200, 401)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.settings.start_timeout_seconds
        while not self._answers():
            if not self.running() or time.monotonic() > deadline:
                tail = self.log_path.read_text(errors="replace")[-2000:]
                raise RegistryStartError(f"the registry did not start on {self.url}:\n{tail}")
            time.sleep(0.05)

    # -- collection and usage ----------------------------------------------------------------

    def collect(self) -> CollectionResult:
        """Collect garbage with the registry read-only, then reconcile the usage."""
        with self._lock:
            self._collecting = True
            started = time.monotonic()
            self.marker_path.write_text(f"{time.time():.0f}\n")
            writes_expire_in = self._set_platform_read_only(True)
            try:
                self._drain(writes_expire_in)
                self._spawn(read_only=True)
                before = blob_bytes(self.storage_dir)
                self._garbage_collect()
                after = blob_bytes(self.storage_dir)
            except BaseException:
                self._metrics.collections.labels(outcome="failed").inc()
                raise
            finally:
                try:
                    self._spawn(read_only=False)
                finally:
                    self._set_platform_read_only(False)
                    self.marker_path.unlink(missing_ok=True)
                    self._collecting = False
            result = CollectionResult(before, after, time.monotonic() - started)
        self._metrics.collections.labels(outcome="ok").inc()
        self._metrics.reclaimed.inc(result.reclaimed_bytes)
        self._metrics.last_reclaimed.set(result.reclaimed_bytes)
        self._metrics.stored.set(after)
        _logger.info(
            "registry: garbage collection reclaimed %d bytes (%d -> %d) in %.1f s",
            result.reclaimed_bytes,
            before,
            after,
            result.seconds,
        )
        self.reconcile()
        return result

    def _garbage_collect(self) -> None:
        command = [str(self.binary), "garbage-collect", "--delete-untagged", str(self.config_path)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        with self.log_path.open("a") as log:
            log.write(done.stdout[-20_000:])
            log.write(done.stderr[-20_000:])
        if done.returncode != 0:
            raise CollectionError(
                f"registry garbage-collect exited {done.returncode}: {done.stderr[-2000:]}"
            )

    def _set_platform_read_only(self, read_only: bool) -> float | None:
        """Tell the platform; the seconds until its last write token expires (None: unknown)."""
        body = {"read_only": read_only, "seconds": _MAINTENANCE_SECONDS}
        try:
            response = self._platform.put("/v1/registry/maintenance", json=body)
            response.raise_for_status()
            return float(response.json()["writes_expire_in"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            # the registry's own read-only mode still guards the storage
            _logger.warning("registry: the platform could not be told read_only=%s", read_only)
            return None

    def _drain(self, writes_expire_in: float | None) -> None:
        """Wait, read-write, until no push token granted before the collection is valid
        (at most ``gc_drain_seconds``): a push under way finishes instead of meeting a
        read-only registry; a new one is refused by the platform with the reason."""
        limit = self.settings.gc_drain_seconds
        wait = limit if writes_expire_in is None else min(writes_expire_in, limit)
        if wait > 0:
            _logger.info("registry: waiting %.0f s for push tokens to expire", wait)
            if self._closing.wait(wait):
                raise CollectionError("the supervisor is stopping")

    def reconcile(self) -> int:
        """Send each namespace's usage, read from storage, to the platform; the blobs counted."""
        report = usage_report(self.storage_dir)
        self._metrics.stored.set(blob_bytes(self.storage_dir))
        response = self._platform.put(
            "/v1/registry/usage/report",
            content=report.model_dump_json().encode(),
            headers={"Content-Type": "application/json"},
        )
        response.raise_for_status()
        return len(report.blobs)

    # -- the loop ------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Until ``stop``: keep the registry up, reconcile (and read the platform's JWK Set
        again) and collect on their intervals."""
        now = time.monotonic()
        next_collection = now if self.interrupted_collection else now + self._gc_seconds()
        next_reconcile = now
        while not stop.is_set():
            now = time.monotonic()
            try:
                self.restart_if_dead()
                if now >= next_collection:
                    next_collection = now + self._gc_seconds()
                    self.collect()
                    next_reconcile = time.monotonic() + self.settings.reconcile_seconds
                elif now >= next_reconcile:
                    next_reconcile = now + self.settings.reconcile_seconds
                    self.refresh_jwks()
                    self.reconcile()
            except Exception:  # logged; the loop goes on and tries again at the next interval
                _logger.exception("registry: maintenance failed")
            stop.wait(1.0)

    def _gc_seconds(self) -> float:
        return self.settings.gc_interval_hours * 3600
