"""Layers point down (issue 9): a module never imports a layer above its own, and no module
imports another module's private (underscored) name. Imports are read with ``ast``, at every
level (a lazy import inside a function counts too). No two files import each other, directly or
round a longer circle (issue 34; KNOWN_CIRCLES below is empty).
A module's layer is that of its longest listed prefix: a folder's files take the folder's place in
the order below (once issue 34's folder restructure lands, the list becomes the folder order).

    0 base       errors, results, validate, trace, events, rollout, probs, paths, display, safety, wheels
    1 model      model, scenario, algorithms (the registry's metadata), share, captions, wording
    2 reference  specviz.reference.*, frames
    3 kernels    kernels.* (torch and Triton)
    4 backends   specviz.algorithms.backends (the registry that loads kernels.*_backend)
    5 render     specviz.render.* (pure figures and tables, no Streamlit)
    6 library    engine, steps, algorithms.calls, edits, invariants, audit, pitfalls, distributions, sibling_scan, export, player, playframes, naming, cli,
                 notebook, loop (the decoding-loop package), engines (SGLang / vLLM / transformers),
                 app_runtime (Streamlit patches; imports Streamlit only, so the CLI's doctor may report on it)
    7 ui         specviz.app.ui.*
    8 pages      pages/*.py, app.py
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYERS = [
    ("specviz", "specviz.base.errors", "specviz.base.results", "specviz.base.validate", "specviz.base.trace", "specviz.base.rollout", "specviz.base.probs",
     "specviz.replay.events", "specviz.base.paths", "specviz.base.display", "specviz.base.safety", "specviz.base.limits", "specviz.base.wheels"),
    ("specviz.inputs.model", "specviz.scenario", "specviz.algorithms", "specviz.rooms.share", "specviz.replay.captions", "specviz.replay.wording"),
    ("specviz.reference", "specviz.replay.frames"),
    ("kernels",),
    ("specviz.algorithms.backends",),  # loads kernels.*_backend by name; a kernel importing it back would be a cycle
    ("specviz.render",),
    ("specviz.replay.engine", "specviz.replay.run_display", "specviz.replay.steps", "specviz.algorithms.calls", "specviz.inputs.edits", "specviz.replay.invariants", "specviz.rooms.audit", "specviz.rooms.pitfalls", "specviz.rooms.pitfall_bugs",
     "specviz.algorithms.distributions", "specviz.rooms.export", "specviz.player", "specviz.replay.playframes", "specviz.inputs.naming", "specviz.app.cli", "specviz.app.cli_files", "specviz.app.serve", "specviz.app.haproxy", "specviz.__main__", "specviz.rooms.notebook", "specviz.rooms.loop",
     "specviz.rooms.engines", "specviz.replay.sibling_scan", "specviz.app.runtime"),
    ("specviz.app.ui",),
    ("pages", "app"),
]


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
    """The checker itself: a model-layer module importing the engine is flagged."""
    assert layer_of("specviz.scenario") < layer_of("specviz.replay.engine")
    assert layer_of("specviz.algorithms") < layer_of("specviz.algorithms.calls")
    assert layer_of("kernels.triton_backend") < layer_of("specviz.algorithms.backends") < layer_of("specviz.app.ui.common")


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


# Circles allowed: none (issue 34 broke the last two: Run's Jupyter display goes through run_display, below the
# engine, and steps.replay_steps takes the run instead of running the engine; the ui's lazy_expander lives in
# ui/state, below the sidebar's theme). Kept as a list so that the check below stays one rule: any circle fails.
KNOWN_CIRCLES: list[set[str]] = []


def product_circles() -> list[list[str]]:
    return circles(import_graph(sources()))


def test_no_new_import_circle_between_files():
    new = [c for c in product_circles() if not any(set(c) <= known for known in KNOWN_CIRCLES)]
    assert not new, "import circles between files (break them; do not add them to KNOWN_CIRCLES):\n" + \
        "\n".join(" <-> ".join(c) for c in new)


def test_known_circles_allow_list_is_current():
    found = [set(c) for c in product_circles()]
    stale = [sorted(k) for k in KNOWN_CIRCLES if k not in found]
    assert not stale, f"KNOWN_CIRCLES lists circles that changed or are gone; shrink or remove them: {stale}"


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
