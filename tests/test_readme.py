"""The README says what the code does: its configuration table is made from the settings
classes (current, and naming every variable the all-in-one sets), its Quick start is the
two commands, and its first function, first endpoint and kubectl lines run as written,
line by line, against a real ``gridweave up``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gridweave_allinone.services import Wiring, service_databases, service_waves
from gridweave_allinone.settings import AllInOneSettings
from gridweave_clients.platform import PlatformClient
from gridweave_runtime.settings import default_state_dir
from platform_service.settings import PlatformSettings
from tests.support.allinone import AllInOneProcess, reachable_workdir
from tests.support.settings_table import END, START, replace_table

REPOSITORY = Path(__file__).resolve().parents[1]
README = REPOSITORY / "README.md"


def test_the_configuration_table_is_current() -> None:
    text = README.read_text()
    assert replace_table(text) == text, (
        "README's configuration table is stale: "
        ".venv/bin/python -m tests.support.settings_table --write README.md"
    )


def test_every_variable_the_all_in_one_sets_is_in_the_table(tmp_path: Path) -> None:
    text = README.read_text()
    table = text[text.index(START) : text.index(END)]
    documented = set(re.findall(r"`([A-Z0-9_<>]+)`", table))
    settings = AllInOneSettings(state_dir=tmp_path, chain_enabled=True)
    waves = service_waves(
        settings, service_kubeconfig=tmp_path / "k", gateway_kubeconfig=tmp_path / "g"
    )
    urls = {name: f"postgresql+psycopg://gw_{name}@/{name}" for name in service_databases(waves)}
    wiring = Wiring(urls, {"GRIDWEAVE_CREDENTIALS": "{}"}, {"platform": "t"}, serve_key="s")
    for wave in waves:
        for spec in wave:
            for name in spec.environment(wiring, "127.0.0.1"):
                shared = "<PREFIX>" + name.removeprefix(spec.prefix)
                assert name in documented or shared in documented, f"{name} ({spec.name})"


def test_its_model_paths_lie_under_the_default_model_root() -> None:
    """A user (not only an admin) can deploy the README's examples as written."""
    text = README.read_text()
    paths = re.findall(r'model_ref=os\.path\.expanduser\("([^"]+)"\)', text)
    paths += re.findall(r"--model-ref (\S+)", text)
    assert paths and not re.findall(r'model_ref="', text)
    (root,) = PlatformSettings(state_dir=default_state_dir()).resolved_model_roots()
    for path in paths:
        expanded = os.path.expanduser(path)
        assert expanded.startswith(root.rstrip("/") + "/"), (path, root)


def test_the_quick_start_is_make_up_then_make_test() -> None:
    text = README.read_text()
    quick_start = text[text.index("## Quick start") : text.index("### Your first function")]
    (block,) = re.findall(r"```bash\n(.*?)```", quick_start, re.S)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make up", "make test"]


# -- the Quick start, line by line -------------------------------------------------------------

#: The Quick start's sections whose bash blocks a user pastes with ``make up`` running.
_PASTED = ("### Your first function", "### Your first endpoint")
_HERE_DOC = re.compile(r"<<'(\w+)'$")
_COMMENT = re.compile(r"\s+#\s?(.*)$")
_SQUARES = "49\n[0, 1, 4, 9, 16, 25, 36, 49, 64, 81]\n"
#: What each command's output shows (as its comment says), by the command without comment;
#: ``None``: the output must be the comment itself.
_SHOWS: dict[str, str | None] = {
    ".venv/bin/python hello.py": re.escape(_SQUARES) + "$",
    ".venv/bin/gridweave jobs": r"square.*Completed",
    ".venv/bin/gridweave usage": r"^\d+ records, \d+ billed s, .*charged",
    ".venv/bin/gridweave nodes": r"simulated|nvidia|amd",
    "KUBECONFIG=~/.gridweave/kubeapi/admin.kubeconfig $(tools/kubeapi/build.sh)/kubectl get gwj": (
        r"NAME\s+PHASE.*\n(.*Completed.*\n)+"
    ),
    ".venv/bin/gridweave deploy embedder --class embed.py:Embedder --pip wordllama==0.4.0.post1 "
    "--vram 1GB --wait": r"^embedder: Running at http://127\.0\.0\.1:\d+/v1/endpoints/embedder$",
    ".venv/bin/python embed.py": None,
    ".venv/bin/gridweave endpoints": r"embedder\s+custom\s+Running",
    ".venv/bin/gridweave stop embedder": r"^embedder: Stopped",
}


