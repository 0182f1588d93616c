"""Rich display in Jupyter, and the example notebook that CI executes.

The display methods (``_repr_html_`` / ``_repr_svg_``) are plain functions of the value: tested
directly, with hostile text. The notebook runs in a subprocess (nbclient + ipykernel, from
requirements-dev.txt) with a timeout, so a hung kernel cannot hang the suite.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specviz.replay.engine import run_scenario
from specviz.replay.frames import replay
from specviz.base.paths import scenario_dir
from specviz.inputs.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "examples" / "specviz_in_jupyter.ipynb"
HOSTILE = "<img src=x onerror=alert(1)>"


def test_scenario_run_and_frame_display_as_html():
    s = load_scenario(scenario_dir() / "running_example.json")
    html = s._repr_html_()
    assert "running_example" in html and "<table>" in html
    run = run_scenario(s)
    rhtml = run._repr_html_()
    # the accepted path and the one-position shift: outputs A C X from rows R A C
    assert "<td>A</td><td>C</td><td>X</td>" in rhtml and "<td>R</td><td>A</td><td>C</td>" in rhtml
    frames = replay(run.trace)
    fhtml = frames[-1]._repr_html_()
    assert f"step {len(frames) - 1}" in fhtml and "accept_index" in fhtml


def test_user_text_is_escaped_in_the_display():
    s = load_scenario(scenario_dir() / "running_example.json")
    vocab = list(s.vocab)
    vocab[vocab.index("X")] = HOSTILE
    req = s.requests[0].model_dump()
    req["target_predict"] = [HOSTILE if t == "X" else t for t in req["target_predict"]]
    bad = s.replace(title=HOSTILE, description=HOSTILE + ' "quoted"', vocab=vocab, requests=[req])
    for html in (bad._repr_html_(), run_scenario(bad)._repr_html_()):
        assert "<img" not in html and "onerror=alert(1)&gt;" in html


def test_run_svg_needs_dot_and_carries_no_script():
    import shutil

    run = run_scenario(load_scenario(scenario_dir() / "running_example.json"))
    svg = run._repr_svg_()
    if shutil.which("dot") is None:
        assert svg is None and "specviz-tree" in run._repr_html_()  # the outline stands in for the figure
    else:
        assert svg.startswith("<svg") and "<script" not in svg and "<svg" in run._repr_html_()


def test_scenario_shows_its_tree_as_an_outline():
    html = load_scenario(scenario_dir() / "running_example.json")._repr_html_()
    # R has children A, B; A has children C, D (nested lists, rows shown)
    assert html.count("<ul") == 3 and "A <small>(node 1, row 1)</small>" in html


@pytest.mark.exhaustive  # CI time; the notebook's helpers are tested above without a kernel
def test_example_notebook_executes(tmp_path):
    nbclient = pytest.importorskip("nbclient", reason="pip install -c constraints.txt -r requirements-dev.txt")
    pytest.importorskip("ipykernel", reason="pip install -c constraints.txt -r requirements-dev.txt")
    assert nbclient  # the import is the point: the subprocess below uses the same packages
    out = tmp_path / "executed.ipynb"
    script = (
        "import sys, nbformat\n"
        "from nbclient import NotebookClient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "NotebookClient(nb, timeout=90, kernel_name='python3', resources={'metadata': {'path': sys.argv[3]}}).execute()\n"
        "nbformat.write(nb, sys.argv[2])\n"
    )
    env = dict(os.environ, TRITON_INTERPRET="1", JUPYTER_PLATFORM_DIRS="1", IPYTHONDIR=str(tmp_path / "ipython"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    proc = subprocess.run([sys.executable, "-c", script, str(NOTEBOOK), str(out), str(ROOT)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    nb = json.loads(out.read_text())
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o["output_type"] == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    html = ["".join(h) if isinstance(h, list) else h for h in html]
    assert any("specviz-scenario" in h for h in html)
    assert any("specviz-run" in h and "<td>A</td><td>C</td><td>X</td>" in h for h in html)
    assert any("specviz-frame" in h for h in html)


# -- the step player as a widget (anywidget, the optional extra specviz[notebook]) -----------------------

def test_without_anywidget_a_run_shows_the_static_view(monkeypatch):
    from specviz.rooms import notebook

    monkeypatch.setitem(sys.modules, "anywidget", None)  # as if not installed: import raises ImportError
    monkeypatch.delattr(notebook, "_PLAYER", raising=False)
    run = run_scenario(load_scenario(scenario_dir() / "running_example.json"))
    assert run._repr_mimebundle_() is None and "specviz-run" in run._repr_html_()
    with pytest.raises(ImportError, match=r"specviz\[notebook\]"):
        notebook.show(run)


def test_player_widget_holds_the_pages_frames_and_the_step():
    pytest.importorskip("anywidget", reason="the optional extra: pip install 'specviz[notebook]'")
    from specviz.rooms import notebook
    from specviz.replay.player import asset
    from specviz.replay.playframes import frames_for

    s = load_scenario(scenario_dir() / "pq_example.json")
    w = notebook.show("pq_example", lang="zh", step=2)
    frames = frames_for(s, run_scenario(s), "zh")
    assert [f["caption"] for f in w.data["frames"]] == [f.caption for f in frames] and w.step == 2
    assert w._esm == asset("player.js") + asset("player_jupyter.js")  # the app's module, one of three hosts
    run = run_scenario(s)
    assert notebook.show(run).step == len(frames) - 1  # a run opens at its outcome
    bundle = run._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "specviz-run" in bundle["text/html"]
    bad = s.replace(title=HOSTILE, vocab=[HOSTILE if t == "B" else t for t in s.vocab])
    data = notebook.show(bad).data
    assert any(HOSTILE in json.dumps(f, ensure_ascii=False) for f in data["frames"])  # data, written as text


def test_player_widget_in_an_executed_notebook(tmp_path):
    """nbclient runs a notebook that shows the player; the saved widget state holds its frames and step."""
    pytest.importorskip("anywidget", reason="the optional extra: pip install 'specviz[notebook]'")
    pytest.importorskip("nbclient", reason="pip install -c constraints.txt -r requirements-dev.txt")
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from specviz.rooms.notebook import show\nw = show('running_example', step=3)\nw"),
                nbformat.v4.new_code_cell("print(w.step, len(w.data['frames']))")]
    src, out = tmp_path / "player.ipynb", tmp_path / "executed.ipynb"
    nbformat.write(nb, src)
    script = ("import sys, nbformat\nfrom nbclient import NotebookClient\nnb = nbformat.read(sys.argv[1], as_version=4)\n"
              "NotebookClient(nb, timeout=90, kernel_name='python3', store_widget_state=True).execute()\n"
              "nbformat.write(nb, sys.argv[2])\n")
    env = dict(os.environ, JUPYTER_PLATFORM_DIRS="1", IPYTHONDIR=str(tmp_path / "ipython"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    proc = subprocess.run([sys.executable, "-c", script, str(src), str(out)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    done = json.loads(out.read_text())
    shown = done["cells"][0]["outputs"][0]["data"]
    model_id = shown["application/vnd.jupyter.widget-view+json"]["model_id"]
    state = done["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"][model_id]["state"]
    assert state["step"] == 3 and len(state["data"]["frames"]) == 11
    assert "3 11" in "".join(done["cells"][1]["outputs"][0]["text"])


WIDGET_PAGE = """<!DOCTYPE html><meta charset="utf-8"><div id="el"></div>
<script type="application/json" id="d">__DATA__</script>
<script type="module">
  // anywidget's side, as small as the widget needs: a model with get / set / save_changes / on / off.
  const P = JSON.parse(document.getElementById("d").textContent);
  const m = await import(URL.createObjectURL(new Blob([P.esm], {type: "text/javascript"})));
  const vals = {data: P.data, step: P.step, _graphviz: P.graphviz}, handlers = {};
  const model = {get: (k) => vals[k], set: (k, v) => { vals[k] = v; },
                 save_changes: () => { document.body.dataset.saved = String(vals.step); },
                 on: (e, f) => { (handlers[e] = handlers[e] || []).push(f); }, off: () => {}};
  window.__model = {vals, handlers};
  m.default.render({model, el: document.getElementById("el")});
