"""No control-plane process ever unpickles user data: only the worker modules do.

Every top-level package of the repository runs in a service process (the services and the
libraries they share), except the ones named in ``NOT_CONTROL_PLANE``; a package added later
is scanned without anyone listing it. The self-test plants each form the scanner must catch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.unpickle_scan import LOADERS, Finding, scan_file, scan_source

ROOT = Path(__file__).resolve().parent.parent
#: Top-level packages that are not the control plane: the tests and benchmarks, and the SDK
#: (``gridweave``), which runs on the user's own machine and reads the user's own results.
NOT_CONTROL_PLANE = frozenset({"tests", "bench", "gridweave"})
#: The module allowed to unpickle: the job runner, inside a job's container next to the
#: function; the serving runner (inside an endpoint replica's container, next to the user's
#: class) unpickles through the job runner's ``load_program``.
WORKER_MODULES = frozenset({"job_gateway/sandbox/runner.py"})
#: Packages that exist today; the discovery must find at least these.
KNOWN_CONTROL_PLANE = {
    "job_gateway",
    "kuberay_service",
    "gridweave_controller",
    "gridweave_clients",
    "gridweave_runtime",
    "credit_service",
    "metering_service",
    "faucet_service",
}


def control_plane_packages() -> list[Path]:
    """Every top-level package directory (an ``__init__.py``) but the excluded ones."""
    return sorted(
        path
        for path in ROOT.iterdir()
        if path.is_dir()
        and (path / "__init__.py").is_file()
        and path.name not in NOT_CONTROL_PLANE
        and not path.name.startswith(".")
    )


def scan_control_plane() -> list[Finding]:
    findings: list[Finding] = []
    for package in control_plane_packages():
        for path in sorted(package.rglob("*.py")):
            if str(path.relative_to(ROOT)) not in WORKER_MODULES:
                findings.extend(scan_file(path, root=ROOT))
    return findings


class TestControlPlane:
    def test_no_control_plane_module_unpickles(self) -> None:
        findings = scan_control_plane()
        assert not findings, "unpickling outside the worker module:\n" + "\n".join(
            map(str, findings)
        )

    def test_every_service_package_is_scanned(self) -> None:
        names = {path.name for path in control_plane_packages()}
        assert names >= KNOWN_CONTROL_PLANE
        assert not names & NOT_CONTROL_PLANE

    def test_the_allowed_worker_module_exists_and_is_the_one_that_unpickles(self) -> None:
        # an allowance for a module that moved or no longer loads anything must go
        for module in WORKER_MODULES:
            path = ROOT / module
            assert path.is_file(), f"{module} is allowed to unpickle but does not exist"
            assert scan_file(path, root=ROOT), f"{module} is allowed but unpickles nothing"


PLANTED = {
    "import pickle\npickle.loads(b'')": "uses pickle.loads",
    "import pickle\npickle.load(open('f', 'rb'))": "uses pickle.load",
    "import pickle\nclass Mine(pickle.Unpickler): pass": "uses pickle.Unpickler",
    "from pickle import loads as x\nx(b'')": "uses pickle.loads",
    "from pickle import Unpickler": "imports pickle.Unpickler",
    "import _pickle\n_pickle.loads(b'')": "uses _pickle.loads",
    "import cloudpickle as cp\ncp.loads(b'')": "uses cloudpickle.loads",
    "import cloudpickle\nf = cloudpickle.load": "uses cloudpickle.load",
    "import dill\ndill.loads(b'')": "uses dill.loads",
    "import joblib\njoblib.load('model.pkl')": "uses joblib.load",
    "import marshal\nmarshal.loads(b'')": "uses marshal.loads",
    "import shelve\nshelve.open('db')": "uses shelve.open",
    "import ray.cloudpickle\nray.cloudpickle.loads(b'')": "uses ray.cloudpickle.loads",
    "from ray import cloudpickle\ncloudpickle.loads(b'')": "uses ray.cloudpickle.loads",
    "import ray.cloudpickle as rcp\nrcp.loads(b'')": "uses ray.cloudpickle.loads",
    "import ray\nray.get(ref)": "uses ray.get",
    "from ray import get as fetch\nfetch(ref)": "uses ray.get",
    "import torch\ntorch.load('w.pt')": "uses torch.load",
    "import numpy as np\nnp.load('a.npy', allow_pickle=True)": "calls numpy.load(allow_pickle=...)",
    "import numpy\nnumpy.load('a.npy', allow_pickle=flag)": "calls numpy.load(allow_pickle=...)",
    "import numpy as np\nnp.load('a.npy', **options)": "calls numpy.load(**...)",
    "import pandas as pd\npd.read_pickle('f')": "uses pandas.read_pickle",
    "import pickle\ngetattr(pickle, 'loads')(b'')": "fetches pickle.loads with getattr",
    "import importlib\nimportlib.import_module('pickle')": "imports pickle dynamically",
    "__import__('cloudpickle')": "imports cloudpickle dynamically",
    "def f():\n    import pickle as p\n    return p.loads(b'')": "uses pickle.loads",
}
CLEAN = (
    "import pickle\npickle.dumps(1)",
    "import cloudpickle\ncloudpickle.dumps(lambda: 1)",
    "import json\njson.loads('1')",
    "import ray\nray.get_actor('a')\nray.put(1)",
    "import numpy as np\nnp.load('a.npy')\nnp.load('a.npy', allow_pickle=False)",
    "from . import pickle\npickle.loads(b'')",  # the package's own module, not the stdlib's
    "loads = str\nloads('x')",
)


class TestScanner:
    @pytest.mark.parametrize(("source", "what"), PLANTED.items())
    def test_catches_each_planted_form(self, source: str, what: str) -> None:
        findings = scan_source(source, "planted.py")
        assert findings, source
        assert any(finding.what.startswith(what) for finding in findings), findings
        last_line = source.count("\n") + 1
        assert all(1 <= finding.line <= last_line for finding in findings)

    @pytest.mark.parametrize("source", CLEAN)
    def test_leaves_safe_code_alone(self, source: str) -> None:
        assert scan_source(source, "clean.py") == []

    def test_names_file_and_line(self, tmp_path: Path) -> None:
        package = tmp_path / "some_service"
        package.mkdir()
        module = package / "handler.py"
        module.write_text(
            '"""A handler."""\n\nimport dill\n\n\ndef read(b):\n    return dill.loads(b)\n'
        )
        (finding,) = scan_file(module, root=tmp_path)
        assert str(finding) == "some_service/handler.py:7: uses dill.loads"

    def test_every_loader_is_planted(self) -> None:
        planted = {what.split()[-1] for what in PLANTED.values()}
        untested = {name for name in LOADERS if name not in planted}
        # the same loader under another module is the same rule (one alias map)
        assert {name.rsplit(".", 1)[0] for name in untested} <= {
            "pickle",
            "_pickle",
            "cPickle",
            "cloudpickle",
            "ray.cloudpickle",
            "dill",
            "marshal",
            "shelve",
        }
