"""Exports: the pytest file runs and passes in a subprocess; the HTML animation plays offline in chromium."""
import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specviz.base.errors import SpecvizError
from specviz.replay.engine import run_scenario
from specviz.rooms.export import animation_html, dot_to_png, dot_to_svg, figure_to_html, has_dot, pytest_file, scenario_json
from specviz.replay.playframes import frames_for
from specviz.rooms.pitfalls import preset
from specviz.inputs.scenario import scenario_from_json

ROOT = Path(__file__).resolve().parents[1]
PRESETS = sorted(p.stem for p in (ROOT / "scenarios").glob("*.json"))


def test_scenario_json_round_trip():
    s = preset("running_example")
    assert scenario_from_json(scenario_json(s)) == s


@pytest.mark.exhaustive  # CI time; an exported file runs and passes in test_exported_pytest_file_says_how_to_run_it_and_runs_from_a_fresh_folder
def test_exported_pytest_files_pass(tmp_path):
    """Every preset, plus an edited one, exported as a test module; one pytest subprocess runs them all."""
    for name in PRESETS:
        (tmp_path / f"test_export_{name}.py").write_text(pytest_file(preset(name)))
    edited = preset("running_example").replace(name="edited root miss")
    data = json.loads(edited.to_json())
    data["requests"][0]["target_predict"] = ["X", "C", "X", "X", "X"]
    (tmp_path / "test_export_edited.py").write_text(pytest_file(scenario_from_json(json.dumps(data))))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"{len(PRESETS) + 1} passed" in out.stdout


def test_exported_pytest_file_fails_on_a_wrong_expectation(tmp_path):
    text = pytest_file(preset("running_example")).replace("EXPECTED_ACCEPT_INDEX = [[0, 1, 3]]", "EXPECTED_ACCEPT_INDEX = [[1, 3, -1]]")
    (tmp_path / "test_wrong.py").write_text(text)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert out.returncode == 1 and "1 failed" in out.stdout


def test_exported_pytest_file_says_how_to_run_it_and_runs_from_a_fresh_folder(tmp_path):
    """Issue 18 item 6: the header names the install and run commands; written to a folder outside the
    repository and run from there with this Python's ``-m pytest`` (no PYTHONPATH: the specviz
    installed in this environment, as after README command 1), it passes."""
    text = pytest_file(preset("running_example"))
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))  # the file's first lines
    assert text.startswith("# ") and header.splitlines()[0].startswith("# A specviz example")
    assert "python -m pip install /path/to/specviz" in header
    assert "python -m pytest -q test_running_example.py" in header
    edited = pytest_file(preset("running_example").replace(name="my example"))
    assert "python -m pytest -q test_my_example.py" in edited  # the name the download button gives the file
    folder = tmp_path / "fresh"
    folder.mkdir()
    (folder / "test_running_example.py").write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run([sys.executable, "-c", "import specviz"], capture_output=True, cwd=folder, env=env, timeout=60)
    if probe.returncode != 0:  # e.g. a GPU image that runs the suite from PYTHONPATH without installing specviz
        pytest.skip("specviz is not installed in this Python (only reachable through PYTHONPATH): "
                    "pip install -e . first, as the README's commands do")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_running_example.py"],
                         capture_output=True, text=True, cwd=folder, env=env, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "1 passed" in out.stdout


def _header_command(text: str, after: str) -> list[str]:
    """The command on the header line right after the line that contains ``after`` (comment marks removed)."""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("#")]
    at = next(i for i, line in enumerate(lines) if after in line)
    return lines[at + 1].split("(")[0].split()


def _no_pytest_env(tmp_path) -> dict:
    """The README command-1 environment: specviz importable (this checkout), pytest not installed (a module
    named pytest that raises what a missing module raises shadows this Python's)."""
    hide = tmp_path / "no_pytest"
    hide.mkdir()
    (hide / "pytest.py").write_text("raise ModuleNotFoundError(\"No module named 'pytest'\", name='pytest')\n")
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": f"{hide}{os.pathsep}{ROOT}"}