def _section(text: str, title: str) -> str:
    start = text.index(title)
    ends = [text.find(mark, start + len(title)) for mark in ("\n## ", "\n### ")]
    return text[start : min(end for end in ends if end != -1)]


def pasted_commands(text: str) -> list[str]:
    """The commands of the pasted sections' bash blocks, in order: each line, a here-doc
    with its lines as one."""
    commands: list[str] = []
    for title in _PASTED:
        (block,) = re.findall(r"```bash\n(.*?)```", _section(text, title), re.S)
        lines = iter(block.splitlines())
        for line in lines:
            if not line.strip():
                continue
            here_doc = _HERE_DOC.search(line)
            if here_doc is not None:
                body = [next(lines)]
                while body[-1] != here_doc.group(1):
                    body.append(next(lines))
                line = "\n".join([line, *body])
            commands.append(line)
    return commands


def _as_pasted(workdir: Path, platform: AllInOneProcess) -> tuple[Path, dict[str, str]]:
    """A checkout's root as a user has it (``.venv`` and ``tools`` of this one) and the
    environment of a user whose home holds the all-in-one's data and saved key, as
    ``make up`` leaves them: ``~/.gridweave``, ``~/.config/gridweave/config.toml``."""
    home, root = workdir / "home", workdir / "checkout"
    (home / ".config" / "gridweave").mkdir(parents=True)
    shutil.copy2(platform.config_file, home / ".config" / "gridweave" / "config.toml")
    (home / ".gridweave").symlink_to(platform.state_dir)
    root.mkdir()
    for name in (".venv", "tools"):
        (root / name).symlink_to(REPOSITORY / name)
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("RAY_ADDRESS", "XDG_CONFIG_HOME", "COLUMNS")
        and not (key.startswith("GRIDWEAVE_") and not key.startswith("GRIDWEAVE_KUBEAPI_"))
    }
    # the Kubernetes binaries stay where the all-in-one found them (tools/kubeapi/build.sh)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return root, environment | {"HOME": str(home), "XDG_CACHE_HOME": cache}


def _run(command: str, root: Path, environment: dict[str, str]) -> str:
    """Run one pasted command with bash; its output, once it exited 0."""
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = f"{command}\nexit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    if done.returncode != 0 and "PipInstallFailed" in done.stderr:
        pytest.fail(
            "pip could not install the endpoint's package: the README's endpoint needs the "
            "package index (PyPI, or the node's PIP_INDEX_URL) reachable from this machine. "
            + output
        )
    assert done.returncode == 0, output
    return done.stdout


@pytest.fixture
def workdir() -> Iterator[Path]:
    with reachable_workdir("gw-readme-") as path:
        yield path


@pytest.mark.kubeapi
@pytest.mark.postgres
@pytest.mark.timeout(1500)
def test_the_first_function_endpoint_and_kubectl_lines_run_as_pasted(workdir: Path) -> None:
    commands = pasted_commands(README.read_text())
    unknown = [c for c in commands if "<<" not in c and _COMMENT.sub("", c) not in _SHOWS]
    assert not unknown, f"README lines this test does not check yet (add them): {unknown}"
    with AllInOneProcess(workdir) as platform:
        root, environment = _as_pasted(workdir, platform)
        for command in commands:
            output = _run(command, root, environment)
            if "<<" in command:  # a here-doc: the file is written
                assert (root / command.split()[2]).is_file(), command
                continue
            comment = _COMMENT.search(command.split("\n")[0])
            expected = _SHOWS[_COMMENT.sub("", command)]
            if expected is None:
                assert comment is not None and output.strip() == comment.group(1), output
            else:
                assert re.search(expected, output, re.M), f"{command}\n{output}"
            if "kubectl" in command:
                _assert_the_platforms_jobs(platform, output)


def _assert_the_platforms_jobs(platform: AllInOneProcess, kubectl_output: str) -> None:
    """kubectl's rows are the jobs the platform lists for the admin (the only user yet)."""
    api_key = platform.config_file.read_text().split('api_key = "', 1)[1].split('"', 1)[0]
    with PlatformClient(platform.url("platform"), api_key) as client:
        jobs = {job.job_id for job in client.list_jobs(limit=100).jobs}
    rows = {line.split()[0] for line in kubectl_output.splitlines()[1:] if line.strip()}
    assert rows == jobs, kubectl_output
