"""The layout's rules, read from the code: no import cycles, no private names across packages, layers downward."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PKG = SRC / "mdrecall"

# What each package may import (besides itself and the standard library / third parties).
# `errors` and the package's own `__init__` are importable from everywhere; `files` (user-only files) from every layer.
LAYERS: dict[str, set[str]] = {
    "errors": set(),
    "locks": {"errors", "files"},
    "files": {"errors"},
    "text": {"errors"},
    "config": {"errors", "text", "locks", "files"},
    "documents": {"errors", "config", "text", "locks", "files"},
    "embeddings": {"errors", "config", "text", "locks", "files"},
    "storage": {"errors", "config", "text", "documents", "locks", "files"},
    "indexing": {"errors", "config", "text", "documents", "embeddings", "storage", "locks", "files"},
    "retrieval": {"errors", "config", "text", "documents", "embeddings", "storage", "indexing", "locks", "files"},
    "backends": {
        "errors",
        "config",
        "text",
        "documents",
        "embeddings",
        "storage",
        "indexing",
        "retrieval",
        "locks",
        "files",
    },
    "facts": {"errors", "config", "text", "documents", "embeddings", "locks", "files"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _imports(path: Path, modules: dict[str, Path]) -> list[tuple[str, list[str]]]:
    """(module, names) for every `mdrecall` import in the file, wherever it stands (TYPE_CHECKING and function
    bodies included: a deferred import is still a dependency)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mdrecall"):
            names = [a.name for a in node.names]
            # `from mdrecall.pkg import module` names a module, not an attribute
            sub = [f"{node.module}.{n}" for n in names if f"{node.module}.{n}" in modules]
            if sub:
                found.extend((m, []) for m in sub)
                rest = [n for n in names if f"{node.module}.{n}" not in modules]
                if rest:
                    found.append((node.module, rest))
            else:
                found.append((node.module, names))
        elif isinstance(node, ast.Import):
            found.extend((a.name, []) for a in node.names if a.name.startswith("mdrecall"))
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps = set()
        for target, _ in _imports(path, modules):
            if target in modules and target != name and target != "mdrecall":
                deps.add(target)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_import_cycles_between_modules() -> None:
    assert _cycles(_graph()) == []


def test_no_import_cycles_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for module, deps in _graph().items():
        graph.setdefault(_package(module), set()).update(_package(d) for d in deps if _package(d) != _package(module))
    assert _cycles(graph) == []


def test_packages_import_only_the_layers_below_them() -> None:
    wrong = []
    for module, deps in _graph().items():
        allowed = LAYERS.get(_package(module))
        if allowed is None:
            continue
        for dep in deps:
            pkg = _package(dep)
            if pkg != _package(module) and pkg not in allowed:
                wrong.append(f"{module} -> {dep}")
    assert wrong == []


def test_no_private_names_imported_across_packages() -> None:
    """A `_name` stays inside its own folder: the Postgres store may not borrow the SQLite store's helpers."""
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        for target, names in _imports(path, modules):
            if target.rpartition(".")[0] == name.rpartition(".")[0]:
                continue
            wrong.extend(f"{name} takes {target}.{n}" for n in names if n.startswith("_") and not n.startswith("__"))
    assert wrong == []


def test_every_package_says_what_it_owns() -> None:
    for init in PKG.rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc) > 40, init
