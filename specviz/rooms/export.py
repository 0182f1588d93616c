"""Export: the scenario as JSON, the example as a ready-to-run pytest file, figures as SVG / PNG,
and the whole animation as ONE self-contained HTML file that plays offline (for slides).

    scenario_json(s)            -> str
    pytest_file(s)              -> str   (a test module calling specviz.reference; it passes)
    dot_to_svg(dot) / dot_to_png(dot)     -> bytes (needs Graphviz's ``dot`` binary: apt-get install -y graphviz)
    figure_to_png(fig) / figure_to_svg(fig) -> bytes (plotly; needs kaleido + a chromium; else SpecvizError saying so)
    figure_to_html(fig)         -> str   (plotly, offline: plotly.js inlined; always works)
    animation_html(s, lang)     -> str   (the step player, its frames inlined; no network)

No streamlit here.
"""
from __future__ import annotations

import ast
import functools
import json
import os
import re
import shutil
import subprocess
import textwrap

import numpy as np

from specviz import algorithms
from specviz.replay.captions import outcome_sentence, walk_summary
from specviz.algorithms import calls
from specviz.replay.engine import Run, run_scenario
from specviz.inputs.naming import display_name, file_stem
from specviz.base.errors import SpecvizError
from specviz.render.svg import have_dot as has_dot
from specviz.inputs.scenario import Scenario

# -- Scenario JSON -----------------------------------------------------------------------------


def scenario_json(s: Scenario) -> str:
    return s.to_json()


def _slug(name: str) -> str:
    """An ASCII identifier part (a test function's name) from any scenario name."""
    out = "".join(ch if ("a" <= ch <= "z" or "0" <= ch <= "9") else "_" for ch in name.lower()).strip("_")
    return out or "scenario"


# -- A ready-to-run pytest file ----------------------------------------------------------------


_INPUTS = ("candidates", "retrieve_index", "retrieve_next_token", "retrieve_next_sibling", "target_predict", "target_probs",
           "draft_probs", "uniform_samples", "uniform_samples_for_final_sampling", "seq_lens", "verify_lens")
_DSPARK_EXPECTED = ("correct_len", "bonus", "commit_lens", "new_seq_lens", "out_tokens")


def _arr(a: np.ndarray) -> str:
    a = np.asarray(a)
    body = json.dumps(a.tolist())
    dtype = {"int64": "np.int64", "int32": "np.int32", "float32": "np.float32", "float64": "np.float64"}.get(str(a.dtype), "None")
    return f"np.array({body}, dtype={dtype})"


