"""``python -m chain_service.abci``: Gridweave's ABCI application for a local CometBFT node.

    python -m chain_service.abci --trusted-key HEX [--listen 127.0.0.1:26658]
        [--state-file PATH]

``--trusted-key``: chain_service's Ed25519 public key (raw, hex; ``GET /v1/batches/{id}``
names it). ``--state-file`` keeps the anchored batches across restarts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import re
from pathlib import Path

from chain_service.abci.application import AnchorApplication
from chain_service.abci.server import serve_abci


def main() -> None:
    """Run the ABCI application until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m chain_service.abci")
    parser.add_argument("--trusted-key", required=True, help="chain_service's public key, hex")
    parser.add_argument("--listen", default="127.0.0.1:26658", help="host:port CometBFT dials")
    parser.add_argument("--state-file", type=Path, default=None)
    arguments = parser.parse_args()
    if not re.fullmatch(r"[0-9a-f]{64}", arguments.trusted_key):
        parser.error("--trusted-key: 64 lowercase hex digits (a raw Ed25519 public key)")
    host, _, port = arguments.listen.rpartition(":")
    logging.basicConfig(level=logging.INFO)
    application = AnchorApplication(
        trusted_key=arguments.trusted_key, state_file=arguments.state_file
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_abci(application, host, int(port)))


if __name__ == "__main__":
    main()
