"""The ``gridweave`` command: the platform from a terminal (typer + rich).

Each command lives in a module of its own and is registered in :mod:`gridweave_cli.app`.
Only the base dependencies are imported, except by ``gridweave up``, which loads the
all-in-one (:mod:`gridweave_allinone`) when it runs.
"""
