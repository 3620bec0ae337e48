"""The workspace as documents: discovery of memory files, session transcripts (the one JSONL reader),
chunking, chunk context, embedding windows, and the writer for files mdrecall creates.

May import: `errors`, `config`, `text`. Knows nothing of embeddings, storage or ranking.
"""
