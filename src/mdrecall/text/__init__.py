"""Pure text rules, no I/O: tokens, FTS query building, keywords, stop words, word forms, dates, redaction.

May import: `errors` only. Everything else may import it.
"""
