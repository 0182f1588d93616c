"""Layers point down (issue 9): a module never imports a layer above its own, and no module
imports another module's private (underscored) name. Imports are read with ``ast``, at every
level (a lazy import inside a function counts too).

    0 base       errors, results, validate, trace, events, rollout, probs, paths, display, safety, wheels
    1 model      model, scenario, algorithms (the registry's metadata), share, captions, wording
    2 reference  specviz.reference.*, frames
    3 kernels    kernels.* (torch and Triton)
    4 backends   specviz.backends (the registry that loads kernels.*_backend)
    5 render     specviz.render.* (pure figures and tables, no Streamlit)
    6 library    engine, steps, algorithms.calls, edits, invariants, audit, pitfalls, distributions, sibling_scan, export, naming, cli,
                 notebook, loop (the decoding-loop package), engines (SGLang / vLLM / transformers)
    7 ui         specviz.ui.*
    8 pages      pages/*.py, app.py
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYERS = [
    ("specviz", "specviz.errors", "specviz.results", "specviz.validate", "specviz.trace", "specviz.rollout", "specviz.probs",
     "specviz.events", "specviz.paths", "specviz.display", "specviz.safety", "specviz.limits", "specviz.wheels"),
    ("specviz.model", "specviz.scenario", "specviz.algorithms", "specviz.share", "specviz.captions", "specviz.wording"),
    ("specviz.reference", "specviz.frames"),
    ("kernels",),
    ("specviz.backends",),  # loads kernels.*_backend by name; a kernel importing it back would be a cycle
    ("specviz.render",),
    ("specviz.engine", "specviz.steps", "specviz.algorithms.calls", "specviz.edits", "specviz.invariants", "specviz.audit", "specviz.pitfalls",
     "specviz.distributions", "specviz.export", "specviz.player", "specviz.playframes", "specviz.naming", "specviz.cli", "specviz.serve", "specviz.__main__", "specviz.notebook", "specviz.loop",
     "specviz.engines", "specviz.sibling_scan"),
    ("specviz.ui",),
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
    assert layer_of("specviz.scenario") < layer_of("specviz.engine")
    assert layer_of("specviz.algorithms") < layer_of("specviz.algorithms.calls")
    assert layer_of("kernels.triton_backend") < layer_of("specviz.backends") < layer_of("specviz.ui.common")
