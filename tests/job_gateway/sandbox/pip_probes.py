"""What a job with a pip= environment sees (pickled by value, as a user's module), a package
whose setup.py probes the network from inside its build, and wheels made here for a
find-links directory (a build that needs no index)."""

from __future__ import annotations

import base64
import hashlib
import io
import sys
import tarfile
import zipfile
from pathlib import Path


def uses_six() -> dict[str, object]:
    """six's version and where it came from, the path, and whether the environment can be
    written."""
    import six  # type: ignore[import-untyped]

    try:
        Path("/opt/gridweave/env/planted.py").write_text("x = 1\n")
        written = "ok"
    except OSError as error:
        written = type(error).__name__
    return {
        "version": six.__version__,
        "file": six.__file__,
        "path": sys.path[:4],
        "written": written,
    }


def no_environment() -> dict[str, object]:
    """What is at the environment's place, and whether six imports."""
    try:
        import six  # noqa: F401

        imported = True
    except ImportError:
        imported = False
    return {"listed": sorted(Path("/opt/gridweave/env").iterdir()), "six": imported}


#: The probe's setup.py: tries each target, reads its own uid map, and fails the build with
#: what it saw on one line, which pip prints.
SETUP = """
import json, socket
seen = {"uid_map": open("/proc/self/uid_map").read().split()}
for host, port in TARGETS:
    try:
        socket.create_connection((host, port), timeout=3).close()
        seen[f"{host}:{port}"] = "connected"
    except OSError as error:
        seen[f"{host}:{port}"] = type(error).__name__
raise SystemExit("GW-PROBE " + json.dumps(seen))
"""


def probe_sdist(directory: Path, name: str, targets: list[tuple[str, int]]) -> None:
    """An sdist ``<name>-1.0.tar.gz`` in ``directory`` whose setup.py connects to each of
    ``targets`` (the host ``gateway``: its container's end of the link)."""
    source = f"TARGETS = {targets!r}\n" + SETUP.replace(
        "for host, port in TARGETS:\n",
        "for host, port in TARGETS:\n"
        "    if host == 'gateway':\n"
        "        line = [l.split() for l in open('/proc/net/route')][1:]\n"
        "        hexa = [f[2] for f in line if f[1] == '00000000'][0]\n"
        "        host = socket.inet_ntoa(int(hexa, 16).to_bytes(4, 'little'))\n",
    )
    files = {
        "setup.py": source.encode(),
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
    }
    with tarfile.open(directory / f"{name}-1.0.tar.gz", "w:gz") as archive:
        for file, data in files.items():
            info = tarfile.TarInfo(f"{name}-1.0/{file}")
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    (directory / f"{name}-1.0.tar.gz").chmod(0o644)


def local_wheel(directory: Path, name: str, version: str, module: str) -> str:
    """A pure wheel of ``name`` ``version`` in ``directory`` whose one module (``name`` with
    ``_`` for ``-``) is the source ``module``; its requirement, ``name==version``."""
    package = name.replace("-", "_")
    info = f"{package}-{version}.dist-info"
    files = {
        f"{package}.py": module.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: gridweave-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
    }
    record = "".join(f"{path},sha256={_digest(data)},{len(data)}\n" for path, data in files.items())
    path = directory / f"{package}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for file, data in files.items():
            wheel.writestr(file, data)
        wheel.writestr(f"{info}/RECORD", f"{record}{info}/RECORD,,\n")
    path.chmod(0o644)
    return f"{name}=={version}"


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
