"""``python -m gridweave_cli``: the same as the ``gridweave`` command."""

from gridweave_cli.app import main

main()
