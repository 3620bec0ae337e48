"""What agents call: the memory tools (`tools`, `fact_tools`), hooks and their installers (`hooks`),
the session-memory hook, and the pre-compaction flush.

May import: everything below it (`backends`, `facts`, `retrieval`, ...); never `cli` or `mcp_server`.
"""
