"""Memory backends (the seam lands with the qmd backend; postgres lives in backends/postgres)."""
