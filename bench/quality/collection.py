"""Test collections: a BEIR-format loader (standard collections, for users with a network) and the
offline Python-docs collection this repo ships judgments for.

A collection is documents (id -> title, text), queries (id -> text, tier) and graded judgments.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

# Debian's python3.11-doc ships the reST sources of the Python documentation (PSF licence) here;
# `apt-get install python3.11-doc` puts them in place; the second folder is where
# `dpkg-deb -x python3.11-doc_*.deb /tmp/pydoc` puts them without installing (see bench/quality/README.md).
PYDOCS_DIRS = (
    Path("/usr/share/doc/python3.11/html/_sources/library"),
    Path("/tmp/pydoc/usr/share/doc/python3.11/html/_sources/library"),
)
PYDOCS_QUERIES = Path(__file__).with_name("pydocs_queries.json")


@dataclass
class Collection:
    name: str
    docs: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    tiers: dict[str, str] = field(default_factory=dict)


def load_beir(folder: Path, split: str = "test", max_docs: int | None = None) -> Collection:
    """A BEIR folder: corpus.jsonl ({_id, title, text}), queries.jsonl ({_id, text}), qrels/{split}.tsv.

    With `max_docs`, the judged documents are kept first, then others up to the cap, so a large corpus can
    be sampled down to what the local model can embed in a few minutes.
    """
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels" / f"{split}.tsv", encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        for row in reader:
            if not row or row[0] == "query-id" or len(row) < 3:
                continue
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    queries: dict[str, str] = {}
    with open(folder / "queries.jsonl", encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            if item["_id"] in qrels:
                queries[item["_id"]] = item["text"]
    judged = {doc for judgments in qrels.values() for doc in judgments}
    docs: dict[str, tuple[str, str]] = {}
    others: dict[str, tuple[str, str]] = {}
    with open(folder / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            entry = (item.get("title") or "", item.get("text") or "")
            (docs if item["_id"] in judged else others)[item["_id"]] = entry
    if max_docs is not None:
        for doc_id, entry in others.items():
            if len(docs) >= max_docs:
                break
            docs[doc_id] = entry
    else:
        docs.update(others)
    return Collection(folder.name, docs, queries, qrels, {q: "beir" for q in queries})


def find_pydocs_dir() -> Path | None:
    return next((d for d in PYDOCS_DIRS if d.is_dir()), None)


def load_pydocs(source_dir: Path | None = None, queries_file: Path = PYDOCS_QUERIES) -> Collection:
    """The Python 3.11 library reference (one document per module page) with this repo's queries."""
    spec = json.loads(queries_file.read_text(encoding="utf-8"))
    folder = source_dir or find_pydocs_dir()
    if folder is None:
        raise FileNotFoundError("Python docs sources not found: apt-get install python3.11-doc")
    docs = {}
    for module in spec["modules"]:
        text = (folder / f"{module}.rst.txt").read_text(encoding="utf-8")
        docs[module] = (module, text)
    queries = {q["id"]: q["query"] for q in spec["queries"]}
    qrels = {q["id"]: dict(q["relevant"]) for q in spec["queries"]}
    tiers = {q["id"]: q["tier"] for q in spec["queries"]}
    return Collection("pydocs-3.11", docs, queries, qrels, tiers)
