"""The built dashboard's precompressed copies (web/vite.config.ts): each ``.br`` and ``.gz``
beside a file of ``web/dist`` decodes to exactly that file, since the dashboard's server sends
the copy in its place. Runs on the build ``make web`` made (``make test`` builds it first)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest

DIST = Path(__file__).resolve().parents[2] / "web" / "dist"

#: Node's zlib decodes brotli (Python's standard library does not): file -> whether it matches.
_BROTLI_CHECK = """
const fs = require("fs"), zlib = require("zlib");
const answer = {};
for (const copy of JSON.parse(process.argv[1])) {
  const plain = fs.readFileSync(copy.slice(0, -3));
  answer[copy] = zlib.brotliDecompressSync(fs.readFileSync(copy)).equals(plain);
}
console.log(JSON.stringify(answer));
"""


def test_every_copy_decodes_to_its_file() -> None:
    if not (DIST / "index.html").is_file():
        if os.environ.get("CI") == "true":
            pytest.fail("web/dist is not built: run make web")
        pytest.skip("web/dist is not built: run make web")
    gz = sorted(DIST.rglob("*.gz"))
    br = sorted(DIST.rglob("*.br"))
    # the page's own script and stylesheet always shrink, so both kinds exist
    assert any(path.name.endswith(".js.br") for path in br), br
    assert any(path.name.endswith(".css.gz") for path in gz), gz
    for copy in gz:
        assert gzip.decompress(copy.read_bytes()) == copy.with_suffix("").read_bytes(), copy
    checked = subprocess.run(
        ["node", "-e", _BROTLI_CHECK, json.dumps([str(path) for path in br])],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(checked.stdout) == {str(path): True for path in br}