def pytest_file(s: Scenario, run: Run | None = None) -> str:
    """A standalone test module for this example: the inputs in SGLang's tensor form (coins
    included), a call to the numpy reference, and the expected accept_index / outputs. It needs
    only specviz (and numpy, which it brings), and passes under pytest or as ``python FILE``."""
    run = run if run is not None else run_scenario(s, "numpy", with_trace=False)
    inp, res = run.inputs, run.result
    label = s.vocab
    # The docstring holds user text (title, description, labels): it is written as one Python
    # literal by repr(), never pasted between quotes, so no text can end it and become code.
    doc = [f"specviz example {display_name(s)!r}: {s.title or s.algorithm} (exported from specviz; SGLang 0.5.23 semantics).",
           "", *textwrap.wrap(s.description or "", 96), "",
           "Vocabulary (token id -> label): " + ", ".join(f"{i}={t}" for i, t in enumerate(label))]
    for c in run.commits:
        doc.append(f"Request {c.request}: input rows {c.accept_rows} ({' '.join(label[t] for t in c.committed_tokens)}) "
                   f"-> outputs {' '.join(label[t] for t in c.output_tokens)}; new_seq_len {c.new_seq_len}.")
    # The how-to is comment lines above the docstring: readable as the file's first lines. Its only
    # variable part is the file name, ASCII letters, digits and "_" (file_stem), so no text can leave the comment.
    howto = ["# " + line if line else "#" for line in RUN_HOWTO.format(file=f"test_{file_stem(s)}.py").splitlines()]
    lines = [*howto, "", repr("\n".join(doc) + "\n"), "import numpy as np", "", IMPORT_SPECVIZ, "", ""]
    lines.append(f"VOCAB = {list(label)!r}")
    for key in _INPUTS:
        if key in inp:
            lines.append(f"{key.upper()} = {_arr(inp[key])}")
    alg = algorithms.get(s.algorithm)  # an unknown algorithm is an error, never another algorithm's test
    call = calls.export_call(s)
    name = f"test_{_slug(file_stem(s))}"
    outputs = f"EXPECTED_OUTPUTS = {[[label[t] for t in c.output_tokens] for c in run.commits]!r}"
    if alg.family == "dspark":
        lines += ["", "", *(f"EXPECTED_{k.upper()} = {json.dumps(np.asarray(res[k]).tolist())}"
                            for k in _DSPARK_EXPECTED), outputs, "", "",
                  f"def {name}():",
                  f"    raw_correct_len, bonus = {call}",
                  "    correct_len, _trim = ref.cap_correct_len(raw_correct_len, VERIFY_LENS)",
                  "    if not np.array_equal(correct_len, raw_correct_len):  # the window cap re-reads the bonus",
                  ("        bonus = ref.dspark_bonus_at(correct_len, target_predict=TARGET_PREDICT)" if alg.decision == "greedy"
                   else "        bonus = EXPECTED_BONUS  # two-level gather at the capped length (see SEMANTICS.md §8)"),
                  "    commit_lens, new_seq_lens = ref.finalize_accept_lens(correct_len, SEQ_LENS)",
                  "    out_tokens = ref.build_out_tokens(CANDIDATES[:, 1:], correct_len, bonus)",
                  "    assert correct_len.tolist() == EXPECTED_CORRECT_LEN",
                  "    assert np.asarray(bonus).tolist() == EXPECTED_BONUS",
                  "    assert commit_lens.tolist() == EXPECTED_COMMIT_LENS",
                  "    assert new_seq_lens.tolist() == EXPECTED_NEW_SEQ_LENS",
                  "    assert out_tokens.tolist() == EXPECTED_OUT_TOKENS",
                  "    # only the first commit_lens entries of out_tokens are output",
                  "    outputs = [[VOCAB[t] for t in out_tokens[b][:commit_lens[b]]] for b in range(len(commit_lens))]"]
    else:
        lines += ["", "",
                  f"EXPECTED_ACCEPT_INDEX = {json.dumps(np.asarray(res['accept_index']).tolist())}  # [bs, W], global rows, -1 padded",
                  f"EXPECTED_ACCEPT_TOKEN_NUM = {json.dumps(np.asarray(res['accept_token_num']).tolist())}  # accepted drafts per request",
                  f"EXPECTED_PREDICTS = {json.dumps(np.asarray(res['predicts']).tolist())}  # [bs*n]",
                  outputs + "  # accepted drafts + bonus", "", "",
                  f"def {name}():",
                  f"    res = {call}",
                  "    assert res.accept_index.tolist() == EXPECTED_ACCEPT_INDEX",
                  "    assert res.accept_token_num.tolist() == EXPECTED_ACCEPT_TOKEN_NUM",
                  "    assert res.predicts.tolist() == EXPECTED_PREDICTS",
                  "    # outputs = predicts over the valid prefix of accept_index (accept_lens = k + 1 slots; never gather a -1 pad)",
                  "    accept_lens = res.accept_token_num + 1",
                  f"    outputs = [[VOCAB[res.predicts[r]] for r in res.accept_index[b][:accept_lens[b]]] for b in range({len(s.requests)})]"]
    lines += ["    assert outputs == EXPECTED_OUTPUTS", "", "", run_directly(name), ""]
    return check_pytest_source("\n".join(lines))


# How to run an exported file, in its header (``{file}``: the name the download button gives it).
RUN_HOWTO = """A specviz example exported as a test (SGLang 0.5.23 accept semantics).

How to run it: this file needs Python 3.10+ and specviz (numpy comes with it); pytest is optional.
Install specviz from its repository checkout (the folder holding pyproject.toml), then run this
file from any folder:

    python -m pip install /path/to/specviz        (or: pip install -e /path/to/specviz)
    python {file}                 (runs the test, prints "1 passed"; an AssertionError if it fails)

With pytest installed (python -m pip install pytest), pytest runs it too:
    python -m pytest -q {file}

With the repository's own virtualenv (README, command 1, which installs no pytest):
    /path/to/specviz/.venv/bin/python {file}"""


def run_directly(test_name: str) -> str:
    """The file's last lines: ``python FILE`` runs its one test without pytest."""
    return (f'if __name__ == "__main__":  # python FILE: no pytest needed\n'
            f"    {test_name}()\n"
            f'    print("1 passed")')


