"""Export: the scenario as JSON, the example as a ready-to-run pytest file, figures as SVG / PNG,
and the whole animation as ONE self-contained HTML file that plays offline (for slides).

    scenario_json(s)            -> str
    pytest_file(s)              -> str   (a test module calling specviz.reference; it passes)
    dot_to_svg(dot) / dot_to_png(dot)     -> bytes (needs Graphviz's ``dot`` binary: apt-get install -y graphviz)
    figure_to_png(fig) / figure_to_svg(fig) -> bytes (plotly; needs kaleido + a chromium; else SpecvizError saying so)
    figure_to_html(fig)         -> str   (plotly, offline: plotly.js inlined; always works)
    animation_html(s)           -> str   (inline SVG frames + inline JS, no network)

No streamlit here.
"""
from __future__ import annotations

import ast
import functools
import html
import json
import os
import re
import shutil
import subprocess
import textwrap

import numpy as np

from . import algorithms
from .captions import outcome_sentence, plain, walk_summary
from .steps import replay_steps
from .algorithms import calls
from .engine import Run, run_scenario
from .naming import display_name, file_stem
from .errors import SpecvizError
from .render.palette import FONT_FAMILY, PALETTE, state_color, text_on
from .safety import json_for_script
from .scenario import Scenario

# ---------------------------------------------------------------------------------------------
# Scenario JSON
# ---------------------------------------------------------------------------------------------


def scenario_json(s: Scenario) -> str:
    return s.to_json()


def _slug(name: str) -> str:
    """An ASCII identifier part (a test function's name) from any scenario name."""
    out = "".join(ch if ("a" <= ch <= "z" or "0" <= ch <= "9") else "_" for ch in name.lower()).strip("_")
    return out or "scenario"


def _py_literal(text: str) -> str:
    """A Python string literal for ``text`` (repr: quotes, backslashes and newlines escaped)."""
    return repr(str(text))


# ---------------------------------------------------------------------------------------------
# A ready-to-run pytest file
# ---------------------------------------------------------------------------------------------


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
    bs = len(s.requests)
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
    lines = [*howto, "", _py_literal("\n".join(doc) + "\n"), "import numpy as np", "", IMPORT_SPECVIZ, "", ""]
    lines.append(f"VOCAB = {list(label)!r}")
    for key in ("candidates", "retrieve_index", "retrieve_next_token", "retrieve_next_sibling", "target_predict",
                "target_probs", "draft_probs", "uniform_samples", "uniform_samples_for_final_sampling", "seq_lens",
                "verify_lens"):
        if key in inp:
            lines.append(f"{key.upper()} = {_arr(inp[key])}")
    W = s.width
    exp_outputs = [list(c.output_tokens) for c in run.commits]
    lines += ["", ""]
    alg = algorithms.get(s.algorithm)  # an unknown algorithm is an error, never another algorithm's test
    call = calls.export_call(s)
    if alg.family == "dspark":
        lines += [f"EXPECTED_CORRECT_LEN = {json.dumps(np.asarray(res['correct_len']).tolist())}",
                  f"EXPECTED_BONUS = {json.dumps(np.asarray(res['bonus']).tolist())}",
                  f"EXPECTED_COMMIT_LENS = {json.dumps(np.asarray(res['commit_lens']).tolist())}",
                  f"EXPECTED_NEW_SEQ_LENS = {json.dumps(np.asarray(res['new_seq_lens']).tolist())}",
                  f"EXPECTED_OUT_TOKENS = {json.dumps(np.asarray(res['out_tokens']).tolist())}",
                  f"EXPECTED_OUTPUTS = {[[label[t] for t in o] for o in exp_outputs]!r}",
                  "", ""]
        lines += [f"def test_{_slug(file_stem(s))}():",
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
                  "    outputs = [[VOCAB[t] for t in out_tokens[b][:commit_lens[b]]] for b in range(len(commit_lens))]",
                  "    assert outputs == EXPECTED_OUTPUTS", "", "", run_directly(f"test_{_slug(file_stem(s))}"), ""]
        return check_pytest_source("\n".join(lines))
    lines += [f"EXPECTED_ACCEPT_INDEX = {json.dumps(np.asarray(res['accept_index']).tolist())}  # [bs, W], global rows, -1 padded",
              f"EXPECTED_ACCEPT_TOKEN_NUM = {json.dumps(np.asarray(res['accept_token_num']).tolist())}  # accepted drafts per request",
              f"EXPECTED_PREDICTS = {json.dumps(np.asarray(res['predicts']).tolist())}  # [bs*n]",
              f"EXPECTED_OUTPUTS = {[[label[t] for t in o] for o in exp_outputs]!r}"
              "  # accepted drafts + bonus",
              "", ""]
    lines += [f"def test_{_slug(file_stem(s))}():",
              f"    res = {call}",
              "    assert res.accept_index.tolist() == EXPECTED_ACCEPT_INDEX",
              "    assert res.accept_token_num.tolist() == EXPECTED_ACCEPT_TOKEN_NUM",
              "    assert res.predicts.tolist() == EXPECTED_PREDICTS",
              "    # outputs = predicts over the valid prefix of accept_index (accept_lens = k + 1 slots; never gather a -1 pad)",
              "    accept_lens = res.accept_token_num + 1",
              f"    outputs = [[VOCAB[res.predicts[r]] for r in res.accept_index[b][:accept_lens[b]]] for b in range({bs})]",
              "    assert outputs == EXPECTED_OUTPUTS", "", "", run_directly(f"test_{_slug(file_stem(s))}"), ""]
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


