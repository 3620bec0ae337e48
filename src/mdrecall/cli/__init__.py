"""The `mdrecall` command line: a thin layer over the library (`app`, `facts`, `migrate`).

May import: everything. Nothing imports it (but `mcp_server` for shared option handling, if any).
"""