# The import of specviz: when it is not installed, one ImportError that says how to install it
# (never a skip: a test that cannot run must not look like a pass).
IMPORT_SPECVIZ = """try:
    from specviz import reference as ref
except ModuleNotFoundError as exc:
    if exc.name != "specviz":
        raise
    raise ImportError("this test needs the specviz package, which this Python cannot import: install it from the specviz "
                      "repository checkout with `python -m pip install /path/to/specviz`, then run this file again "
                      "(`python FILE`)") from exc"""


# the only names a generated file may assign (what pytest_file writes)
_PYTEST_NAMES = {"VOCAB", *(k.upper() for k in _INPUTS), *(f"EXPECTED_{k.upper()}" for k in _DSPARK_EXPECTED),
                 "EXPECTED_OUTPUTS", "EXPECTED_ACCEPT_INDEX", "EXPECTED_ACCEPT_TOKEN_NUM", "EXPECTED_PREDICTS"}
_NP_DTYPES = {"int64", "int32", "float32", "float64"}
_FUNCTION_STRINGS = {"0.5.23", "earlier"}  # the only text literals the test function itself may hold (semantics)


def _is_literal(node) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _is_np_array(node) -> bool:
    """``np.array(<literal>, dtype=np.<int64|int32|float32|float64> | None)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "array"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "np" and len(node.args) == 1
            and _is_literal(node.args[0]) and len(node.keywords) == 1 and node.keywords[0].arg == "dtype"):
        return False
    d = node.keywords[0].value
    return (isinstance(d, ast.Constant) and d.value is None) or (
        isinstance(d, ast.Attribute) and isinstance(d.value, ast.Name) and d.value.id == "np" and d.attr in _NP_DTYPES)


def check_pytest_source(source: str) -> str:
    """Parse a generated test module with ``ast`` and refuse (SpecvizError) any shape but the expected
    one: docstring, the fixed imports, literal constants, one argument-free ``test_*`` function whose only
    text literals are the semantics names, and optionally the fixed ``run_directly`` block. Returns ``source``."""
    def refuse(why):
        raise SpecvizError("export", f"the generated pytest file was refused ({why}): please report this scenario")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        refuse(f"it does not parse: {exc.msg}")
    body = tree.body
    if len(body) < 4 or not (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                             and isinstance(body[0].value.value, str)):
        refuse("no docstring first")
    if ast.dump(body[1]) != ast.dump(ast.parse("import numpy as np").body[0]) or \
            ast.dump(body[2]) != ast.dump(ast.parse(IMPORT_SPECVIZ).body[0]):
        refuse("unexpected imports")
    *consts, fn = body[3:]
    main = None
    if consts and isinstance(fn, ast.If):  # the fixed ``run_directly`` block after the test function
        main, (*consts, fn) = fn, consts
    for node in consts:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in _PYTEST_NAMES and (_is_literal(node.value) or _is_np_array(node.value))):
            refuse(f"unexpected statement at line {getattr(node, 'lineno', '?')}")
    if not (isinstance(fn, ast.FunctionDef) and re.fullmatch(r"test_[a-z0-9_]+", fn.name) and not fn.decorator_list
            and not (fn.args.args or fn.args.posonlyargs or fn.args.kwonlyargs or fn.args.vararg or fn.args.kwarg)):
        refuse("the last statement is not one test function")
    if main is not None and ast.dump(main) != ast.dump(ast.parse(run_directly(fn.name)).body[0]):
        refuse(f"unexpected statement at line {main.lineno}")
    for node in ast.walk(fn):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value not in _FUNCTION_STRINGS:
            refuse(f"text {node.value[:20]!r} inside the test function")
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Lambda, ast.FunctionDef, ast.ClassDef)) \
                and node is not fn:
            refuse("an import or definition inside the test function")
    return source


# -- Figures -----------------------------------------------------------------------------------

GRAPHVIZ_HINT = "needs Graphviz's dot binary, which is not installed here: apt-get install -y graphviz (or use the SVG the browser draws)"


def _dot(dot: str, fmt: str) -> bytes:
    if not has_dot():
        raise SpecvizError("export", f"{fmt.upper()} export {GRAPHVIZ_HINT}")
    try:
        out = subprocess.run(["dot", f"-T{fmt}"], input=dot.encode("utf-8"), capture_output=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        raise SpecvizError("export", "Graphviz took longer than 60 s: the figure is too large to export") from None
    if out.returncode != 0:
        msg = out.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
        raise SpecvizError("export", f"Graphviz could not draw the figure ({msg[0] if msg else 'no message'})")
    return out.stdout


_ACTIVE_SVG = re.compile(rb"""(?:href|xlink:href)\s*=\s*["']?\s*(?:javascript|data|vbscript):|<script|\son[a-z]+\s*=""", re.I)


