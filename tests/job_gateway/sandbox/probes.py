"""What a hostile job tries from inside its container (pickled by value, as a user's module)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path


def own_view() -> dict[str, object]:
    """Who and where the job is: uid, processes, mounts, environment, network interfaces."""
    return {
        "uid_map": Path("/proc/self/uid_map").read_text().split(),
        "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "environ": dict(os.environ),
        "interfaces": [name for _, name in socket.if_nameindex()],
        "hostname": socket.gethostname(),
        "cwd": os.getcwd(),
    }


def read_paths(paths: list[str]) -> dict[str, str]:
    """What reading each path gave: its first bytes, or the error."""
    seen = {}
    for path in paths:
        try:
            with open(path, "rb") as handle:
                seen[path] = "read:" + handle.read(64).decode(errors="replace")
        except OSError as error:
            seen[path] = type(error).__name__
    return seen


def other_environments() -> list[str]:
    """Every /proc/<pid>/environ the job can read that is not its own."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        if int(pid) == os.getpid():
            continue
        try:
            found.append(Path(f"/proc/{pid}/environ").read_text(errors="replace"))
        except OSError:
            continue
    return found


def connect_all(ports: list[int]) -> dict[int, str]:
    """Try every port on the loopback and on the host's addresses given; what each gave."""
    seen = {}
    for port in ports:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                seen[port] = "connected"
        except OSError as error:
            seen[port] = type(error).__name__
    return seen


def connect_unix(path: str) -> str:
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(path)
            return "connected"
    except OSError as error:
        return type(error).__name__


def write_paths(paths: list[str]) -> dict[str, str]:
    """Try to create a file at each path: ok, or the error."""
    seen = {}
    for path in paths:
        try:
            Path(path).write_text("x")
            seen[path] = "ok"
        except OSError as error:
            seen[path] = type(error).__name__
    return seen


