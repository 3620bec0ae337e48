"""From a query to ranked results: candidate gathering and the pipeline (`search`), ranking rules (`ranking`),
window blending, centering, and the optional reranker.

May import: `errors`, `config`, `text`, `documents`, `embeddings`, `storage`.
"""
