"""Keeping the index in step with the markdown: incremental sync and safe reindex (`sync`), the file watcher (`watch`).

May import: `errors`, `config`, `text`, `documents`, `embeddings`, `storage`.
"""