def dot_to_svg(dot: str) -> bytes:
    """A DOT figure (tree, walk) as SVG bytes. Refused (SpecvizError) if the SVG would carry a
    script, an event handler or a javascript:/data: link (the builders never emit one: every label
    and attribute goes through specviz.base.safety.dot_quote; this is the last check before a file)."""
    svg = _dot(dot, "svg")
    if _ACTIVE_SVG.search(svg):
        raise SpecvizError("export", "the SVG would contain a script or a javascript: link: refused")
    return svg


def dot_to_png(dot: str) -> bytes:
    """A DOT figure as PNG bytes (Graphviz's default resolution)."""
    return _dot(dot, "png")


@functools.lru_cache(maxsize=1)
def _chromium_path() -> str | None:
    """The Chromium kaleido would drive (BROWSER_PATH, PATH, typical install paths), or None."""
    try:
        from choreographer.browsers.chromium import Chromium  # kaleido's browser driver  # noqa: PLC0415

        return Chromium.find_browser(skip_local=False)
    except Exception:  # noqa: BLE001  another choreographer version: look on PATH ourselves
        return os.environ.get("BROWSER_PATH") or next(
            (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome", "chrome")) if p), None)


def kaleido_problem() -> str | None:
    """Why plotly figures cannot be exported as PNG / SVG here (kaleido >= 1.0 renders in a Chromium it
    finds on the machine), or None when they can."""
    try:
        import kaleido  # noqa: F401, PLC0415
    except ImportError:
        return "plotly PNG/SVG export needs the kaleido package (pip install kaleido) and a chromium; it is not installed here"
    if _chromium_path() is None:
        return "plotly PNG/SVG export needs a Chromium for kaleido, and none was found (apt-get install -y chromium)"
    return None


def _plotly_image(fig, **kw) -> bytes:
    """~2 s: kaleido starts a Chromium."""
    why = kaleido_problem()
    if why:
        raise SpecvizError("export", why + ": use the camera icon on the chart, or export the chart as HTML")
    return fig.to_image(**kw)


def figure_to_png(fig) -> bytes:
    """A plotly figure as PNG bytes (2x scale, for slides)."""
    return _plotly_image(fig, format="png", scale=2)


def figure_to_svg(fig) -> bytes:
    return _plotly_image(fig, format="svg")


def figure_to_html(fig) -> str:
    """A plotly figure as one offline HTML file (plotly.js inlined)."""
    return fig.to_html(include_plotlyjs=True, full_html=True)


# -- The animation as one self-contained HTML file ---------------------------------------------

def animation_html(s: Scenario, lang: str = "en") -> str:
    """The scenario's step player as one HTML file that plays offline (for slides): the app's player
    module (``specviz.replay.player``) with the frames its page shows (``specviz.replay.playframes.frames_for``) inlined
    as data. Figures are laid out by ``dot`` when it is installed here, else by Graphviz in WebAssembly
    inlined in the file. Arrow keys step, space plays, ``#play`` in the URL starts playing. Every
    user-controlled string (title, description, labels) travels only inside the JSON data."""
    from specviz.replay.player import labels, laid_out, standalone_html, tr_for
    from specviz.replay.playframes import frames_for

    run = run_scenario(s, "numpy")
    if run.trace is None or not run.trace.events:
        raise SpecvizError("export", "this scenario records no trace events to animate")
    data = laid_out(frames_for(s, run, lang), labels=labels(tr_for(lang)))
    commit = run.commits[0]
    # derived from the live result and the live inputs ("(edited)" once they differ from the preset), never preset text
    title = f"specviz · {display_name(s, lang)}: {walk_summary(s, commit, lang)}"
    desc = " ".join(x for x in (s.describe(lang), outcome_sentence(s, commit, lang)) if x)
    return standalone_html(data, title=title, desc=desc, lang=lang)
