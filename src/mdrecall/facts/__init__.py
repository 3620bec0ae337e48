"""The fact store: facts.md as the source of truth mirrored into LanceDB (`store`), and auto-capture rules (`capture`).

May import: `errors`, `config`, `text`, `documents`, `embeddings`. LanceDB is imported only when a store is opened.
"""
