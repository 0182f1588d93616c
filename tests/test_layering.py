"""Layers point down (issues 9 and 34): the folders of specviz/ are the pipeline, in the order
``specviz.LAYERS`` lists them (lowest first; kernels/ has its place in it), and a module imports only
its own package and the ones before it, never one after. No module imports another module's private
(underscored) name, and no two files import each other, directly or round a longer circle (none is
allowed). Imports are read with ``ast``, at every level (a lazy import inside a function counts too).

A module's layer is that of its longest listed prefix. Besides the LAYERS: ``specviz`` itself (its
``__init__``) sits with base, ``specviz.__main__`` with app, and ``pages/`` and ``app.py`` on top.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from specviz import LAYERS as PACKAGE_ORDER

ROOT = Path(__file__).resolve().parents[1]

LAYERS = [(name,) for name in PACKAGE_ORDER] + [("pages", "app")]
LAYERS[0] += ("specviz",)
LAYERS[PACKAGE_ORDER.index("specviz.app")] += ("specviz.__main__",)


EXACT = {"specviz", "app"}  # these names are a module themselves, not a prefix for every submodule


def layer_of(module: str) -> int | None:
    """The layer of the longest prefix that names ``module`` (exact or as a package)."""
    best, best_len = None, -1
    for k, names in enumerate(LAYERS):
        for name in names:
            exact_only = name in EXACT
            if (module == name or (not exact_only and module.startswith(name + "."))) and len(name) > best_len:
                best, best_len = k, len(name)
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path):
    """(imported module, imported names, line) for every import in the file, relative ones resolved."""
    mod = module_name(path)
    pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, (), node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[:len(pkg) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = tuple(a.name for a in node.names)
            if node.module is None:  # from . import x: x may be a submodule
                for name in names:
                    yield f"{target}.{name}", (), node.lineno
            else:
                yield target, names, node.lineno


def sources():
    files = list((ROOT / "specviz").rglob("*.py")) + list((ROOT / "kernels").glob("*.py"))
    files += list((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]
    return [f for f in files if f.exists()]


def test_every_module_has_a_layer():
    missing = [module_name(f) for f in sources() if layer_of(module_name(f)) is None]
    assert not missing, missing


def test_no_module_imports_a_layer_above_it():
    bad = []
    for f in sources():
        mine = layer_of(module_name(f))
        for target, _names, line in imports(f):
            theirs = layer_of(target)
            if theirs is not None and theirs > mine:
                bad.append(f"{f.relative_to(ROOT)}:{line} (layer {mine}) imports {target} (layer {theirs})")
    assert not bad, "\n".join(bad)


def test_no_module_imports_a_private_name_of_another():
    bad = []
    for f in sources():
        for target, names, line in imports(f):
            if layer_of(target) is None:
                continue  # third-party modules
            for name in names:
                if name.startswith("_") and not name.startswith("__"):
                    bad.append(f"{f.relative_to(ROOT)}:{line} imports {target}.{name}")
    assert not bad, "\n".join(bad)


def test_the_check_sees_a_violation():
    """The checker itself: the layers follow specviz.LAYERS, so the scenario (inputs) importing the engine
    (replay) is upward, and kernels sit between the reference and the backends that load them."""
    assert layer_of("specviz.inputs.scenario") < layer_of("specviz.replay.engine")
    assert layer_of("specviz.reference.verify") < layer_of("kernels.triton_backend") < layer_of("specviz.algorithms.backends")
    assert layer_of("specviz.algorithms.backends") < layer_of("specviz.app.ui.common") < layer_of("pages.greedy")
    assert layer_of("specviz") == layer_of("specviz.base.errors") and layer_of("specviz.__main__") == layer_of("specviz.app.cli")


def test_specviz_top_level_is_the_listed_packages():
    """``ls specviz/`` reads as the pipeline: its __init__, __main__ and the packages of LAYERS, each
    with a docstring saying what it holds and what it may import (a new folder must take its place)."""
    # A folder left holding only __pycache__ (git keeps it after a pull that moved its modules away) is no entry.
    entries = sorted(p.name for p in (ROOT / "specviz").iterdir()
                     if p.name != "__pycache__" and not (p.is_dir() and not any(p.rglob("*.py"))))
    listed = sorted(n.split(".", 1)[1] for n in PACKAGE_ORDER if n.startswith("specviz."))
    assert entries == sorted(["__init__.py", "__main__.py"] + listed), entries
    for name in listed:
        doc = ast.get_docstring(ast.parse((ROOT / "specviz" / name / "__init__.py").read_text(encoding="utf-8")))
        assert doc and re.search(r"may\s+import", doc, re.I), f"specviz/{name}/__init__.py: say what it holds and what it may import"


# ---------------------------------------------------------------------------------------------
# Import circles between files (issue 34). Every import counts, lazy ones inside functions too: a
# circle through a lazy import still ties the two files together (neither can move or be read alone).
# ---------------------------------------------------------------------------------------------

def import_graph(files: list[Path], root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the modules of ``files`` it imports. ``from pkg import name`` points at the
    submodule ``pkg.name`` where that is a file, else at ``pkg`` (its ``__init__``)."""
    mods = {module_name_under(f, root): f for f in files}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, f in mods.items():
        for target, names, _line in imports_under(f, root):
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in mods]
            if subs:
                graph[mod].update(subs)
            if target in mods and len(subs) < len(names or ("",)):
                graph[mod].add(target)
        graph[mod].discard(mod)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):  # recursion depth is bounded by the number of modules (~200)
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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
    return sorted(out)


def module_name_under(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_under(path: Path, root: Path):
    """``imports`` for a file under any root (the unit test below uses a temporary one)."""
    if root == ROOT:
        yield from imports(path)
        return
    mod = module_name_under(path, root)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, (), node.lineno
        elif isinstance(node, ast.ImportFrom):
            pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
            base = pkg[:len(pkg) - (node.level - 1)] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            yield target, tuple(a.name for a in node.names), node.lineno


def product_circles() -> list[list[str]]:
    return circles(import_graph(sources()))


def test_no_import_circle_between_files():
    found = product_circles()
    assert not found, "import circles between files (break them: move the shared part down a layer):\n" + \
        "\n".join(" <-> ".join(c) for c in found)


def test_the_circle_check_sees_a_circle(tmp_path):
    """The checker itself: a deliberately circular pair of temporary modules (one import lazy, as
    cli <-> serve was) is found; the same pair without the back import is not."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import g\n    return g\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    files = sorted(pkg.glob("*.py"))
    assert circles(import_graph(files, tmp_path)) == [["pkg.a", "pkg.b"]]
    (pkg / "b.py").write_text("def f():\n    return 1\n")
    assert circles(import_graph(files, tmp_path)) == []


def test_the_product_never_imports_test_code():
    """tests/support (case generators, the SGLang oracle helpers) is test code: no product file imports it."""
    moved = ("kernels.random_cases", "kernels.fidelity_cases", "kernels.sglang_oracle")  # now tests/support/*
    bad = [f"{f.relative_to(ROOT)}:{line} imports {target}" for f in sources()
           for target, names, line in imports(f)
           if target == "tests" or target.startswith("tests.") or target in moved
           or (target == "kernels" and any(f"kernels.{n}" in moved for n in names))]
    assert not bad, "\n".join(bad)
    assert not [m for m in moved if (ROOT / (m.replace(".", "/") + ".py")).exists()], "test code back in kernels/"