_PYTEST_NAMES = {"VOCAB", "CANDIDATES", "RETRIEVE_INDEX", "RETRIEVE_NEXT_TOKEN", "RETRIEVE_NEXT_SIBLING", "TARGET_PREDICT",
                 "TARGET_PROBS", "DRAFT_PROBS", "UNIFORM_SAMPLES", "UNIFORM_SAMPLES_FOR_FINAL_SAMPLING", "SEQ_LENS",
                 "VERIFY_LENS", "EXPECTED_CORRECT_LEN", "EXPECTED_BONUS", "EXPECTED_COMMIT_LENS", "EXPECTED_NEW_SEQ_LENS",
                 "EXPECTED_OUT_TOKENS", "EXPECTED_OUTPUTS", "EXPECTED_ACCEPT_INDEX", "EXPECTED_ACCEPT_TOKEN_NUM",
                 "EXPECTED_PREDICTS"}
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
    """Parse a generated test module with ``ast`` and refuse any shape other than the expected one:
    a docstring, ``import numpy as np``, ``from specviz import reference as ref`` (in the fixed
    ``IMPORT_SPECVIZ`` block that names the install command when specviz is missing), constants that are
    plain literals (or ``np.array(literal, dtype=...)``), and one argument-free ``test_*`` function
    whose only text literals are the semantics names, optionally followed by the fixed ``run_directly``
    block that calls it. Returns ``source``; raises SpecvizError."""
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


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------

GRAPHVIZ_HINT = "needs Graphviz's dot binary, which is not installed here: apt-get install -y graphviz (or use the SVG the browser draws)"


