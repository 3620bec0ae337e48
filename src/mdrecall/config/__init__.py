"""Configuration: the schema and layered settings (`settings`), the OpenClaw config import (`openclaw`),
and which keys of a folder's own config need the user's trust (`trust`), how path values are read (`paths`).

May import: `errors`, `files`, `text`. Imported by everything above it; it knows nothing of storage, search or agents.
"""
