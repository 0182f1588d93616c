"""The one-off folder move of issue 34: ``specviz/`` from ~40 modules side by side to a handful of
packages that read as the pipeline. Kept in the repository so that the move can be reviewed and
re-run: at merge time it is run on the merged tree (still in the old layout, with everyone's new
code in it), and its result is committed as one "Move" commit.

    python tools/relayout.py            # move and rewrite, then print what it did
    python tools/relayout.py --dry-run  # print what it would do, change nothing

What it does, deterministically (files in ``git ls-files`` order, the table below in its order):

1. Relative imports inside ``specviz/`` (``from .x import``, ``from .. import y``) become absolute,
   resolved from each file's old place (the move changes what ``.`` means).
2. Every reference to a moved module is rewritten across the repository's tracked text files
   (*.py, *.md, *.toml, *.cfg, *.ini, *.ipynb, *.sh, *.txt, *.yaml, *.js, *.css, *.html, *.in, Dockerfile,
   .ci/run): ``from specviz import a, b`` (split into the new packages), ``from specviz.X import``,
   ``import specviz.X``, dotted strings (``"specviz.X.attr"`` monkeypatch targets,
   ``python -m specviz.X``), the same escaped in a regular expression (``specviz\\.X``) and file
   paths (``specviz/X.py``, ``specviz/ui/``). Two quoted ids that only look like module paths are
   left alone: the scenario format tag ``"specviz.scenario"`` and the player component's name
   ``"specviz.player"``.
3. ``Path(__file__)...parents[N]`` / ``.parent`` that reach outside a moved unit are re-counted.
4. ``git mv`` of each unit (history follows), and each new package gets an ``__init__.py`` with a
   one-paragraph docstring: what it holds and what it may import.

The order of the new packages (lowest first) is ``LAYERS`` in ``specviz/__init__.py`` (written
after the move); tests/test_layering.py derives the allowed import direction from it.
Run from the repository root with a clean tree in the old layout; it refuses otherwise.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# old dotted path -> new dotted path (modules and whole packages). Everything in specviz/ not listed
# here stays where it is: specviz/__init__.py, specviz/__main__.py, specviz/algorithms/ (the registry),
# specviz/reference/ (the numpy spec) and specviz/render/.
MOVES: dict[str, str] = {
    # base: the vocabulary every layer shares (no specviz imports but base's own)
    "specviz.errors": "specviz.base.errors",
    "specviz.limits": "specviz.base.limits",
    "specviz.paths": "specviz.base.paths",
    "specviz.safety": "specviz.base.safety",
    "specviz.wheels": "specviz.base.wheels",
    "specviz.display": "specviz.base.display",
    "specviz.results": "specviz.base.results",
    "specviz.validate": "specviz.base.validate",
    "specviz.trace": "specviz.base.trace",
    "specviz.probs": "specviz.base.probs",
    "specviz.rollout": "specviz.base.rollout",
    # algorithms: the registry (its __init__), the calls, the backends over kernels/, closed forms
    "specviz.backends": "specviz.algorithms.backends",
    "specviz.distributions": "specviz.algorithms.distributions",
    # inputs: the verify tree, the scenario and its validation, edits, names
    "specviz.model": "specviz.inputs.model",
    "specviz.scenario": "specviz.inputs.scenario",
    "specviz.edits": "specviz.inputs.edits",
    "specviz.naming": "specviz.inputs.naming",
    # replay: run a scenario, then its trace as steps, frames, captions and words
    "specviz.engine": "specviz.replay.engine",
    "specviz.events": "specviz.replay.events",
    "specviz.frames": "specviz.replay.frames",
    "specviz.steps": "specviz.replay.steps",
    "specviz.captions": "specviz.replay.captions",
    "specviz.wording": "specviz.replay.wording",
    "specviz.invariants": "specviz.replay.invariants",
    "specviz.sibling_scan": "specviz.replay.sibling_scan",
    "specviz.run_display": "specviz.replay.run_display",
    "specviz.playframes": "specviz.replay.playframes",
    "specviz.player": "specviz.replay.player",
    # rooms: the side rooms
    "specviz.loop": "specviz.rooms.loop",
    "specviz.engines": "specviz.rooms.engines",
    "specviz.audit": "specviz.rooms.audit",
    "specviz.pitfalls": "specviz.rooms.pitfalls",
    "specviz.pitfall_bugs": "specviz.rooms.pitfall_bugs",
    "specviz.export": "specviz.rooms.export",
    "specviz.share": "specviz.rooms.share",
    "specviz.notebook": "specviz.rooms.notebook",
    # app: the Streamlit helpers, the runtime patches, serving and the command line
    "specviz.ui": "specviz.app.ui",
    "specviz.app_runtime": "specviz.app.runtime",
    "specviz.serve": "specviz.app.serve",
    "specviz.haproxy": "specviz.app.haproxy",
    "specviz.cli": "specviz.app.cli",
    "specviz.cli_files": "specviz.app.cli_files",
}

STAY = {"__init__.py", "__main__.py", "algorithms", "reference", "render"}  # specviz/ entries that stay put

# The new packages, lowest layer first, each with its __init__ docstring (one paragraph).
NEW_PACKAGES: dict[str, str] = {
    "specviz.base": (
        "The vocabulary every layer shares: errors, limits, paths, the escaping rules (safety), the\n"
        "result types, the input checks, the trace recorder, target probabilities and rollout parents.\n"
        "Imports nothing of specviz but base itself; every other package may import it."),
    "specviz.inputs": (
        "The inputs: the verify tree as a person draws it (model), the scenario and its validation,\n"
        "the edits the pages offer, and the names a scenario is shown by. May import base, reference\n"
        "and algorithms (the registry's metadata); never replay, render or above."),
    "specviz.replay": (
        "Run a scenario and replay its trace: the engine (inputs -> the chosen backend's result ->\n"
        "the commit view), typed events, frames, the one replay (steps), captions and words, the\n"
        "invariants, and the step player's data and frames. May import base, reference, kernels,\n"
        "algorithms, inputs and render; never rooms or app."),
    "specviz.rooms": (
        "The side rooms, each built on the pipeline below: the decoding loop, the three engines\n"
        "(SGLang, vLLM, transformers), the audit, the pitfall gallery, export, shareable links and\n"
        "Jupyter's display. May import everything below (base .. replay); never app."),
    "specviz.app": (
        "The app: the Streamlit helpers the pages share (ui), Streamlit's internals patched in one\n"
        "place (runtime), serving N workers behind HAProxy (serve) and the command line (cli). The\n"
        "top of specviz: may import every package; only pages/ and app.py import it."),
}

TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".ini", ".ipynb", ".sh", ".txt", ".yaml", ".yml", ".js", ".css", ".html", ".in"}
TEXT_NAMES = {"Dockerfile", "run"}  # .ci/run
KEEP_QUOTED = {"specviz.scenario", "specviz.player"}  # ids that look like module paths (format tag, component)
SELF = "tools/relayout.py"

DOTTED = re.compile(r"(?<![\w./-])specviz((?:\.\w+)+)")
ESCAPED = re.compile(r"(?<![\w./-])specviz((?:\\\.\w+)+)")  # inside a regular expression: specviz\.cli:main
PATHS = re.compile(r"(?<![\w./-])specviz((?:/\w+)+)")


def log(msg: str) -> None:
    print(msg)


def new_name(dotted: str) -> str:
    """``dotted`` with its longest moved prefix replaced (unchanged if none)."""
    parts = dotted.split(".")
    for k in range(len(parts), 1, -1):
        old = ".".join(parts[:k])
        if old in MOVES:
            return ".".join([MOVES[old]] + parts[k:])
    return dotted


def old_modules() -> set[str]:
    """Every module and package under specviz/ in the old layout, dotted."""
    out = set()
    for f in (ROOT / "specviz").rglob("*.py"):
        parts = list(f.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.add(".".join(parts))
    return out


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout.decode().split("\0")
    out = []
    for name in sorted(n for n in names if n):
        p = ROOT / name
        if name == SELF or not p.is_file() or p.is_symlink():
            continue
        if p.suffix in TEXT_SUFFIXES or (p.name in TEXT_NAMES and p.suffix == ""):
            out.append(p)
    return out


# ---- 1. relative imports inside specviz/ become absolute ------------------------------------------------

def absolutize(path: Path) -> str | None:
    text = path.read_text(encoding="utf-8")
    mod = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    if path.name == "__init__.py":
        pkg = pkg[:-1]  # mod ends in __init__
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = pkg[:len(pkg) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
            a = starts[node.lineno - 1] + node.col_offset
            seg = text[a:]
            m = re.match(r"from\s+\.+\s*[\w.]*\s+import\b", seg)
            assert m, (path, node.lineno)
            edits.append((a, a + m.end(), f"from {target} import"))
    if not edits:
        return None
    for a, b, new in sorted(edits, reverse=True):
        text = text[:a] + new + text[b:]
    return text


# ---- 2. references to moved modules -----------------------------------------------------------------------

def split_from_imports(text: str, modules: set[str]) -> str:
    """``from P import a, b`` where P.a is a moved module that lands elsewhere than P's new place:
    regenerate the statement as one ``from`` line per new parent (aliases keep the old names)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and not node.level and node.module
                and (node.module == "specviz" or node.module.startswith("specviz."))):
            continue
        groups: dict[str, list[str]] = {}
        needs = False
        for a in node.names:
            full = f"{node.module}.{a.name}"
            if full in modules and new_name(full) != full:
                new_full = new_name(full)
                parent, leaf = new_full.rsplit(".", 1)
                alias = a.asname or (a.name if leaf != a.name else None)
                groups.setdefault(parent, []).append(leaf + (f" as {alias}" if alias else ""))
                if parent != new_name(node.module) or leaf != a.name:
                    needs = True
            else:
                groups.setdefault(new_name(node.module), []).append(a.name + (f" as {a.asname}" if a.asname else ""))
        if not needs:
            continue  # the dotted rewrite below does it, keeping the statement's own layout
        a = starts[node.lineno - 1] + node.col_offset
        b = starts[node.end_lineno - 1] + node.end_col_offset
        indent = " " * node.col_offset
        stmt = ("\n" + indent).join(f"from {p} import {', '.join(ns)}" for p, ns in groups.items())
        edits.append((a, b, stmt))
    for a, b, new in sorted(edits, reverse=True):
        text = text[:a] + new + text[b:]
    return text


