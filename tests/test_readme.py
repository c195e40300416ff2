"""The README says what the code does: its configuration table is made from the settings
classes (current, and naming every variable the all-in-one sets), its Quick start is the
two commands, and its example runs as written."""

from __future__ import annotations

import os
import re
from pathlib import Path

from gridweave_allinone.services import Wiring, service_databases, service_waves
from gridweave_allinone.settings import AllInOneSettings
from gridweave_runtime.settings import default_state_dir
from platform_service.settings import PlatformSettings
from tests.support.settings_table import END, START, replace_table

README = Path(__file__).resolve().parents[1] / "README.md"


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
    waves = service_waves(settings, service_kubeconfig=tmp_path / "k")
    urls = {name: f"postgresql+psycopg://gw_{name}@/{name}" for name in service_databases(waves)}
    wiring = Wiring(urls, {"GRIDWEAVE_INTERNAL_TOKEN": "t"})
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