def leave_behind(marker: str) -> bool:
    """Start a session-leader sleep meant to outlive the function; whether it runs when
    the function returns."""
    process = subprocess.Popen(
        ["setsid", sys.executable, "-c", "import time; time.sleep(600)", marker],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import time

    time.sleep(0.2)
    return process.poll() is None


def fork_bomb(limit: int) -> dict[str, object]:
    """Fork until refused (children sleep); how many started, and how it was refused."""
    started = 0
    refused = ""
    for _ in range(limit):
        try:
            pid = os.fork()
        except OSError as error:
            refused = type(error).__name__
            break
        if pid == 0:
            import time

            time.sleep(30)
            os._exit(0)
        started += 1
    return {"started": started, "refused": refused}


def allocate(megabytes: int) -> int:
    """Hold ``megabytes`` of touched memory."""
    held = []
    for _ in range(megabytes):
        held.append(bytearray(1024 * 1024))
    return len(held)


def devices() -> dict[str, object]:
    """The device nodes the job sees, and its GPU variables."""
    names: list[str] = []
    for root, _dirs, files in os.walk("/dev"):
        names.extend(os.path.join(root, name) for name in files)
    return {
        "devices": sorted(names),
        "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "hip": os.environ.get("HIP_VISIBLE_DEVICES"),
    }


def driver_view() -> dict[str, object]:
    """What the job sees of the NVIDIA driver: the files at /opt/gridweave/driver, what
    libcuda.so.1 holds, the library path, and what nvidia-smi (found on PATH) says."""
    import shutil
    import subprocess

    directory = Path("/opt/gridweave/driver")
    smi = shutil.which("nvidia-smi")
    return {
        "files": sorted(path.name for path in directory.iterdir()),
        "libcuda": (directory / "libcuda.so.1").read_text()
        if (directory / "libcuda.so.1").exists()
        else None,
        "library_path": os.environ.get("LD_LIBRARY_PATH"),
        "smi": subprocess.run([smi], capture_output=True, text=True).stdout if smi else None,
    }


def write_scratch_and_wait(secret: str, ready: str, seconds: float) -> str:
    """Write a secret in scratch, say so on stdout, and stay a while."""
    import time

    Path("/scratch/secret.txt").write_text(secret)
    print(ready, flush=True)
    time.sleep(seconds)
    return Path("/scratch/secret.txt").read_text()


def look_for_secret(secret: str) -> list[str]:
    """Search every file under /scratch and /tmp, and every visible process's root's
    scratch, for ``secret``."""
    candidates: list[str] = []
    for top in ("/scratch", "/tmp"):
        for root, _dirs, files in os.walk(top):
            candidates.extend(os.path.join(root, name) for name in files)
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    candidates.extend(f"/proc/{pid}/root/scratch/secret.txt" for pid in pids)
    hits = []
    for path in candidates:
        try:
            with open(path, "rb") as handle:
                if secret.encode() in handle.read(1 << 16):
                    hits.append(path)
        except OSError:
            continue
    return hits


def scratch_then_pid(name: str) -> dict[str, object]:
    """What scratch held when the attempt began, then leave a file there; the container's
    hostname (its name)."""
    before = sorted(os.listdir("/scratch")) + sorted(os.listdir("/tmp"))
    Path("/scratch", name).write_text("x")
    Path("/tmp", name).write_text("x")
    return {"before": before, "hostname": socket.gethostname()}


def run_plain_then_leave(host_file: str) -> bool:
    """Unsandboxed: whether a file of the host is there (the runner must never empty it)."""
    return Path(host_file).exists()


def connect_to(targets: list[list[object]], timeout: float = 3.0) -> dict[str, str]:
    """Open a TCP connection to each ``[host, port]`` (the host ``gateway``: the node's end
    of the container's link): ``connected``, or the error's type and errno."""
    seen = {}
    for host, port in targets:
        address = _gateway() if host == "gateway" else str(host)
        try:
            with socket.create_connection((address, int(str(port))), timeout=timeout):
                seen[f"{host}:{port}"] = "connected"
        except OSError as error:
            seen[f"{host}:{port}"] = f"{type(error).__name__}:{error.errno}"
    return seen


def resolve(names: list[str]) -> dict[str, list[str]]:
    """The IPv4 addresses each name resolves to (empty when it does not)."""
    found: dict[str, list[str]] = {}
    for name in names:
        try:
            infos = socket.getaddrinfo(name, 443, socket.AF_INET, socket.SOCK_STREAM)
            found[name] = sorted({str(info[4][0]) for info in infos})
        except OSError:
            found[name] = []
    return found


def change_network() -> dict[str, str]:
    """Try to change the container's network: a route, its address, its link's state, as
    it is and again in a user namespace of its own; what each gave."""
    import ctypes
    import fcntl
    import struct

    def attempt(what: str, request: int, payload: bytes) -> str:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                fcntl.ioctl(sock.fileno(), request, payload)
            return "changed"
        except OSError as error:
            return type(error).__name__

    def sockaddr(address: str) -> bytes:
        return struct.pack("HH4s8x", socket.AF_INET, 0, socket.inet_aton(address))

    # struct rtentry: rt_pad1, rt_dst, rt_gateway, rt_genmask, rt_flags (RTF_UP|RTF_GATEWAY)
    route = (
        struct.pack("L", 0)
        + sockaddr("203.0.113.0")
        + sockaddr("10.0.0.1")
        + sockaddr("255.255.255.0")
        + struct.pack("H", 0x3)
    ).ljust(120, b"\0")
    address = b"eth0".ljust(16, b"\0") + sockaddr("10.9.9.9")
    down = struct.pack("16sh", b"eth0", 0).ljust(40, b"\0")
    seen = {}
    for prefix in ("", "userns-"):
        if prefix:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
                seen["userns"] = f"refused:{ctypes.get_errno()}"
                break
        seen[prefix + "route"] = attempt("route", 0x890B, route)  # SIOCADDRT
        seen[prefix + "address"] = attempt("address", 0x8916, address)  # SIOCSIFADDR
        seen[prefix + "link"] = attempt("link", 0x8914, down)  # SIOCSIFFLAGS
    return seen


def _gateway() -> str:
    """The default route's gateway, from /proc/net/route."""
    for line in Path("/proc/net/route").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == "00000000":
            return socket.inet_ntoa(int(fields[2], 16).to_bytes(4, "little"))
    return "0.0.0.0"
