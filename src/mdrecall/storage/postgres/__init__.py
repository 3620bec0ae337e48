"""The PostgreSQL + pgvector store for teams: schema and migrations, keyword scoring, import from SQLite.

Needs the `postgres` extra (psycopg 3, psycopg-pool, pgvector). May import what `storage` may, and `storage.sqlite`.
"""
