"""The Postgres + pgvector backend for teams: `store.driver = "postgres"` (or `backend = "postgres"`).

Needs the `postgres` extra (psycopg 3, psycopg-pool, pgvector). See `backend.py` for how it works.
"""

from .backend import PostgresIndex, PostgresUnavailableError, describe_dsn, open_postgres, scrub

__all__ = ["PostgresIndex", "PostgresUnavailableError", "describe_dsn", "open_postgres", "scrub"]
