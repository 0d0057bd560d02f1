"""Which store ``--db`` names: a ``postgresql://`` (or ``postgres://``) URL, or a SQLite file."""

from __future__ import annotations

from server.store import Store

SCHEMES = ("postgresql://", "postgres://")


def is_url(db: str) -> bool:
    """Whether ``db`` names a PostgreSQL database (else a SQLite file)."""
    return db.startswith(SCHEMES)


def open_store(db: str, sync: str = "FULL", stall: float | None = None) -> Store:
    """The store ``db`` names, its tables created or upgraded (`server.schema`). ``stall``:
    seconds PostgreSQL lets a transaction of the writer wait on this process before it ends
    it (`server.postgres`; its own default if None)."""
    if is_url(db):
        from server.postgres import PostgresStore

        return PostgresStore(db, sync, stall)
    return Store(db, sync)
