"""Where the platform is and the API key: ``configure()``, the environment, the config file.

Order: what ``gw.configure()`` set, then ``GRIDWEAVE_URL`` / ``GRIDWEAVE_API_KEY``, then the
file ``$GRIDWEAVE_CONFIG`` (default ``~/.config/gridweave/config.toml``, honouring
``XDG_CONFIG_HOME``), a TOML table written by ``gridweave login``::

    url = "http://127.0.0.1:8100"
    api_key = "gw_live_..."

Each value is looked up on its own, so the environment may set the URL and the file the key.
"""

from __future__ import annotations

import json
import os
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path

from gridweave.errors import ConfigurationError

__all__ = ["DEFAULT_URL", "Config", "config_path", "configure", "current_config", "write_config"]

#: The platform of the all-in-one on this machine, when nothing names another.
DEFAULT_URL = "http://127.0.0.1:8100"

_lock = threading.Lock()
_overrides: dict[str, str] = {}


@dataclass(frozen=True, slots=True)
class Config:
    """The platform's URL and the API key the SDK calls it with."""

    url: str
    api_key: str


def config_path() -> Path:
    """The config file: ``$GRIDWEAVE_CONFIG``, else ``$XDG_CONFIG_HOME/gridweave/config.toml``."""
    explicit = os.environ.get("GRIDWEAVE_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gridweave" / "config.toml"


def configure(*, url: str | None = None, api_key: str | None = None) -> None:
    """Use this URL and key in this process, over the environment and the file."""
    with _lock:
        if url is not None:
            _overrides["url"] = url
        if api_key is not None:
            _overrides["api_key"] = api_key


def _file_values(path: Path) -> dict[str, str]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"the config file {path} cannot be read: {exc}") from exc
    return {key: value for key, value in data.items() if isinstance(value, str)}


def current_config() -> Config:
    """The configuration in force now.

    Raises:
        ConfigurationError: no API key anywhere, or the config file is not valid TOML.
    """
    with _lock:
        overrides = dict(_overrides)
    path = config_path()
    from_file = _file_values(path)
    url = (
        overrides.get("url")
        or os.environ.get("GRIDWEAVE_URL")
        or from_file.get("url")
        or DEFAULT_URL
    )
    api_key = (
        overrides.get("api_key") or os.environ.get("GRIDWEAVE_API_KEY") or from_file.get("api_key")
    )
    if not api_key:
        raise ConfigurationError(
            "no Gridweave API key: set GRIDWEAVE_API_KEY, call gw.configure(api_key=...), "
            f"or run `gridweave login` (it writes {path})"
        )
    return Config(url=url.rstrip("/"), api_key=api_key)


def _toml_string(value: str) -> str:
    # A JSON string (control characters escaped, the rest as UTF-8) is a TOML basic string
    # once DEL, a control character to TOML but not to JSON, is escaped too.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def write_config(*, url: str, api_key: str) -> Path:
    """Write the URL and key to the config file (mode 0600, its folder 0700); its path.

    The file is replaced whole (written beside it, then renamed), so a reader never sees
    half of it, and only its owner can read the key.
    """
    path = config_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = f"url = {_toml_string(url.rstrip('/'))}\napi_key = {_toml_string(api_key)}\n"
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(partial, 0o600)  # O_CREAT's mode is only for a new file
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path
