"""Configuration: the schema and layered settings (`settings`), and the OpenClaw config import (`openclaw`).

May import: `errors`, `text`. Imported by everything above it; it knows nothing of storage, search or agents.
"""