def has_dot() -> bool:
    from .render.svg import have_dot

    return have_dot()


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
    and attribute goes through specviz.safety.dot_quote; this is the last check before a file)."""
    svg = _dot(dot, "svg")
    if _ACTIVE_SVG.search(svg):
        raise SpecvizError("export", "the SVG would contain a script or a javascript: link: refused")
    return svg


def dot_to_png(dot: str) -> bytes:
    """A DOT figure as PNG bytes (150 dpi, for slides)."""
    return _dot(dot.replace("digraph", "digraph", 1), "png")


def _kaleido_ready() -> str | None:
    try:
        import kaleido  # noqa: F401, PLC0415
    except ImportError:
        return "plotly PNG/SVG export needs the kaleido package (pip install kaleido) and a chromium; it is not installed here"
    return None


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
    """Why plotly figures cannot be exported as PNG / SVG here, or None when they can.

    kaleido (>= 1.0) renders in a Chromium it finds on the machine (Debian: apt-get install -y chromium).
    """
    why = _kaleido_ready()
    if why:
        return why
    if _chromium_path() is None:
        return "plotly PNG/SVG export needs a Chromium for kaleido, and none was found (apt-get install -y chromium)"
    return None


def figure_to_png(fig) -> bytes:
    """A plotly figure as PNG bytes (2x scale, for slides; ~2 s: kaleido starts a Chromium)."""
    why = kaleido_problem()
    if why:
        raise SpecvizError("export", why + ": use the camera icon on the chart, or export the chart as HTML")
    return fig.to_image(format="png", scale=2)


def figure_to_svg(fig) -> bytes:
    """A plotly figure as SVG bytes (~2 s: kaleido starts a Chromium)."""
    why = kaleido_problem()
    if why:
        raise SpecvizError("export", why + ": use the camera icon on the chart, or export the chart as HTML")
    return fig.to_image(format="svg")


def figure_to_html(fig) -> str:
    """A plotly figure as one offline HTML file (plotly.js inlined)."""
    return fig.to_html(include_plotlyjs=True, full_html=True)


# ---------------------------------------------------------------------------------------------
# The animation as one self-contained HTML file
# ---------------------------------------------------------------------------------------------

NODE_W, NODE_H, GAP_X, GAP_Y = 78, 52, 22, 46
MARK = {"accepted": "✓", "rejected": "✗", "current": "●", "compared": "?", "bonus": "★"}


def _layout(parents) -> dict:
    """Tidy layout: leaves at consecutive x slots (children in sibling order), parents centred."""
    n = len(parents)
    kids = {i: [c for c in range(1, n) if parents[c] == i] for i in range(n)}
    depth = [0] * n
    for i in range(1, n):
        depth[i] = depth[parents[i]] + 1
    x: dict = {}
    nxt = [0]

    def place(i):
        if not kids[i]:
            x[i] = nxt[0]
            nxt[0] += 1
        else:
            for c in kids[i]:
                place(c)
            x[i] = (x[kids[i][0]] + x[kids[i][-1]]) / 2
    place(0)
    return {i: (x[i], depth[i]) for i in range(n)}, nxt[0], max(depth) + 1


def _el(tag: str, attrs: dict, *children) -> list:
    """One SVG element as data: [tag, {attribute: value}, [child elements or text]]. The player
    builds it with createElementNS / setAttribute / text nodes: text is never parsed as markup."""
    return [tag, {k: (f"{v:.1f}" if isinstance(v, float) else str(v)) for k, v in attrs.items()}, list(children)]


def _svg_frame(s: Scenario, layouts, req_states, bonuses, row_word: str) -> list:
    """One frame as an element tree: every request's tree side by side (tooltips via <title>)."""
    parts, x0, height = [], 10, 0
    n = s.n
    for b in range(len(s.requests)):
        pos, width_slots, depth = layouts[b]
        tree = s.tree(b)
        bonus = bonuses[b]
        width_slots = max(width_slots, 1)

        def cx(i):
            return float(x0 + pos[i][0] * (NODE_W + GAP_X) + NODE_W / 2)

        def cy(i):
            return float(40 + pos[i][1] * (NODE_H + GAP_Y) + NODE_H / 2)
        if len(s.requests) > 1:
            parts.append(_el("text", {"x": x0, "y": 22, "font-size": 18, "fill": "#333"}, f"request {b}"))
        for i in range(1, n):
            p = tree.parents[i]
            faded = req_states[b].get(i) == "discarded"
            parts.append(_el("line", {"x1": cx(p), "y1": cy(p) + NODE_H / 2, "x2": cx(i), "y2": cy(i) - NODE_H / 2,
                                      "stroke": "#BBBBBB" if faded else PALETTE["edge"], "stroke-width": 2}))
        for i in range(n):
            state = req_states[b].get(i, "pending")
            fill = state_color(state)
            tok = s.label(tree.tokens[i])
            mark = MARK.get(state, "")
            row = b * n + i
            rect = {"x": cx(i) - NODE_W / 2, "y": cy(i) - NODE_H / 2, "width": NODE_W, "height": NODE_H, "rx": 10,
                    "fill": fill, "stroke": PALETTE["edge"], "stroke-width": 2}
            if state == "discarded":
                rect["stroke-dasharray"] = "5,4"
            parts.append(_el("g", {"class": "node", "data-node": f"{b}:{i}", "data-state": state},
                             _el("title", {}, f"{tok} · node {i} · {row_word} {row} · {state}"),
                             _el("rect", rect),
                             _el("text", {"x": cx(i), "y": cy(i) - 3, "text-anchor": "middle", "font-size": 20,
                                          "font-weight": "bold", "fill": text_on(fill)}, f"{tok} {mark}"),
                             _el("text", {"x": cx(i), "y": cy(i) + 18, "text-anchor": "middle", "font-size": 14,
                                          "fill": text_on(fill)}, f"{row_word} {row}")))
        if bonus:
            node, tok_id = bonus
            # Beside the last accepted row, right of every node at its depth: the token emitted after it.
            same_depth = [i for i in range(n) if pos[i][1] == pos[node][1]]
            bx = float(x0 + (max(pos[i][0] for i in same_depth) + 1) * (NODE_W + GAP_X) + NODE_W / 2)
            by = cy(node)
            width_slots = max(width_slots, max(pos[i][0] for i in same_depth) + 2)
            fill = state_color("bonus")
            # a dashed curve under the row's siblings, from the node's bottom to the bonus's bottom
            y0 = by + NODE_H / 2
            parts.append(_el("path", {"d": f"M {cx(node):.1f} {y0:.1f} Q {(cx(node) + bx) / 2:.1f} {y0 + 34:.1f} {bx:.1f} {y0:.1f}",
                                      "fill": "none", "stroke": fill, "stroke-width": 3, "stroke-dasharray": "6,4"}))
            label = s.label(tok_id)
            parts.append(_el("g", {"class": "bonus"},
                             _el("title", {}, f"bonus {label}"),
                             _el("rect", {"x": bx - NODE_W / 2, "y": by - NODE_H / 2, "width": NODE_W, "height": NODE_H,
                                          "rx": 10, "fill": fill, "stroke": "#000", "stroke-width": 2}),
                             _el("text", {"x": bx, "y": by - 3, "text-anchor": "middle", "font-size": 20,
                                          "font-weight": "bold"}, f"{label} ★"),
                             _el("text", {"x": bx, "y": by + 18, "text-anchor": "middle", "font-size": 14}, "bonus")))
        x0 += width_slots * (NODE_W + GAP_X) + 40
        height = max(height, 40 + depth * (NODE_H + GAP_Y) + 30)
    return _el("svg", {"width": f"{x0:.0f}", "height": f"{height:.0f}", "viewBox": f"0 0 {x0:.0f} {height:.0f}",
                       "font-family": FONT_FAMILY}, *parts)


