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

from specviz.engine import run_scenario
from specviz.frames import replay
from specviz.paths import scenario_dir
from specviz.scenario import load_scenario

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
