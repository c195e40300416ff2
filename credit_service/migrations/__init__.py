"""Alembic migrations of the credits database (run by ``gridweave_runtime.upgrade_database``)."""