def svg_markup(element) -> str:
    """An element tree of ``_svg_frame`` as SVG text (every text and attribute escaped): for
    tests and debugging; the HTML player never parses markup."""
    if isinstance(element, str):
        return html.escape(element, quote=False)
    tag, attrs, children = element
    a = "".join(f' {k}="{html.escape(v, quote=True)}"' for k, v in attrs.items())
    if tag == "svg":
        a = ' xmlns="http://www.w3.org/2000/svg"' + a
    return f"<{tag}{a}>" + "".join(svg_markup(c) for c in children) + f"</{tag}>"


def animation_frames(s: Scenario, lang: str = "en") -> list[dict]:
    """Per frame: {"svg", "text", "arrays"} (pure data; the HTML export and tests use it).

    "svg" is an element tree ``[tag, {attr: value}, [children]]`` (see ``svg_markup``)."""
    run = run_scenario(s, "numpy")
    if run.trace is None or not run.trace.events:
        raise SpecvizError("export", "this scenario records no trace events to animate")
    layouts = [_layout(s.tree(b).parents) for b in range(len(s.requests))]
    row_word = "行" if lang == "zh" else "row"
    out = []
    for st_ in replay_steps(s, run):  # the one replay: node states, bonus and caption per step
        req_states = [dict(w.states) for w in st_.walks]
        bonuses = [w.bonus for w in st_.walks]
        arrays = {name: np.asarray(a).tolist() for name, a in st_.arrays.items() if name != "draft_probs"}
        out.append({"svg": _svg_frame(s, layouts, req_states, bonuses, row_word), "text": plain(st_.caption[lang if lang == "zh" else "en"]),
                    "arrays": arrays})
    return out


