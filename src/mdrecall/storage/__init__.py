"""The index on disk: the SQLite store (`sqlite`: schema, codecs, queries), its identity checks (`identity`),
the vector first pass (`vectors`), and the PostgreSQL store (`postgres/`).

May import: `errors`, `config`, `text`, `documents`. Knows nothing of ranking, backends or agents.
"""