def rewrite_refs(text: str) -> str:
    def dotted(m: re.Match) -> str:
        s = m.group(0)
        if s in KEEP_QUOTED and m.start() > 0 and text[m.start() - 1] == '"' and text[m.end():m.end() + 1] == '"':
            return s
        return new_name(s)

    def path(m: re.Match) -> str:
        return new_name(m.group(0).replace("/", ".")).replace(".", "/")

    def escaped(m: re.Match) -> str:
        return new_name(m.group(0).replace("\\.", ".")).replace(".", "\\.")

    text = DOTTED.sub(dotted, text)
    text = ESCAPED.sub(escaped, text)
    return PATHS.sub(path, text)


# ---- 3. __file__ arithmetic in moved files ----------------------------------------------------------------

FILE_EXPR = re.compile(r"(Path\(__file__\)\.resolve\(\))(?:\.parents\[(\d+)\]|\.parent(?![s\w]))")


# ---- 4. the move ---------------------------------------------------------------------------------------

def unit_path(dotted: str) -> Path:
    """The file or folder of a module in the old layout."""
    p = ROOT / Path(*dotted.split("."))
    return p if p.is_dir() else p.with_suffix(".py")


def main(argv: list[str]) -> int:
    dry = "--dry-run" in argv
    missing = [o for o in MOVES if not unit_path(o).exists()]
    if missing:
        print(f"relayout: not the old layout (missing: {', '.join(missing)}); nothing done", file=sys.stderr)
        return 1
    moved_tops = {o.split(".")[1] for o in MOVES if o.count(".") == 1}
    unplaced = sorted(p.name for p in (ROOT / "specviz").iterdir()
                      if p.name not in STAY and p.name != "__pycache__" and p.name.removesuffix(".py") not in moved_tops)
    if unplaced:
        print(f"relayout: specviz/ holds entries the table does not place: {', '.join(unplaced)}; add each to MOVES "
              "(old dotted path -> its new package) and run again; nothing done", file=sys.stderr)
        return 1
    taken = [n for n in NEW_PACKAGES if unit_path(n).exists()]
    if taken:
        print(f"relayout: new packages already exist: {', '.join(taken)}; nothing done", file=sys.stderr)
        return 1
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.strip()
    if dirty and not dry:
        print("relayout: the tree has uncommitted changes; commit them first", file=sys.stderr)
        return 1
    modules = old_modules()
    changed: dict[Path, str] = {}

    for f in sorted((ROOT / "specviz").rglob("*.py")):
        new = absolutize(f)
        if new is not None:
            changed[f] = new
    log(f"1. relative imports made absolute in {len(changed)} files")

    for old, new in MOVES.items():
        unit = unit_path(old)
        new_unit = ROOT / Path(*new.split("."))
        for f in ([unit] if unit.is_file() else sorted(unit.rglob("*.py"))):
            text = changed.get(f, f.read_text(encoding="utf-8"))
            fixed = FILE_EXPR.sub(lambda m, f=f, u=unit, nu=new_unit: _fix(m, f, u, nu), text)
            if fixed != text:
                changed[f] = fixed
                log(f"3. __file__ parents re-counted in {f.relative_to(ROOT)}")

    n_refs = 0
    for f in tracked_text_files():
        text = changed.get(f, f.read_text(encoding="utf-8", errors="surrogateescape"))
        new = split_from_imports(text, modules) if f.suffix == ".py" else text
        new = rewrite_refs(new)
        if new != text:
            changed[f] = new
            n_refs += 1
    log(f"2. references to moved modules rewritten in {n_refs} files")

    if dry:
        for f in sorted(changed):
            log(f"   would change {f.relative_to(ROOT)}")
        for old, new in MOVES.items():
            log(f"   would git mv {unit_path(old).relative_to(ROOT)} -> {new}")
        return 0

    for f, text in sorted(changed.items()):
        f.write_text(text, encoding="utf-8", errors="surrogateescape")
    for pkg, doc in NEW_PACKAGES.items():
        d = ROOT / Path(*pkg.split("."))
        d.mkdir(parents=True)
        (d / "__init__.py").write_text(f'"""{doc}\n"""\n', encoding="utf-8")
        subprocess.run(["git", "add", str(d / "__init__.py")], cwd=ROOT, check=True)
        log(f"4. new package {pkg} (__init__.py with its docstring)")
    for old, new in MOVES.items():
        src = unit_path(old)
        dst = ROOT / Path(*new.split("."))
        if src.is_file():
            dst = dst.with_suffix(".py")
        dst.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", str(src.relative_to(ROOT)), str(dst.relative_to(ROOT))], cwd=ROOT, check=True)
        log(f"4. git mv {src.relative_to(ROOT)} {dst.relative_to(ROOT)}")
    subprocess.run(["git", "add", "-u"], cwd=ROOT, check=True)
    left = sorted(p.name for p in (ROOT / "specviz").iterdir() if p.name != "__pycache__")
    log(f"done: specviz/ holds {len(left)} entries: {' '.join(left)}")
    return 0


def _fix(m: re.Match, path: Path, old_unit: Path, new_unit: Path) -> str:
    n = int(m.group(2)) if m.group(2) is not None else 0
    target = path.parents[n]
    if target == old_unit or old_unit in target.parents:
        return m.group(0)  # inside the moved unit: moves with it
    shift = len(new_unit.parts) - len(old_unit.parts)
    return f"{m.group(1)}.parents[{n + shift}]"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
