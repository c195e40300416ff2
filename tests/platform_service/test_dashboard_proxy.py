"""The dashboard's server (gridweave_allinone.dashboard) in front of the real platform: the
built files, the same-origin /v1 proxy carrying the session cookie and the CSRF header, and
the admins' diagnostics."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gridweave_allinone.dashboard import DashboardSettings, create_dashboard_app
from tests.platform_service.factories import PlatformServer
from tests.support.http_server import serve_in_thread

pytestmark = pytest.mark.postgres

INDEX = "<!doctype html><title>Gridweave</title><div id=root></div>"


@pytest.fixture(scope="module")
def platform(faucet_platform: PlatformServer) -> PlatformServer:
    """The platform calling the faucet and credit_service."""
    return faucet_platform


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A built dashboard: index.html and one hashed asset; a secret beside it."""
    root = tmp_path_factory.mktemp("web")
    (root / "dist" / "assets").mkdir(parents=True)
    (root / "dist" / "index.html").write_text(INDEX)
    (root / "dist" / "assets" / "index-abc123.js").write_text("console.log(1)")
    # the build's precompressed copies (told apart from the file by their content)
    (root / "dist" / "assets" / "index-abc123.js.gz").write_bytes(gzip.compress(b"gz copy"))
    (root / "dist" / "assets" / "index-abc123.js.br").write_bytes(b"br copy")
    (root / "dist" / "index.html.gz").write_bytes(gzip.compress(INDEX.encode()))
    (root / "secret.txt").write_text("not served")
    return root / "dist"


@pytest.fixture(scope="module")
def dashboard(platform: PlatformServer, dist: Path, faucet: httpx.Client) -> Iterator[str]:
    """The dashboard on a real port, proxying to the platform."""
    settings = DashboardSettings(
        platform_url=platform.url, dist_dir=dist, service_urls={"faucet": str(faucet.base_url)}
    )
    with serve_in_thread(create_dashboard_app(settings)) as url:
        yield url


@pytest.fixture
def browser(dashboard: str) -> Iterator[httpx.Client]:
    """A client with its own cookie jar, talking only to the dashboard's origin."""
    with httpx.Client(base_url=dashboard, timeout=30) as client:
        yield client


class TestFiles:
    def test_the_app_and_its_routes_are_index_html(self, browser: httpx.Client) -> None:
        for path in ("/", "/jobs", "/jobs/job-123", "/admin/nodes"):
            page = browser.get(path)
            assert page.status_code == 200 and page.text == INDEX, path
            assert page.headers["cache-control"] == "no-cache"

    def test_hashed_assets_are_cached_and_nothing_outside_is_served(
        self, browser: httpx.Client
    ) -> None:
        asset = browser.get("/assets/index-abc123.js", headers={"Accept-Encoding": "identity"})
        assert asset.text == "console.log(1)" and "immutable" in asset.headers["cache-control"]
        for escape in ("/../secret.txt", "/assets/../../secret.txt", "/%2e%2e/secret.txt"):
            assert "not served" not in browser.get(escape).text, escape

    def test_a_precompressed_copy_is_sent_when_the_browser_takes_it(
        self, browser: httpx.Client
    ) -> None:
        def raw(path: str, accept: str) -> tuple[bytes, httpx.Headers]:
            with browser.stream("GET", path, headers={"Accept-Encoding": accept}) as answer:
                assert answer.status_code == 200, (path, accept)
                return b"".join(answer.iter_raw()), answer.headers

        body, headers = raw("/assets/index-abc123.js", "gzip, deflate, br, zstd")
        assert body == b"br copy" and headers["content-encoding"] == "br"
        assert headers["content-type"].startswith("text/javascript")
        assert "immutable" in headers["cache-control"] and headers["vary"] == "Accept-Encoding"
        body, headers = raw("/assets/index-abc123.js", "gzip, br;q=0")
        assert gzip.decompress(body) == b"gz copy" and headers["content-encoding"] == "gzip"
        body, headers = raw("/assets/index-abc123.js", "identity")
        assert body == b"console.log(1)" and "content-encoding" not in headers
        body, headers = raw("/jobs", "br, gzip")  # index.html has no brotli copy here
        assert gzip.decompress(body).decode() == INDEX and headers["content-encoding"] == "gzip"
        assert headers["cache-control"] == "no-cache"

    def test_without_a_build_it_says_how_to_make_one(
        self, platform: PlatformServer, tmp_path: Path
    ) -> None:
        settings = DashboardSettings(platform_url=platform.url, dist_dir=tmp_path / "none")
        with serve_in_thread(create_dashboard_app(settings)) as url:
            page = httpx.get(url)
        assert page.status_code == 503 and "make web" in page.text


class TestProxy:
    def test_sign_in_through_the_proxy_and_the_cookie_travels(
        self, platform: PlatformServer, browser: httpx.Client
    ) -> None:
        user = platform.new_user()
        signed = browser.post("/v1/sessions", json={"api_key": user.key})
        assert signed.status_code == 201, signed.text
        assert all("secure" not in h.lower() for h in signed.headers.get_list("set-cookie"))
        assert browser.get("/v1/me").json()["user_id"] == user.user_id
        token = signed.json()["csrf_token"]
        assert browser.post("/v1/keys", json={"name": "x"}).status_code == 403
        made = browser.post("/v1/keys", json={"name": "x"}, headers={"X-CSRF-Token": token})
        assert made.status_code == 201
        filtered = browser.get("/v1/jobs", params={"limit": 0})
        assert filtered.status_code == 422  # the query string travels too
        assert "limit" in filtered.text

    def test_behind_a_tls_terminator_the_cookies_are_secure(
        self, platform: PlatformServer, dashboard: str
    ) -> None:
        # the dashboard says how it was reached: over HTTPS at the proxy in front of it
        signed = httpx.post(
            f"{dashboard}/v1/sessions",
            json={"api_key": platform.new_user().key},
            headers={"X-Forwarded-Proto": "https"},
        )
        assert signed.status_code == 201
        assert all("; secure" in h.lower() for h in signed.headers.get_list("set-cookie"))

    def test_without_a_session_the_api_is_401(self, browser: httpx.Client) -> None:
        assert browser.get("/v1/me").status_code == 401

    def test_a_platform_that_does_not_answer_is_503(self, dist: Path) -> None:
        settings = DashboardSettings(platform_url="http://127.0.0.1:9", dist_dir=dist)
        with serve_in_thread(create_dashboard_app(settings)) as url:
            answer = httpx.get(f"{url}/v1/me")
        assert answer.status_code == 503
        assert answer.json()["error"]["code"] == "service_unavailable"


class TestDiagnostics:
    def test_admins_see_each_services_health_and_metrics(
        self, platform: PlatformServer, browser: httpx.Client
    ) -> None:
        assert browser.get("/-/diagnostics").status_code == 401
        browser.post("/v1/sessions", json={"api_key": platform.new_user().key})
        assert browser.get("/-/diagnostics").status_code == 403
        browser.post("/v1/sessions", json={"api_key": platform.admin.key})
        services = {s["name"]: s for s in browser.get("/-/diagnostics").json()["services"]}
        assert set(services) == {"platform", "faucet"}
        assert services["platform"]["healthy"] and services["faucet"]["healthy"]
        assert "# TYPE" in services["platform"]["metrics"]
