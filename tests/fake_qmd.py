"""A stand-in for the `qmd` CLI, put on PATH by the qmd tests (see `fake_qmd_bin` in tests/test_qmd_contract.py).

It keeps qmd's contract as mdrecall uses it: collections from `$XDG_CONFIG_HOME/qmd/index.yml`, an index
under `$XDG_CACHE_HOME/qmd/`, `update`, `embed`, `search|vsearch|query --json -n N -- <q>` printing qmd's JSON
(`search` needs every query word in a note, as qmd's BM25 does;
`file: qmd://<collection>/<path>`, `line`, `snippet` with its `@@ -start,count @@` header), `status` as
text, `--version`. Every call is appended to $FAKE_QMD_LOG (args, cwd, XDG dirs, pid). The JSON file in
$FAKE_QMD_CONTROL says how to misbehave, per command: "fail" (exit 1), "hang" (sleep), "garbage"
(unparsable output), "notalist" (valid JSON of the wrong shape).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path


def _log(args: list[str]) -> None:
    path = os.environ.get("FAKE_QMD_LOG")
    if not path:
        return
    entry = {
        "args": args,
        "cwd": os.getcwd(),
        "xdgConfig": os.environ.get("XDG_CONFIG_HOME"),
        "xdgCache": os.environ.get("XDG_CACHE_HOME"),
        "pid": os.getpid(),
    }
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


def _control(command: str) -> str:
    path = os.environ.get("FAKE_QMD_CONTROL")
    if not path or not Path(path).exists():
        return "ok"
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return str(data.get(command, data.get("*", "ok")))


def _paths() -> tuple[Path, Path]:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "qmd" / "index.yml"
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "qmd" / "fake-index.json"
    return config, cache


def _load_index() -> dict:
    _, cache = _paths()
    try:
        return json.loads(cache.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"docs": [], "vectors": 0}


def _save(cache: Path, data: dict) -> None:
    """Atomic, like qmd's SQLite: a search running during an update or embed sees the old or the new index."""
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, cache)


def update() -> None:
    config, cache = _paths()
    collections = json.loads(config.read_text(encoding="utf-8"))["collections"]
    docs = []
    for name, spec in collections.items():
        root = Path(spec["path"])
        for pattern in spec.get("pattern", "**/*.md").split(","):
            for file in sorted(root.glob(pattern.strip())):
                if file.is_file():
                    text = file.read_text(encoding="utf-8", errors="replace")
                    docs.append({"collection": name, "path": file.relative_to(root).as_posix(), "text": text})
    cache.parent.mkdir(parents=True, exist_ok=True)
    previous = _load_index()
    _save(cache, {"docs": docs, "vectors": previous.get("vectors", 0)})
    print(f"Indexed: {len(docs)} new, 0 updated, 0 unchanged, 0 removed")


def embed() -> None:
    index = _load_index()
    index["vectors"] = len(index["docs"])
    _, cache = _paths()
    cache.parent.mkdir(parents=True, exist_ok=True)
    _save(cache, index)
    print(f"Embedded {index['vectors']} chunks")


def search(args: list[str], every_term: bool = False) -> None:
    """`<q> --json -n N` or, like node's parseArgs, options then `--` and the query.

    `every_term`: like qmd `search` (FTS5 BM25, terms joined by AND), a note must hold every word of the query;
    `vsearch` and `query` (vectors) find notes holding any of them."""
    options, query = (
        (args[: args.index("--")], " ".join(args[args.index("--") + 1 :])) if "--" in args else (args, args[0])
    )
    if query.startswith("-") and "--" not in args:
        print("Usage: qmd search [options] <query>", file=sys.stderr)
        raise SystemExit(1)
    limit = int(options[options.index("-n") + 1]) if "-n" in options else 5
    terms = [t.lower() for t in query.split()]
    hits = []
    for doc in _load_index()["docs"]:
        lines = doc["text"].split("\n")
        matched = [i for i, line in enumerate(lines) if any(t in line.lower() for t in terms)]
        if not matched:
            continue
        present = sum(1 for t in terms if t in doc["text"].lower())
        words = [w for w in re.findall(r"[a-z0-9]+", query.lower())]
        if every_term and not all(w in doc["text"].lower() for w in words):
            continue
        best = matched[0]
        start = max(0, best - 1)
        chunk = lines[start : best + 3]
        header = f"@@ -{start + 1},{len(chunk)} @@ ({start} before, {len(lines) - start - len(chunk)} after)"
        hits.append(
            {
                "docid": f"#{abs(hash(doc['path'])) % 999999:06d}",
                "score": round(present / len(terms), 2),
                "file": f"qmd://{doc['collection']}/{doc['path']}",
                "line": best + 1,
                "title": doc["path"],
                "snippet": header + "\n" + "\n".join(chunk),
            }
        )
    hits.sort(key=lambda h: -h["score"])
    print(json.dumps(hits[:limit], indent=2))


def status() -> None:
    index = _load_index()
    config, _ = _paths()
    collections = json.loads(config.read_text(encoding="utf-8"))["collections"] if config.exists() else {}
    print("QMD Status\n\nDocuments")
    print(f"  Total:    {len(index['docs'])} files indexed")
    print(f"  Vectors:  {index['vectors']} embedded\n\nCollections")
    for name, spec in collections.items():
        count = sum(1 for d in index["docs"] if d["collection"] == name)
        print(f"  {name} (qmd://{name}/)\n    Pattern:  {spec.get('pattern')}\n    Files:    {count} (updated 1s ago)")


def main() -> int:
    args = sys.argv[1:]
    _log(args)
    command = args[0] if args else ""
    behaviour = _control(command)
    if behaviour == "fail":
        print(f"Error: {command} exploded", file=sys.stderr)
        return 1
    if behaviour == "hang":
        time.sleep(60)
        return 0
    if behaviour == "garbage":
        print("Loading model... {not json")
        return 0
    if behaviour == "notalist":
        print(json.dumps({"results": "nope"}))
        return 0
    if command == "--version":
        print("qmd 9.9.9-fake")
    elif command == "update":
        update()
    elif command == "embed":
        embed()
    elif command in ("search", "vsearch", "query"):
        search(args[1:], every_term=command == "search")
    elif command == "status":
        status()
    else:
        print(f"Unknown command: {command}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
