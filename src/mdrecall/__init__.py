"""mdrecall: persistent, searchable memory for AI agents.

Markdown files are the source of truth; a per-agent SQLite index (FTS5 + sqlite-vec) is derived from them.
"""

__version__ = "0.1.0"
