"""Which store ``--db`` names: a ``postgresql://`` (or ``postgres://``) URL, or a SQLite file."""

from __future__ import annotations

from server.store import Store

SCHEMES = ("postgresql://", "postgres://")


def is_url(db: str) -> bool:
    """Whether ``db`` names a PostgreSQL database (else a SQLite file)."""
    return db.startswith(SCHEMES)


def open_store(db: str, sync: str = "FULL") -> Store:
    """The store ``db`` names, its tables created or upgraded (`server.schema`)."""
    if is_url(db):
        from server.postgres import PostgresStore

        return PostgresStore(db, sync)
    return Store(db, sync)