# The page is fixed text with ONE slot, __DATA__, filled last with JSON escaped for a script
# context (specviz.safety.json_for_script). The player puts every piece of data on the page as
# text nodes and attribute values (textContent, createElementNS, setAttribute), never as markup.
_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>specviz</title>
<style>
 body { font-family: Helvetica, Arial, 'Noto Sans CJK SC', 'Microsoft YaHei', sans-serif; font-size: 20px; margin: 24px; color: #111; background: #fff; }
 h1 { font-size: 28px; margin: 0 0 6px 0; } .sub { color: #555; margin-bottom: 14px; max-width: 70em; white-space: pre-wrap; }
 .controls { display: flex; gap: 8px; align-items: center; margin: 12px 0; flex-wrap: wrap; }
 button { font-size: 20px; padding: 6px 14px; border-radius: 8px; border: 2px solid #444; background: #f4f4f4; cursor: pointer;
          display: inline-flex; align-items: center; gap: 6px; min-height: 44px; }
 /* Icons are inline SVG, the same as the app's player: no glyph (such as ⏮ ⏭) that a machine without an emoji font lacks. */
 button svg { width: 24px; height: 24px; fill: currentColor; }
 input[type=range] { width: 360px; } #step { min-width: 8em; font-family: ui-monospace, monospace; }
 #text { font-size: 22px; min-height: 2.6em; padding: 10px 14px; background: #F7F7F7; border-left: 6px solid #0072B2; margin: 10px 0; max-width: 60em; }
 #arrays { font-family: ui-monospace, monospace; font-size: 18px; white-space: pre; background: #fafafa; padding: 10px; border: 1px solid #ddd; display: inline-block; }
 .legend span { display: inline-block; padding: 2px 10px; margin-right: 6px; border-radius: 6px; font-size: 16px; }
</style></head><body>
<h1 id="title"></h1><div class="sub" id="desc"></div>
<div class="legend" id="legend"></div>
<div class="controls">
 <button id="first"><svg viewBox="0 0 24 24" aria-hidden="true"><path d="M6 6h2v12H6zm3.5 6 8.5 6V6z"/></svg></button>
 <button id="prev"><svg viewBox="0 0 24 24" aria-hidden="true"><path d="M15.4 7.4 14 6l-6 6 6 6 1.4-1.4L10.8 12z"/></svg></button>
 <button id="play"><svg viewBox="0 0 24 24" aria-hidden="true" id="icon-play"><path d="M8 5v14l11-7z"/></svg><svg viewBox="0 0 24 24" aria-hidden="true" id="icon-pause" style="display:none"><path d="M6 19h4V5H6v14zm8-14v14h4V5h-4z"/></svg><span id="playword"></span></button>
 <button id="next"><svg viewBox="0 0 24 24" aria-hidden="true"><path d="M8.6 16.6 10 18l6-6-6-6-1.4 1.4 4.6 4.6z"/></svg></button>
 <button id="last"><svg viewBox="0 0 24 24" aria-hidden="true"><path d="m6 18 8.5-6L6 6v12zM16 6v12h2V6h-2z"/></svg></button>
 <input id="scrub" type="range" min="0" max="0" value="0"><span id="step"></span>
 <label><span id="speedword"></span> <select id="speed"><option>0.5</option><option selected>1</option><option>2</option><option>4</option></select></label>
</div>
<div id="text"></div>
<div id="stage"></div>
<div id="arrays"></div>
<script id="data" type="application/json">__DATA__</script>
<script>
(function () {
  var DATA = JSON.parse(document.getElementById('data').textContent);
  var frames = DATA.frames, W = DATA.words;
  var SVGNS = 'http://www.w3.org/2000/svg';
  var TAGS = {svg: 1, g: 1, line: 1, rect: 1, text: 1, title: 1, path: 1};
  function el(id) { return document.getElementById(id); }
  document.documentElement.lang = DATA.lang;
  document.title = DATA.title;
  el('title').textContent = DATA.title; el('desc').textContent = DATA.desc;
  el('speedword').textContent = W.speed;
  DATA.legend.forEach(function (item) {
    var span = document.createElement('span');
    span.style.background = item[0]; span.style.color = item[1]; span.textContent = item[2];
    el('legend').appendChild(span);
  });
  function build(node) {  // data -> DOM; text stays text, only known tags, no event or link attributes
    if (typeof node === 'string') { return document.createTextNode(node); }
    if (!TAGS[node[0]]) { return document.createTextNode(''); }
    var e = document.createElementNS(SVGNS, node[0]), attrs = node[1];
    for (var k in attrs) {
      if (Object.prototype.hasOwnProperty.call(attrs, k) && !/^on|href|^style$/i.test(k)) { e.setAttribute(k, String(attrs[k])); }
    }
    (node[2] || []).forEach(function (c) { e.appendChild(build(c)); });
    return e;
  }
  var i = 0, timer = null;
  var stage = el('stage'), text = el('text'), arrays = el('arrays'), scrub = el('scrub'), stepEl = el('step'), play = el('play');
  scrub.max = frames.length - 1;
  [['first', W.first], ['prev', W.back], ['next', W.next], ['last', W.last]].forEach(function (b) {
    el(b[0]).title = b[1]; el(b[0]).setAttribute('aria-label', b[1]);
  });
  function playState(on) {
    el('playword').textContent = on ? W.pause : W.play; play.title = on ? W.pause : W.play;
    el('icon-play').style.display = on ? 'none' : ''; el('icon-pause').style.display = on ? '' : 'none';
  }
  playState(false);
  function show(k) {
    i = Math.max(0, Math.min(frames.length - 1, k));
    var f = frames[i];
    while (stage.firstChild) { stage.removeChild(stage.firstChild); }
    stage.appendChild(build(f.svg)); text.textContent = f.text;
    var lines = [DATA.vocab]; for (var name in f.arrays) { lines.push(name + ' = ' + JSON.stringify(f.arrays[name])); }
    arrays.textContent = lines.join('\\n');
    scrub.value = i; stepEl.textContent = W.step + ' ' + i + ' / ' + (frames.length - 1);
    document.body.setAttribute('data-step', i);
  }
  function stop() { if (timer) { clearInterval(timer); timer = null; } playState(false); }
  function start() {
    if (i >= frames.length - 1) { show(0); }
    var speed = parseFloat(el('speed').value) || 1;
    timer = setInterval(function () { if (i >= frames.length - 1) { stop(); } else { show(i + 1); } }, 1000 / speed);
    playState(true);
  }
  play.onclick = function () { if (timer) { stop(); } else { start(); } };
  el('first').onclick = function () { stop(); show(0); };
  el('last').onclick = function () { stop(); show(frames.length - 1); };
  el('prev').onclick = function () { stop(); show(i - 1); };
  el('next').onclick = function () { stop(); show(i + 1); };
  scrub.oninput = function () { var k = parseInt(scrub.value, 10); stop(); show(k); };
  document.addEventListener('keydown', function (e) {
    if (e.key === 'ArrowRight') { stop(); show(i + 1); } else if (e.key === 'ArrowLeft') { stop(); show(i - 1); }
    else if (e.key === ' ') { e.preventDefault(); play.onclick(); }
  });
  show(0);
  if (location.hash === '#play') { start(); }
})();
</script></body></html>
"""


def animation_html(s: Scenario, lang: str = "en") -> str:
    """The whole accept walk as one HTML file: SVG frames as data, inline JS controls, no network.

    Open it in any browser, offline (arrow keys step, space plays); ``#play`` in the URL starts playing.
    Every user-controlled string (title, description, labels, vocabulary) travels only inside the
    JSON data and reaches the page as text."""
    frames = animation_frames(s, lang)
    zh = lang == "zh"
    legend_items = [("accepted", "已接受" if zh else "accepted"), ("rejected", "已拒绝" if zh else "rejected"),
                    ("compared", "比较中" if zh else "being compared"), ("current", "当前" if zh else "current"),
                    ("bonus", "bonus"), ("discarded", "丢弃" if zh else "discarded"), ("pending", "待定" if zh else "pending")]
    commit = run_scenario(s, with_trace=False).commits[0]
    data = {
        "lang": "zh-CN" if zh else "en",
        # derived from the live result and the live inputs ("(edited)" once they differ from the preset), never preset text
        "title": f"specviz · {display_name(s, lang)}: {walk_summary(s, commit, lang)}",
        "desc": " ".join(x for x in (s.describe(lang), outcome_sentence(s, commit, lang)) if x),
        "vocab": ("# 词表 token id: " if zh else "# vocab token ids: ") + "  ".join(f"{i}={t}" for i, t in enumerate(s.vocab[:40])),
        "legend": [[state_color(k), text_on(state_color(k)), t] for k, t in legend_items],
        "words": {"play": "播放" if zh else "play", "pause": "暂停" if zh else "pause",
                  "speed": "速度" if zh else "speed", "step": "步骤" if zh else "step",
                  "first": "第一步" if zh else "first step", "back": "上一步" if zh else "back",
                  "next": "下一步" if zh else "next", "last": "最后一步" if zh else "last step"},
        "frames": frames,
    }
    head, tail = _HTML.split("__DATA__")
    return head + json_for_script(data) + tail
