"""Where the SDK finds the platform and the key, and the error when it cannot reach it."""

from __future__ import annotations

from pathlib import Path

import pytest

import gridweave as gw
from tests.platform_service.factories import NOWHERE


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class TestConfiguration:
    def test_no_key_anywhere_says_where_to_put_one(self, clean_configuration: Path) -> None:
        with pytest.raises(gw.ConfigurationError, match="GRIDWEAVE_API_KEY") as missing:
            gw.current_config()
        assert str(clean_configuration) in str(missing.value)

    def test_the_file_then_the_environment_then_configure(
        self, clean_configuration: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _write(clean_configuration, 'url = "http://file:8100/"\napi_key = "gw_live_file"\n')
        assert gw.current_config() == gw.Config("http://file:8100", "gw_live_file")
        monkeypatch.setenv("GRIDWEAVE_URL", "http://env:8100")
        assert gw.current_config() == gw.Config("http://env:8100", "gw_live_file")
        monkeypatch.setenv("GRIDWEAVE_API_KEY", "gw_live_env")
        gw.configure(url="http://override:8100")
        assert gw.current_config() == gw.Config("http://override:8100", "gw_live_env")
        gw.configure(api_key="gw_live_override")
        assert gw.current_config().api_key == "gw_live_override"

    def test_the_default_path_follows_xdg(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        monkeypatch.delenv("GRIDWEAVE_CONFIG")
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
        assert gw.config_path() == tmp_path / "gridweave" / "config.toml"

    def test_a_broken_file_is_named(self, clean_configuration: Path) -> None:
        _write(clean_configuration, "url = \n")
        with pytest.raises(gw.ConfigurationError, match="cannot be read"):
            gw.current_config()


def test_an_unreachable_platform_is_named() -> None:
    gw.configure(url=NOWHERE, api_key="gw_live_nobody")

    @gw.function(vram="1GB")
    def noop() -> None:
        return None

    with pytest.raises(gw.PlatformUnreachable, match=NOWHERE):
        noop.remote()