</script>"""


@pytest.mark.parametrize("layout", ["server", "browser"])
def test_player_widget_module_steps_in_chromium(tmp_path, browser, layout):
    """The widget's module (player.js + player_jupyter.js: what anywidget loads) rendered in chromium with a
    stand-in for anywidget's model: it opens at the model's step, steps with its buttons and keys (when
    focused), writes the step back to the model, and follows a step set from Python. Laid out by ``dot``
    here, or (no ``dot``) in the page by the package's Graphviz in WebAssembly, sent by the kernel."""
    import shutil

    from specviz.replay.player import GRAPHVIZ_JS, asset, labels, payload

    if layout == "server" and shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed here (apt-get install graphviz)")
    from specviz.replay.playframes import frames_for
    from specviz.base.safety import json_for_script

    s = load_scenario(scenario_dir() / "running_example.json")
    frames = frames_for(s, run_scenario(s), "en")
    data = payload(frames, labels=labels(lambda en, zh: en), layout=layout)
    page_text = WIDGET_PAGE.replace("__DATA__", json_for_script({"esm": asset("player.js") + asset("player_jupyter.js"),
                                                                 "data": data, "step": 2,
                                                                 "graphviz": asset(GRAPHVIZ_JS) if layout == "browser" else ""}))
    path = tmp_path / "widget.html"
    path.write_text(page_text, encoding="utf-8")
    page = browser.new_page()
    page.goto(path.as_uri())
    step = page.locator(".sv-player [data-sv-step]")
    step.wait_for(timeout=20_000)
    assert step.inner_text() == f"Step 2/{len(frames) - 1}"
    assert page.locator("[data-sv-caption]").inner_text() == frames[2].caption
    page.locator('[data-sv-btn="next"]').click()
    assert page.locator("body").get_attribute("data-saved") == "3"  # the model's step, saved back to the kernel
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("End")  # the widget does not have focus: the notebook's keys stay the notebook's
    assert step.inner_text() == f"Step 3/{len(frames) - 1}"
    page.locator('[data-sv-btn="next"]').focus()
    page.keyboard.press("End")
    assert step.inner_text() == f"Step {len(frames) - 1}/{len(frames) - 1}"
    page.evaluate("() => { __model.vals.step = 1; __model.handlers['change:step'].forEach((f) => f()); }")  # w.step = 1
    assert step.inner_text() == f"Step 1/{len(frames) - 1}"
    root = page.locator(".sv-player")
    page.wait_for_function("() => document.querySelector('.sv-player').dataset.svFigure === 'ready'", timeout=30_000)
    assert page.locator("[data-sv-img]").get_attribute("src").startswith("data:image/svg+xml")
    assert root.get_attribute("data-sv-figure") == "ready"
    page.close()