def test_exported_file_runs_with_the_headers_command_in_the_command_1_environment(tmp_path):
    """Issue 32: the header told a reader with README command 1's virtualenv to run ``.venv/bin/python -m
    pytest``, which that environment does not have ("No module named pytest"). The header's own command
    for that environment, run from an empty folder where pytest cannot be imported, passes; and a wrong
    expectation fails under the same command (it runs the test, it does not just import the file)."""
    text = pytest_file(preset("running_example"))
    cmd = _header_command(text, "README, command 1")
    assert cmd[0] == "/path/to/specviz/.venv/bin/python", cmd
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "test_running_example.py").write_text(text, encoding="utf-8")
    env = _no_pytest_env(tmp_path)
    assert subprocess.run([sys.executable, "-c", "import pytest"], cwd=folder, env=env, capture_output=True).returncode != 0
    out = subprocess.run([sys.executable, *cmd[1:]], capture_output=True, text=True, cwd=folder, env=env, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert out.stdout.strip() == "1 passed"
    (folder / "test_running_example.py").write_text(
        text.replace("EXPECTED_ACCEPT_INDEX = [[0, 1, 3]]", "EXPECTED_ACCEPT_INDEX = [[1, 3, -1]]"), encoding="utf-8")
    out = subprocess.run([sys.executable, *cmd[1:]], capture_output=True, text=True, cwd=folder, env=env, timeout=120)
    assert out.returncode == 1 and "AssertionError" in out.stderr and "1 passed" not in out.stdout
    dspark = pytest_file(preset("dspark_chain"))  # the other family's file ends the same way
    (folder / "test_dspark_chain.py").write_text(dspark, encoding="utf-8")
    out = subprocess.run([sys.executable, "test_dspark_chain.py"], capture_output=True, text=True, cwd=folder, env=env,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "1 passed", out.stderr[-2000:]


def test_pytest_shape_check_allows_only_the_fixed_main_block():
    """After the test function only ``run_directly``'s block calling that function is accepted."""
    from specviz.rooms.export import check_pytest_source, run_directly

    text = pytest_file(preset("running_example"))
    assert run_directly("test_running_example") in text
    for evil in ('if __name__ == "__main__":\n    __import__("os").system("x")',
                 'if __name__ == "__main__":\n    test_running_example()\n    print(open("x").read())',
                 run_directly("test_other")):
        with pytest.raises(SpecvizError, match="unexpected statement"):
            check_pytest_source(text.replace(run_directly("test_running_example"), evil))


def test_exported_pytest_file_without_specviz_fails_with_the_install_command(tmp_path):
    """Where specviz cannot be imported, the file fails (never skips) with an ImportError that names
    the install command, instead of a bare ModuleNotFoundError."""
    path = tmp_path / "test_running_example.py"
    path.write_text(pytest_file(preset("running_example")), encoding="utf-8")
    blocker = ("import sys, importlib.abc\n"
               "class Block(importlib.abc.MetaPathFinder):\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               "        if name == 'specviz' or name.startswith('specviz.'):\n"
               "            raise ModuleNotFoundError(\"No module named 'specviz'\", name='specviz')\n"
               "sys.meta_path.insert(0, Block())\n"
               f"import runpy; runpy.run_path({str(path)!r})\n")  # what pytest does first: import the module
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 1, out.stderr[-2000:]  # an error: pytest reports it as a collection error, never a skip
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: this test needs the specviz package"), last
    assert "python -m pip install /path/to/specviz" in last


@pytest.mark.skipif(not has_dot(), reason="Graphviz's dot binary is not installed")
def test_dot_export():
    from specviz.render.tree import tree_dot

    dot = tree_dot([-1, 0, 0, 1, 1], ["R", "A", "B", "C", "D"], states={0: "accepted", 1: "accepted"})
    svg = dot_to_svg(dot)
    assert svg.lstrip().startswith(b"<?xml") or b"<svg" in svg[:400]
    assert dot_to_png(dot)[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SpecvizError, match="Graphviz"):
        dot_to_svg("digraph { a -> }")


def test_plotly_html_is_offline():
    import plotly.graph_objects as go

    text = figure_to_html(go.Figure(go.Bar(x=["A", "B"], y=[1, 2])))
    assert "<script src=" not in text.lower() and "<script" in text


def _exported_data(text: str) -> dict:
    import re

    return json.loads(re.search(r'<script type="application/json" id="sv-data">(.*?)</script>', text, re.S).group(1))


def test_animation_html_is_self_contained(dot_or_not):
    """Nothing in the file can fetch; with dot the figures are SVG text, without it Graphviz in WebAssembly
    rides along base64 in the data: its text (which holds the SVG DTD's URL, a name in the header of the SVG
    it writes, never fetched) never meets the HTML parser, and the file keeps two scripts, data and module."""
    from specviz.replay.player import GRAPHVIZ_JS, static_dir

    text = animation_html(preset("batch_two_requests"), "zh")
    # the SVG and XLink namespaces' names (in the player and in the figures' SVG text) are names, not requests
    lowered = text.lower().replace("http://www.w3.org/2000/svg", "").replace("http://www.w3.org/1999/xlink", "")
    for bad in ("http://", "https://", "src=", "@import", "url("):
        assert bad not in lowered, bad
    assert "步骤" in text and "default-src 'none'" in text
    assert text.lower().count("</script") == 2 and "<!--" not in text  # nothing ends a script early or escapes it
    data = _exported_data(text)
    assert (data["player"]["svgs"] is None) == (dot_or_not == "no dot") == (data["graphviz"] is not None)
    if data["graphviz"] is not None:  # the vendored file, byte for byte; the CSP lets it compile WebAssembly
        assert base64.b64decode(data["graphviz"]) == (static_dir() / GRAPHVIZ_JS).read_bytes()
        assert "'wasm-unsafe-eval'" in text
    else:
        assert "'wasm-unsafe-eval'" not in text


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_exports_the_frames_its_page_shows(name):
    """The file's player data is ``specviz.replay.player.payload`` of ``playframes.frames_for``: the frames the
    app's page shows (every request of a batch in turn), nothing computed a second time."""
    s = preset(name)
    data = _exported_data(animation_html(s, "zh"))["player"]
    frames = frames_for(s, run_scenario(s, "numpy"), "zh")
    assert [f["caption"] for f in data["frames"]] == [f.caption for f in frames]
    assert len(data["frames"]) >= 2 and data["labels"]["next"] == "下一步"


# One preset per page that has a player: greedy, tree builder (greedy), batch, chain, target-only, DSpark.
PLAYERS = [("running_example", "en"), ("running_example", "zh"), ("batch_two_requests", "en"), ("pq_example", "zh"),
           ("target_only_sampling", "en"), ("dspark_chain", "en"), ("dspark_sampling", "zh")]


def _shown(page) -> dict:
    """What the player shows now: the caption, each value row as text, the table's cells."""
    root = page.locator("#sv")
    rows = [" ".join(x.split()) for x in root.locator("[data-sv-rows] > .row").all_inner_texts()]
    cells = root.locator("[data-sv-table] th, [data-sv-table] td").all_inner_texts()
    return {"caption": root.locator("[data-sv-caption]").inner_text(), "rows": rows, "cells": [c.strip() for c in cells]}


def _expected(f) -> dict:
    def text(chip):
        return chip if isinstance(chip, str) else str(chip[0])
    rows = [" ".join(" ".join([str(r.label)] + ([str(r.code)] if r.code is not None else []) + [text(c) for c in r.chips]).split())
            for r in f.rows]
    cells = [(c[0] if isinstance(c, (tuple, list)) else str(c)) for row in (f.table or []) for c in row]
    return {"caption": " ".join(f.caption.split()), "rows": rows, "cells": [str(c).strip() for c in cells]}


@pytest.mark.parametrize("name, lang", PLAYERS)
def test_exported_player_steps_offline_through_every_frame(tmp_path, browser, name, lang):
    """Chromium opens the file (file://, every other request aborted), steps it with "next" to the end
    and compares each frame's caption, value rows and table with ``playframes``' frames."""
    s = preset(name)
    frames = frames_for(s, run_scenario(s, "numpy"), lang)
    path = tmp_path / f"{name}_{lang}.html"
    path.write_text(animation_html(s, lang), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    requests, errors = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", lambda r: (requests.append(r.request.url),
                                  r.continue_() if r.request.url.startswith("file://") else r.abort()))
    page.goto(path.as_uri())
    root = page.locator("#sv")
    for k, f in enumerate(frames):
        if k:
            page.click('[data-sv-btn="next"]')
        assert root.get_attribute("data-sv-cur") == str(k)
        shown = _shown(page)
        shown["caption"] = " ".join(shown["caption"].split())
        assert shown == _expected(f), k
        assert root.get_attribute("data-sv-figure") == "ready"
    page.keyboard.press("Home")
    assert root.get_attribute("data-sv-cur") == "0"
    page.keyboard.press("End")
    assert root.get_attribute("data-sv-cur") == str(len(frames) - 1)
    context.close()
    assert not errors and all(u.startswith("file://") for u in requests), (errors, requests)


def test_animation_plays_offline_in_chromium(tmp_path, browser, no_dot_path, monkeypatch):
    """Play at 4 steps/s runs to the end; keys step; laid out by the browser too (made where there is no
    dot: Graphviz in WebAssembly inlined, the CSP allowing WebAssembly and nothing else more)."""
    monkeypatch.delenv("SPECVIZ_LAYOUT", raising=False)
    monkeypatch.setenv("PATH", no_dot_path)
    text = animation_html(preset("running_example"))
    assert "'wasm-unsafe-eval'" in text and _exported_data(text)["player"]["dots"]
    path = tmp_path / "walk.html"
    path.write_text(text, encoding="utf-8")
    requests, errors = [], []
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.route("**/*", lambda r: (requests.append(r.request.url),
                                  r.continue_() if r.request.url.startswith("file://") else r.abort()))
    page.goto(path.as_uri())
    root = page.locator("#sv")
    assert root.get_attribute("data-sv-cur") == "0"
    page.select_option("[data-sv-speed]", "4")
    page.click('[data-sv-btn="play"]')
    last = page.locator("[data-sv-scrub]").get_attribute("max")
    deadline = time.monotonic() + 15
    while root.get_attribute("data-sv-cur") != last and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    assert root.get_attribute("data-sv-cur") == last
    deadline = time.monotonic() + 20
    while root.get_attribute("data-sv-figure") != "ready" and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    assert root.get_attribute("data-sv-figure") == "ready"
    assert page.locator("[data-sv-img]").evaluate("i => i.naturalWidth") > 0
    page.click('[data-sv-btn="first"]')
    page.keyboard.press("ArrowRight")
    assert root.get_attribute("data-sv-cur") == "1"
    context.close()
    assert all(u.startswith("file://") for u in requests) and not errors, (requests, errors)


@pytest.mark.parametrize("body, why", [
    ("import os\ndef test_x():\n    pass\n", "unexpected statement"),
    ("VOCAB = __import__('os').system('x')\ndef test_x():\n    pass\n", "unexpected statement"),
    ("VOCAB = ['a']\ndef test_x():\n    open('evil')\n", "inside the test function"),
    ("VOCAB = ['a']\ndef test_x():\n    pass\n", None),  # the accepted shape
])
def test_pytest_shape_check_with_the_install_hint_import(body, why):
    """The generated import block (``IMPORT_SPECVIZ``) is the one accepted import of specviz; past it,
    each other shape is refused for its own reason. A bare ``from specviz import reference`` (the old
    header, which fails with a bare ModuleNotFoundError) is refused too."""
    from specviz.rooms.export import IMPORT_SPECVIZ, check_pytest_source

    source = f"'doc'\nimport numpy as np\n{IMPORT_SPECVIZ}\n{body}"
    if why is None:
        assert check_pytest_source(source) == source
        with pytest.raises(SpecvizError, match="unexpected imports"):
            check_pytest_source(source.replace(IMPORT_SPECVIZ, "from specviz import reference as ref"))
    else:
        with pytest.raises(SpecvizError, match=why):
            check_pytest_source(source)
