"""Hostile inputs: links, files, pastes and labels stay data (never code, markup or a traceback).

Issue 8's findings, one regression test (or parametrised family) each; every case here failed on
the code before the fix (see the commit that added this file). Kinds are counted in KINDS below.
Runs in well under a minute on 2 cores (no browser here except one exported-file check).
"""
from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest
from tests.player_read import players
from tests.support.cli import cli

from specviz.base import safety
from specviz.replay.captions import walk_summary
from specviz.replay.engine import run_scenario
from specviz.rooms.audit import MAX_PASTE_CHARS, parse_array, parse_claimed_text
from specviz.base.errors import SpecvizError
from specviz.rooms.export import animation_html, check_pytest_source, pytest_file
from specviz.inputs.naming import display_name
from specviz.rooms.pitfalls import preset
from specviz.render.sampling_charts import chain_dot, sampling_tree_dot
from specviz.inputs.scenario import scenario_from_json
from specviz.render.tree import forest_dot, tree_dot
from specviz.inputs.scenario import MAX_SCENARIO_CHARS, load_scenario, scenario_from_dict
from specviz.rooms.share import MAX_TOKEN_CHARS, ShareState, decode_state, encode_state

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------------
# Payloads (labels are at most 32 characters: specviz.inputs.scenario.MAX_LABEL_CHARS)
# ---------------------------------------------------------------------------------------------

IFRAME = ("<iframe srcdoc=\"<script>parent.alert(parent.document.querySelector('h1').innerText)</script>\">"
          "</iframe>")
LONG_PAYLOADS = [
    IFRAME,
    "<img src=x onerror=alert(document.domain)>",
    "<meta http-equiv=refresh content='0;url=https://evil.example/'>",
    'x"""; __import__("os").system("touch MARKER"); """',
    "</script><script>alert(1)</script>",
    "__DESC__ __TITLE__ __VOCAB__ __FRAMES__",
    '<svg onload=alert(1)> {{7*7}} ${7*7} \\" \' \u2028 \u2029',
]
LABELS = [
    "<img src=x onerror=alert(1)>",
    "<iframe srcdoc=x></iframe>",
    "<meta http-equiv=refresh c=0>",
    "</script><script>alert(1)//",
    'x"""; import os #',
    "__DESC__",
    'Z"]; pwned [label="PWNED"]; x [',
    'A"',
    "<b",
    "<<TABLE>>",
    "back\\slash\\",
    "new\nline",
    "![i](https://e.x/p.png)",
    "'''",
]
MARKERS = ("<img", "<iframe", "<meta", "<script", "</script", "<svg")


def _relabel(s, labels=LABELS, title=None, description=None):
    """The preset with its vocabulary relabelled by hostile strings (every node / table follows)."""
    data = json.loads(s.to_json())
    old = data["vocab"]
    new = [labels[i % len(labels)] + ("" if i < len(labels) else f"~{i}") for i in range(len(old))]
    mapping = dict(zip(old, new))

    def sub(v):
        if isinstance(v, str) and v in mapping:
            return mapping[v]
        if isinstance(v, list):
            return [sub(x) for x in v]
        if isinstance(v, dict):
            return {k: sub(x) for k, x in v.items()}
        return v
    for key in ("requests",):
        data[key] = sub(data[key])
    data["vocab"] = new
    data["title"] = title if title is not None else LONG_PAYLOADS[0]
    data["description"] = description if description is not None else " ".join(LONG_PAYLOADS)
    data["description_zh"] = LONG_PAYLOADS[2]
    return scenario_from_dict(data)


PRESETS = ["running_example", "batch_two_requests", "pq_example", "target_only_sampling", "dspark_chain", "dspark_sampling"]


def _pack(obj) -> str:
    raw = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


# ---------------------------------------------------------------------------------------------
# Links (findings 4, 9, 11)
# ---------------------------------------------------------------------------------------------

_BASE = {"v": 1, "page": "greedy"}
_GOOD = json.loads(preset("running_example").to_json())


def _with_scenario(**changes):
    d = dict(_GOOD)
    d.update(changes)
    return {**_BASE, "scenario": d}


LINKS = {
    "nested_50000": (_pack(b'{"v":1,"page":"greedy","extra":' + b"[" * 50_000 + b"]" * 50_000 + b"}"), "nests brackets"),
    "int_5001_digits": (_pack(b'{"v":1,"page":"greedy","step":' + b"9" * 5001 + b"}"), "digits"),
    "int_5001_in_scenario": (_pack(json.dumps(_with_scenario()).replace('"seq_len": 10', '"seq_len": ' + "7" * 5001).encode()),
                             "digits"),
    "pitfall_extra_object": (_pack({"v": 1, "page": "pitfalls", "extra": {"pitfall": {"a": 1}}}), "link.extra.pitfall"),
    "pitfall_extra_list": (_pack({"v": 1, "page": "pitfalls", "extra": {"pitfall": [1, 2]}}), "link.extra.pitfall"),
    "req_extra_string": (_pack({**_BASE, "extra": {"req": "0"}}), "link.extra.req"),
    "req_extra_huge": (_pack({**_BASE, "extra": {"req": 10 ** 15}}), "link.extra.req"),
    "req_extra_bool": (_pack({**_BASE, "extra": {"req": True}}), "link.extra.req"),
    "wrong_extra_int": (_pack({"v": 1, "page": "batch_kv", "extra": {"wrong": 1}}), "link.extra.wrong"),
    "text_extra_too_long": (_pack({"v": 1, "page": "audit", "extra": {"text": "a" * 5000}}), "link.extra.text"),
    "unknown_extra": (_pack({**_BASE, "extra": {"__proto__": 1}}), "link.extra"),
    "extra_not_object": (_pack({**_BASE, "extra": [1]}), "link.extra"),
    "title_too_long": (_pack(_with_scenario(title="t" * 5000)), "title"),
    "label_too_long": (_pack(_with_scenario(vocab=_GOOD["vocab"] + ["L" * 100])), "vocab"),
    "oversized_token": ("A" * (MAX_TOKEN_CHARS + 1), "too large"),
    "zip_bomb": (_pack(b" " * 5_000_000), "more than"),
    "truncated": (_pack(_with_scenario())[:-8], "cut short|compressed|base64"),
    "not_base64": ("%3Cscript%3E", "never contains"),
    "not_json": (_pack(b"<script>alert(1)</script>"), "not JSON"),
    "path_page": (_pack({"v": 1, "page": "../../etc/passwd"}), "link.page"),
}


@pytest.mark.parametrize("name", sorted(LINKS))
def test_hostile_link_is_refused_with_a_named_error(name):
    token, match = LINKS[name]
    with pytest.raises(SpecvizError, match=match) as info:
        decode_state(token)
    assert info.value.field.startswith("link")


def test_scenario_beyond_the_drawing_limits_is_refused():
    """More table cells (requests x rows x vocabulary) than the pages can draw: refused, naming the rule."""
    from specviz.inputs.scenario import MAX_TABLE_CELLS

    rows = 20  # a greedy tree of 20 nodes and 1,000 tokens: 20,000 cells
    vocab = [f"t{i}" for i in range(1000)]
    assert rows * len(vocab) > MAX_TABLE_CELLS
    data = dict(_GOOD, vocab=vocab, requests=[{"tree": {"parents": [-1] + list(range(rows - 1)), "tokens": ["t1"] * rows},
                                               "target_predict": ["t1"] * rows}])
    with pytest.raises(SpecvizError, match="cells"):
        scenario_from_dict(data)


def test_hostile_labels_travel_in_a_link_as_data():
    s = _relabel(preset("running_example"))
    back = decode_state(encode_state(ShareState(page="greedy", scenario=s))).scenario
    assert back == s and back.vocab[: len(LABELS)] == LABELS[: len(back.vocab)]


# ---------------------------------------------------------------------------------------------
# Files and the CLI (findings 6, 7, 9)
# ---------------------------------------------------------------------------------------------

def _write(tmp_path, name, data: bytes) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


GOOD_BYTES = preset("running_example").to_json().encode()
FILES = {
    "dev_zero": lambda tmp: "/dev/zero",
    "dev_urandom": lambda tmp: "/dev/urandom",
    "directory": lambda tmp: str(tmp),
    "missing": lambda tmp: str(tmp / "nope.json"),
    "invalid_utf8": lambda tmp: _write(tmp, "bad.json", b'{"name": "\xff\xfe"}'),
    "cut_multibyte": lambda tmp: _write(tmp, "cut.json", GOOD_BYTES[:40] + "语".encode()[:2]),
    "truncated_json": lambda tmp: _write(tmp, "trunc.json", GOOD_BYTES[: len(GOOD_BYTES) // 2]),
    "nested_json": lambda tmp: _write(tmp, "deep.json", b"[" * 100_000 + b"]" * 100_000),
    "int_5000_digits": lambda tmp: _write(tmp, "int.json", GOOD_BYTES.replace(b'"seq_len": 10', b'"seq_len": ' + b"1" * 5000)),
    "too_large": lambda tmp: _write(tmp, "big.json", b" " * (MAX_SCENARIO_CHARS + 10)),
    "fifo": lambda tmp: (os.mkfifo(tmp / "fifo"), str(tmp / "fifo"))[1],
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_hostile_scenario_file_is_refused(name, tmp_path):
    path = FILES[name](tmp_path)
    t0 = time.perf_counter()
    with pytest.raises(SpecvizError):
        load_scenario(path)
    assert time.perf_counter() - t0 < 2.0


@pytest.mark.parametrize("name", ["dev_zero", "dev_urandom", "directory", "invalid_utf8", "cut_multibyte", "nested_json",
                                  "int_5000_digits"])
def test_cli_one_line_and_exit_2(name, tmp_path, capsys):
    from specviz.app.cli import main

    path = FILES[name](tmp_path)
    for cmd in ("run", "audit"):
        assert main([cmd, path]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error:") and "\n" not in err and "Traceback" not in err, err


def test_cli_audit_scenario_file_pointing_at_a_device(tmp_path, capsys):
    from specviz.app.cli import main

    f = tmp_path / "audit.json"
    f.write_text(json.dumps({"scenario_file": "/dev/zero", "claimed": {"accept_index": [[0, 1, 3]]}}))
    assert main(["audit", str(f)]) == 2
    assert "outside the audit file's folder" in capsys.readouterr().err  # (issue 19: never read at all)
    f.write_text(json.dumps({"claimed": {"accept_index": [[0, 1, 3]]}}))
    assert main(["audit", str(f), "--scenario", "/dev/zero"]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_cli_file_written_concurrently_never_tracebacks(tmp_path):
    """A writer rewrites the file byte by byte (cutting multi-byte characters) while the CLI reads it."""
    text = preset("running_example").to_json().replace('"title": "', '"title": "语语语语语语语语').encode()
    path = tmp_path / "live.json"
    path.write_bytes(text)
    stop = threading.Event()

    def writer():
        while not stop.is_set():
            for cut in range(1, len(text), 7):
                with open(path, "wb") as fh:
                    fh.write(text[:cut])
                if stop.is_set():
                    return
    th = threading.Thread(target=writer, daemon=True)
    th.start()
    from specviz.app.cli import main
    import contextlib
    import io
    try:
        for _ in range(40):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = main(["run", str(path)])
            assert code in (0, 2)
            assert "Traceback" not in err.getvalue() and err.getvalue().count("\n") <= 1
    finally:
        stop.set()
        th.join()


def test_cli_subprocess_invalid_utf8_has_no_traceback(tmp_path):
    path = _write(tmp_path, "bad.json", b"\xff\xfe\xfd")
    out = subprocess.run([sys.executable, "-m", "specviz", "run", path], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr and out.stderr.count("\n") == 1, out.stderr


# ---------------------------------------------------------------------------------------------
# Pastes (findings 5, 9, 11)
# ---------------------------------------------------------------------------------------------

def test_paste_16000_lines_is_linear():
    text = "predicts = [" + ",\n".join(str(i % 7) for i in range(16_000)) + "]"
    t0 = time.perf_counter()
    value = parse_claimed_text(text)
    assert time.perf_counter() - t0 < 1.0
    assert len(value["predicts"]) == 16_000


def test_paste_time_scales_linearly():
    def cost(k):
        text = "accept_index = [\n" + "\n".join(f"[{i}, 1, 3]," for i in range(k)) + "]"
        t0 = time.perf_counter()
        parse_claimed_text(text)
        return time.perf_counter() - t0
    small, big = min(cost(1000) for _ in range(3)), min(cost(6000) for _ in range(3))
    assert big < 6 * small * 3 + 0.05  # linear (x6 data) with slack; the old parser was x36


PASTES = {
    "nested_3000": ("a = " + "[" * 3000 + "]" * 3000, "nests brackets"),
    "nested_3000_bare": ("[" * 3000, "field name|nests"),
    "nested_json_3000": ('{"a": ' + "[" * 3000 + "]" * 3000 + "}", "nests brackets"),
    "int_5000_digits": ("predicts = [" + "9" * 5000 + "]", "digits"),
    "oversized": ("predicts = [" + "1," * (MAX_PASTE_CHARS // 2) + "1]", "at most"),
    "python_code": ('accept_index = __import__("os").system("touch MARKER")', "cannot be read|unexpected|where"),
    "lambda": ("accept_index = (lambda: 1)()", "cannot be read|unexpected|where"),
    "unclosed": ("accept_index = [[0, 1, 3]", "not closed|ends too early"),
    "mismatched": ("accept_index = [0, 1)", "do not match"),
    "nul_bytes": ("accept_index = [0\x00, 1]", "cannot be read|where"),
}


@pytest.mark.parametrize("name", sorted(PASTES))
def test_hostile_paste_is_refused_clearly(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text, match = PASTES[name]
    t0 = time.perf_counter()
    with pytest.raises(SpecvizError, match=match):
        parse_claimed_text(text)
    assert time.perf_counter() - t0 < 1.0
    assert not (tmp_path / "MARKER").exists()


def test_parse_array_never_evaluates(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for text in ('[__import__("os").system("touch MARKER")]', "tensor([open('MARKER','w')])", "[1, 2][0]"):
        with pytest.raises(SpecvizError):
            parse_array(text)
    assert not (tmp_path / "MARKER").exists()


# ---------------------------------------------------------------------------------------------
# Labels in figures: DOT (finding 8)
# ---------------------------------------------------------------------------------------------

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot binary is not installed")


def _dot_nodes(dot: str) -> list[str]:
    out = subprocess.run(["dot", "-Tplain"], input=dot.encode(), capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return [line.split()[1] for line in out.stdout.decode().splitlines() if line.startswith("node ")]


@needs_dot
@pytest.mark.parametrize("label", LABELS)
def test_dot_builders_keep_a_hostile_label_in_its_node(label):
    labels = [label, "B", label + "x"]
    states = ["accepted", "rejected", "pending"]
    figures = {
        "tree_dot": (tree_dot([-1, 0, 0], labels, states={0: "accepted"}, bonus=(1, label)), 4),
        "forest_dot": (forest_dot([dict(parents=[-1, 0], labels=labels[:2], cluster=label)]), 2),
        "chain_dot": (chain_dot(labels, states, bonus=label, slot_names=[label] * 3), 4),
        "sampling_tree_dot": (sampling_tree_dot([-1, 0, 0], labels, states, captions=[label] * 3, bonus=(1, label),
                                                hovers=[label] * 3), 4),
    }
    for name, (dot, n) in figures.items():
        nodes = _dot_nodes(dot)
        assert len(nodes) == n and "pwned" not in nodes, (name, nodes)


@pytest.mark.parametrize("label", LABELS)
def test_dot_quote_is_one_closed_string(label):
    q = safety.dot_quote(label)
    assert q.startswith('"') and q.endswith('"') and "\n" not in q
    inner = q[1:-1]
    assert not re.search(r'(?<!\\)(?:\\\\)*"', inner)  # every quote inside is escaped


@needs_dot
def test_exported_svg_has_no_script_links():
    from specviz.rooms.export import dot_to_svg

    svg = dot_to_svg(tree_dot([-1, 0], ['x" URL="javascript:alert(1)', "<b"])).decode()
    assert not re.search(r"href\s*=\s*[\"']\s*javascript", svg, re.I)  # (the text may show in a title: it is text)
    with pytest.raises(SpecvizError, match="script"):
        dot_to_svg('digraph { a [URL="javascript:alert(1)"]; }')


# ---------------------------------------------------------------------------------------------
# Exports: pytest file (finding 2) and animation HTML (finding 3)
# ---------------------------------------------------------------------------------------------

def _hostile_scenarios():
    out = [_relabel(preset(name)) for name in PRESETS]
    for k, payload in enumerate(LONG_PAYLOADS):
        out.append(_relabel(preset("running_example"), title=payload, description=payload).replace(name=f"n{k}{payload[:60]}"))
    return out


def test_exported_pytest_files_run_as_data(tmp_path):
    """Hostile titles, descriptions, labels, vocabularies and names: every generated file parses to
    the expected shape, runs under pytest in a subprocess, passes, and creates no marker file."""
    for k, s in enumerate(_hostile_scenarios()):
        (tmp_path / f"test_export_{k}.py").write_text(pytest_file(s), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1"})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert f"{len(_hostile_scenarios())} passed" in out.stdout
    assert not list(tmp_path.glob("MARKER*")) and not (ROOT / "MARKER").exists()


@pytest.mark.parametrize("source", [
    "'doc'\nimport numpy as np\nfrom specviz import reference as ref\nimport os\ndef test_x():\n    pass\n",
    "'doc'\nimport numpy as np\nfrom specviz import reference as ref\nVOCAB = __import__('os').system('x')\ndef test_x():\n    pass\n",
    "'doc'\nimport numpy as np\nfrom specviz import reference as ref\nVOCAB = ['a']\n@x\ndef test_x():\n    pass\n",
    "'doc'\nimport numpy as np\nfrom specviz import reference as ref\nVOCAB = ['a']\ndef test_x():\n    open('evil')\n",
    "'doc'\nimport numpy as np\nfrom specviz import reference as ref\nEVIL = ['a']\ndef test_x():\n    pass\n",
    "x = '''\n",
])
def test_pytest_shape_check_refuses_anything_else(source):
    with pytest.raises(SpecvizError, match="refused"):
        check_pytest_source(source)


def _script_data(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="sv-data">(.*?)</script>', page, re.S)
    assert m
    return json.loads(m.group(1))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_animation_html_keeps_every_user_string_as_data(lang, dot_or_not):
    benign = animation_html(preset("running_example"), lang)
    for s in _hostile_scenarios()[:3] + _hostile_scenarios()[-3:]:
        page = animation_html(s, lang)
        for marker in MARKERS:
            assert page.count(marker) == benign.count(marker), marker  # the template's own tags only
        assert page.count("</script>") == 2 and "\u2028" not in page and "\u2029" not in page
        data = _script_data(page)
        # title and description are derived from the live walk (issue 9); the user's strings stay text in them
        commit = run_scenario(s, with_trace=False).commits[0]
        assert data["title"] == f"specviz · {display_name(s, lang)}: {walk_summary(s, commit, lang)}"  # "(edited)": relabelled
        assert data["desc"].startswith(s.describe(lang))
        import html as _html

        # a label is in a frame's text, or in a figure: an SVG laid out by dot here (shown through <img>, its text
        # escaped by Graphviz), or without dot the DOT text that the browser lays out (data, never markup)
        svgs = data["player"]["svgs"] or []
        figures = [_html.unescape(svg) for svg in svgs] if data["player"]["svgs"] is not None else data["player"]["dots"]
        flat = json.dumps(data["player"]["frames"], ensure_ascii=False) + "".join(figures)
        assert not any("<script" in svg.lower() or "<iframe" in svg.lower() for svg in svgs)
        for label in s.vocab[:6]:
            assert (json.dumps(label, ensure_ascii=False)[1:-1] in flat or label in flat
                    or label not in str(s.requests)), label
        assert "innerHTML" not in page and "insertAdjacentHTML" not in page and "document.write" not in page


def test_exported_animation_runs_no_script_in_chromium(tmp_path, browser):
    """The exported file with hostile strings in every slot: no dialog, no navigation, the player steps."""
    s = _relabel(preset("running_example"), title=LONG_PAYLOADS[1], description=IFRAME + LONG_PAYLOADS[2])
    path = tmp_path / "walk.html"
    path.write_text(animation_html(s), encoding="utf-8")
    dialogs, navigations = [], []
    context = browser.new_context()
    page = context.new_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("framenavigated", lambda f: navigations.append(f.url))
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
    page.goto(path.as_uri())
    page.click('[data-sv-btn="next"]')
    page.click('[data-sv-btn="next"]')
    page.wait_for_timeout(1500)  # a meta refresh of 0 s or an onerror would have fired by now
    assert page.locator("#sv").get_attribute("data-sv-cur") == "2"
    commit = run_scenario(s, with_trace=False).commits[0]
    assert page.locator("h1").inner_text() == f"specviz · {display_name(s)}: {walk_summary(s, commit, 'en')}"  # text, as written
    assert page.locator("#sv iframe, #sv script, #sv meta, [data-sv-desc] *, h1 *").count() == 0
    assert page.locator("#sv img").count() == 2  # the figure and the (hidden) second figure: the player's own two
    assert page.locator("[data-sv-img]").get_attribute("src").startswith("data:image/svg+xml")
    from specviz.replay.playframes import frames_for

    frames = frames_for(s, run_scenario(s, "numpy"), "en")
    page.keyboard.press("End")  # the walk's end names the labels in its caption and rows: shown as text, as written
    assert page.locator("[data-sv-caption]").text_content() == frames[-1].caption
    rows = page.locator("[data-sv-rows] .row").all()
    assert [r.locator(".lab").text_content() for r in rows] == [str(r.label) for r in frames[-1].rows]
    chips = [c.text_content() for c in page.locator("[data-sv-rows] .chip").all()]
    assert chips == [str(c[0]) for r in frames[-1].rows for c in r.chips if not isinstance(c, str)]
    context.close()
    assert dialogs == [] and all(u == path.as_uri() for u in navigations), (dialogs, navigations)


# ---------------------------------------------------------------------------------------------
# Helpers (one place each)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", LABELS + LONG_PAYLOADS)
def test_json_for_script_round_trips_and_cannot_close_a_script(value):
    text = safety.json_for_script({"v": value, "list": [value]})
    assert not re.search(r"[<>&\u2028\u2029]", text)
    assert json.loads(text) == {"v": value, "list": [value]}


@pytest.mark.parametrize("value", LABELS + LONG_PAYLOADS)
def test_markup_chips_escape_every_value(value):
    from specviz.app.ui import markup

    piece = markup.row_html(value, [markup.chip(value, "accepted", title=value), value])
    for marker in MARKERS:
        assert marker not in piece
    shown = html.unescape(re.sub(r"<[^>]+>", "", piece)).replace(safety.WORD_JOINER, "")  # (invisible: no autolink)
    assert shown.count(value) == 3


@pytest.mark.parametrize("text, ok", [("12", 12), (" -7 ", -7), ("9" * 21, None), ("1" * 5000, None), ("1e5", None),
                                      ("0x10", None), ("", None)])
def test_bounded_int(text, ok):
    if ok is None:
        with pytest.raises(SpecvizError):
            safety.bounded_int(text, "n")
    else:
        assert safety.bounded_int(text, "n") == ok


@pytest.mark.parametrize("text", ["9" * 5000, "1e5", "0x1f", "--1"])
def test_tree_builder_integer_fields_refuse_hostile_numbers(text):
    from specviz.inputs.edits import parse_ints

    with pytest.raises(SpecvizError, match="whole numbers"):
        parse_ints("parent_list", f"-1, 0, {text}")


def test_markup_is_built_in_one_module():
    """unsafe_allow_html appears in specviz/app/ui/markup.py only (fixed markup; values escaped there)."""
    hits = [str(p.relative_to(ROOT)) for p in list((ROOT / "pages").glob("*.py")) + list((ROOT / "specviz").rglob("*.py"))
            if "unsafe_allow_html" in p.read_text(encoding="utf-8") and p.name != "markup.py"]
    assert hits == []


# ---------------------------------------------------------------------------------------------
# The live app: hostile labels / title / description in every page (finding 1), links (4, 9, 10)
# ---------------------------------------------------------------------------------------------

APP_PAGES = {"overview": ("tree", "running_example"), "tree_builder": ("tree", "running_example"),
             "greedy": ("tree", "running_example"), "batch_kv": ("batch", "batch_two_requests"),
             "chain_sampling": ("chain", "pq_example"), "target_only": ("target_only", "target_only_sampling"),
             "dspark": ("dspark", "dspark_chain"), "audit": ("audit", "running_example"), "tour": ("tree", "running_example"),
             "quiz": ("quiz", "running_example")}
_RAW_TAG = re.compile(r"(?<!\\)<(?:img|iframe|meta|script|/script|svg)\b", re.I)


def _elements(at):
    def walk(node):
        for child in (node.children.values() if hasattr(node, "children") else ()):
            yield child
            yield from walk(child)
    yield from walk(at._tree)


def _check_markup(at):
    """No hostile tag reaches an HTML-enabled markdown element; in any markdown element or widget
    label no raw tag and no markdown image / link built from a label."""
    seen_html = 0
    for el in _elements(at):
        proto = getattr(el, "proto", None)
        label = getattr(proto, "label", None) if proto is not None else None
        if isinstance(label, str):  # widget labels render markdown too (links and images included)
            assert "![i](https" not in label and not _RAW_TAG.search(label), (el.type, label)
        body = getattr(proto, "body", None) if proto is not None else None
        if not isinstance(body, str) or el.type == "metric":
            continue
        if getattr(proto, "allow_html", False) and body.startswith('<div class="sv-graph"><svg '):
            _check_inline_figure(body)  # a figure laid out by dot: our SVG, the labels in it text only
            seen_html += 1
            continue
        if getattr(proto, "allow_html", False):
            seen_html += 1
            body = _drop_status_icons(body)  # the tour's fixed icons (markup.icon) are the only SVG allowed in prose
            assert not re.search(r"<(?:img|iframe|meta|script|/script|svg)\b", body, re.I), body[:300]
        assert not _RAW_TAG.search(body), (el.type, body[:300])
        assert "![i](https" not in body, (el.type, body[:300])
    return seen_html


_ICON_SVG = re.compile(r'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"[^>]*>.*?</svg>', re.S)


def _drop_status_icons(body: str) -> str:
    """``body`` without the status icons drawn by ``markup.icon``; each one must be exactly such an icon
    (one of its fixed drawings, its label plain text), so no other SVG passes for one."""
    from specviz.app.ui import markup

    def drop(m):
        label = re.search(r'aria-label="([^"]*)"', m.group(0)).group(1)
        assert "<" not in label and ">" not in label, label
        allowed = {str(markup.icon(name, html.unescape(label))) for name in markup._ICONS}
        assert m.group(0) in allowed, m.group(0)[:300]
        return ""

    return _ICON_SVG.sub(drop, body)


def _check_inline_figure(body: str) -> None:
    """An inline Graphviz figure: nothing that can run, no element from a label, and no character
    Streamlit's markdown would act on, in its text or its attribute values."""
    for tag in re.findall(r"<[^>]*>", body):  # (text may spell "onerror=": dot wrote it as text)
        attrs = re.findall(r'\s([\w:-]+)\s*=\s*"', tag)
        assert not any(a.lower().startswith("on") or "href" in a.lower() for a in attrs), tag
    tags = set(re.findall(r"<\s*/?\s*([A-Za-z][\w:-]*)", body))
    assert tags <= {"div", "svg", "g", "title", "a", "polygon", "polyline", "path", "ellipse", "text", "defs", "line",
                    "linearGradient", "stop", "rect"}, tags
    for text in re.findall(r">([^<]*)<", body) + re.findall(r'="([^"]*)"', body):
        assert not re.search(r"[\[\]()!*_`~\\|$]", text), text


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot")
def test_inline_figure_keeps_hostile_labels_as_text():
    from specviz.render.svg import dot_to_svg
    from specviz.render.tree import tree_dot
    from specviz.app.ui.markup import inline_svg

    labels = ["R", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))", "$\\frac{a}{b}$", "**b** _i_ `c`",
              "</text><script>alert(1)</script>"]
    svg = dot_to_svg(tree_dot([-1, 0, 0, 1, 1, 2], labels, tooltips={1: "<b onmouseover=alert(1)>x</b>"}))
    body = '<div class="sv-graph">' + inline_svg(svg, stretch=True, max_height="70vh") + "</div>"
    _check_inline_figure(body)
    assert not re.search(r"<title>n\d", body), "Graphviz's internal node names are not hover texts"
    shown = html.unescape(body)
    for lab in labels[1:]:
        assert lab in shown, lab  # every label is still there, as text
    with pytest.raises(ValueError):
        inline_svg(svg.replace("<g ", '<g onload="alert(1)" ', 1), stretch=True, max_height="70vh")


@pytest.mark.parametrize("rotate", [0, 10])
@pytest.mark.parametrize("page", sorted(APP_PAGES))
def test_pages_render_hostile_strings_as_text(page, rotate):
    from streamlit.testing.v1 import AppTest

    slot, name = APP_PAGES[page]
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=120)
    at.session_state[f"sv_scn::{slot}"] = _relabel(preset(name), labels=LABELS[rotate:] + LABELS[:rotate]).to_json()
    if page == "audit":  # a wrong answer: the verdict and its rule name hostile tokens
        at.session_state["sv_audit_text"] = "accept_index = [[0, 2, 3]]\npredicts = [0, 0, 0, 0, 0]"
    at.run()
    assert not at.exception, at.exception
    _check_markup(at)
    # Every step of a walk is in the step player (a component of our fixed module): the labels are JSON
    # data it writes with textContent, never markup; the component's own code holds none of them.
    for el in at.get("bidi_component"):
        assert not el.proto.html_content and not el.proto.css_content, page
        assert not any(str(label) in el.proto.js_content for label in LABELS), page


def test_bad_pitfall_link_leaves_the_page_working():
    """A pitfall link whose extra is an object: a named error (no traceback), and the page keeps working."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "pitfalls.py"), default_timeout=120)
    at.query_params["s"] = _pack({"v": 1, "page": "pitfalls", "extra": {"pitfall": {"a": 1}}})
    at.run()
    assert not at.exception, at.exception
    assert any("This link could not be loaded" in e.value and "link.extra.pitfall" in e.value for e in at.error)
    at.run()
    assert not at.exception and not at.error


@pytest.mark.parametrize("name", ["nested_50000", "int_5001_digits", "int_5001_in_scenario", "req_extra_string"])
def test_bad_link_in_the_app_is_a_named_error(name):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "greedy.py"), default_timeout=120)
    at.query_params["s"] = LINKS[name][0]
    at.run()
    assert not at.exception, at.exception
    assert any("This link could not be loaded" in e.value for e in at.error)


def test_older_link_in_the_url_never_undoes_a_click():
    """Finding 10: an edit while the URL still holds an older ?s= (the click raced the address-bar update,
    or the browser went Back) keeps the edit: the older link is not applied again. (Stepping itself now
    happens in the browser, in the step player, so it never reruns the page.)"""
    from streamlit.testing.v1 import AppTest

    s = preset("pq_example")
    first = encode_state(ShareState(page="chain_sampling", slot="chain", scenario=s, step_key="chain", step=1))
    at = AppTest.from_file(str(ROOT / "pages" / "chain_sampling.py"), default_timeout=120)
    at.query_params["s"] = first
    at.run()
    assert at.session_state["sv_step::chain"] == 1
    assert _player_start(at) == 1  # the link's step is where the player starts
    at.button(key="w_chain_q1").click().run()  # u[0] = .4, with the older link still in the URL
    assert not at.exception
    assert scenario_from_json(at.session_state["sv_scn::chain"]).requests[0].coins[0] == pytest.approx(0.4)
    assert _player_start(at) == at.session_state["sv_step::chain"] > 1  # new inputs: their outcome first
    at.query_params["s"] = first  # the first link again
    at.run()
    assert scenario_from_json(at.session_state["sv_scn::chain"]).requests[0].coins[0] == pytest.approx(0.4)


def _player_start(at) -> int:
    return players(at)[0]["start"]


# ---------------------------------------------------------------------------------------------
# Abuse limits: trials per click, heavy work per tab, server-wide slots, paste size on the page
# ---------------------------------------------------------------------------------------------

def test_monte_carlo_trials_are_capped_per_click():
    from specviz.app.ui.heavy import MAX_TRIAL_CELLS, cap_trials

    assert cap_trials(40_000, 5, 6) == 40_000  # the presets run in full
    n = cap_trials(40_000, 16, 1024)
    assert 1 <= n < 40_000 and n * 16 * 1024 <= MAX_TRIAL_CELLS


def _fake_session(monkeypatch):
    from types import SimpleNamespace

    from specviz.app.ui import heavy

    monkeypatch.setattr(heavy, "st", SimpleNamespace(session_state={}))
    return heavy


def test_one_tab_cannot_exceed_its_heavy_work_budget(monkeypatch):
    heavy = _fake_session(monkeypatch)
    monkeypatch.setattr(heavy, "SESSION_BUDGET_S", 0.05)
    with heavy.heavy("Monte Carlo"):
        time.sleep(0.06)
    with pytest.raises(SpecvizError, match=r"Monte Carlo.*wait \d+ s"):
        with heavy.heavy("Monte Carlo"):
            pass


# (waiting for a free slot: tests/test_heavy_slots.py; a queued request is answered, never refused)


def test_audit_page_refuses_an_oversized_paste_clearly():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "audit.py"), default_timeout=120)
    at.session_state["sv_audit_text"] = "predicts = [" + "1, " * (MAX_PASTE_CHARS // 3 + 10) + "1]"
    at.run()
    assert not at.exception, at.exception
    assert any("at most 100,000" in e.value for e in at.error), [e.value for e in at.error]


def test_largest_scenario_the_limits_admit_saves_and_loads_back(tmp_path):
    """The widest admitted scenario with full-precision tables, saved as the app saves it (indent 2),
    stays under the file cap and loads back equal (the cap refuses only what no valid scenario needs)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_worst_scenario import worst

    from specviz.inputs.scenario import MAX_TABLE_CELLS, MAX_VOCAB

    data = worst("chain_rejection", 1, MAX_TABLE_CELLS // MAX_VOCAB, MAX_VOCAB)
    rng = __import__("random").Random(1)
    for r in data["requests"]:
        for key in ("target_probs", "draft_probs"):
            rows = [[rng.random() + 1e-3 for _ in row] for row in r[key]]
            r[key] = [[x / sum(row) for x in row] for row in rows]
    s = scenario_from_dict(data)
    path = tmp_path / "widest.json"
    path.write_text(s.to_json(), encoding="utf-8")
    assert path.stat().st_size <= MAX_SCENARIO_CHARS
    assert load_scenario(path) == s


def test_error_messages_quote_labels_as_text():
    """A SpecvizError quotes the user's label (e.g. a target_predict not in the vocabulary); in
    st.error that quote must not become an image, link or tag, while field names keep their brackets."""
    from specviz.inputs.scenario import scenario_from_dict

    d = preset("running_example").model_dump(mode="json")
    d["requests"][0]["target_predict"][0] = "![a](http://e.x/a.png)<b>"  # a label is at most 32 characters
    with pytest.raises(SpecvizError) as err:
        scenario_from_dict(d)
    shown = safety.md_message(err.value.detail)
    assert "![a](http" in err.value.detail and "](" not in shown and "\\<b\\>" in shown
    assert safety.md_message("target_probs[1]") == "target_probs[1]"
    # every page shows errors through the one helper (no hand-built st.error with user text)
    for page in (Path(__file__).resolve().parents[1] / "pages").glob("*.py"):
        assert 'st.error(f"**{' not in page.read_text(encoding="utf-8"), page.name


# =============================================================================================
# Issue 19 ("hostile links, round two"): one regression test (or family) per broken family
# =============================================================================================

def _big_fan(seq_len: int, algorithm: str = "greedy"):
    """The issue's link: 64 nodes, the root with 16 children (topk 16), a huge seq_len."""
    parents = [-1] + [0] * 16 + [1] * 16 + [2] * 16 + [3] * 15
    return scenario_from_dict({"name": "x", "algorithm": algorithm, "vocab": ["A"],
                               "requests": [{"tree": {"parents": parents, "tokens": ["A"] * 64}, "seq_len": seq_len,
                                             "target_predict": ["A"] * 64}]})


# -- family 1: memory through seq_len -----------------------------------------------------------

def test_described_full_mask_equals_build_tree_where_both_fit():
    """build_tree_described is build_tree in full_mask mode with the all-True prefix described:
    the same cells (written out), positions and links, for prefixes of several lengths and two requests."""
    import numpy as np

    from specviz.reference import build_tree, build_tree_described, tree_mask_matrix

    pl = np.array([[-1, 0, 1, 2, 3], [-1, 0, 1, 2, 5]])  # [bs, topk*(depth-1)+1], topk 2, depth 3
    si = np.array([[0, 1, 2, 5], [0, 1, 3, 4]])
    for sl in ([0, 0], [3, 7], [11, 1]):
        a = build_tree(pl, si, np.array(sl), topk=2, depth=3, num_draft_tokens=5)
        b = build_tree_described(pl, si, np.array(sl), topk=2, depth=3, num_draft_tokens=5)
        assert np.array_equal(b.tree_mask.materialise(10_000), a.tree_mask) and len(b.tree_mask) == len(a.tree_mask)
        assert np.array_equal(b.positions, a.positions)
        for k in ("retrieve_index", "retrieve_next_token", "retrieve_next_sibling"):
            assert np.array_equal(getattr(b, k), getattr(a, k))
        for r in range(2):
            assert np.array_equal(tree_mask_matrix(b, sl, 5, "full_mask", r), tree_mask_matrix(a, sl, 5, "full_mask", r))


def test_tree_views_of_a_huge_seq_len_allocate_almost_nothing():
    """Issue 19 family 1: the tree builder's views of the 327-character link (seq_len 15,000,000,
    and the schema's maximum 10^9) used to allocate n x seq_len bytes (960 MB; 64 GB at 10^9).
    Now the peak of Python allocations stays under 4 MB and the cached value is a few kB."""
    import pickle
    import tracemalloc

    from specviz.inputs.edits import tree_views

    for seq_len in (15_000_000, 10**9):
        s = _big_fan(seq_len)
        tracemalloc.start()
        views = tree_views(s, 0, "full_mask")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 4 << 20, (seq_len, peak)
        assert len(pickle.dumps(views)) < 256 << 10
        assert views["build"].tree_mask.size == 64 * seq_len + 64 * 64
        assert int(views["build"].positions[0]) == seq_len


def test_tree_builder_page_with_a_huge_seq_len_holds_little(monkeypatch):
    """The page itself (views, backend badge, raw tensors) on the issue's link: no exception, the
    badge compares in qlen_only mode (no n x seq_len allocation on any backend), and the page's
    caches hold under 1 MB."""
    from streamlit.testing.v1 import AppTest

    from specviz.app.ui import bounded_cache

    bounded_cache.clear_all()
    at = AppTest.from_file(str(ROOT / "pages" / "tree_builder.py"), default_timeout=120)
    at.session_state["sv_scn::tree"] = _big_fan(15_000_000).to_json()
    at.run()
    assert not at.exception, at.exception
    left = [b.key for b in at.button if (b.key or "").startswith("w_badge_all::")]  # a CPU server compares on request
    if left:
        at.button(key=left[0]).click().run()
        assert not at.exception, at.exception
    assert any("qlen_only" in s.value for s in at.success) or any("qlen_only" in e.value for e in at.error)
    assert bounded_cache.held_bytes() < 1 << 20, bounded_cache.held_bytes()


def test_result_caches_are_bounded_in_bytes(monkeypatch):
    """A cache of 64 *entries* of 1 GB each is 64 GB: bounded_cache counts bytes. 40 different 1 MB
    results into a 4 MB budget leave at most 4 MB held; a value above the per-entry cap is not kept."""
    from specviz.app.ui import bounded_cache as bc

    monkeypatch.setattr(bc, "TOTAL_BYTES", 4 << 20)
    bc.clear_all()

    @bc.bounded_cache(share=1.0)
    def blob(i: int) -> bytes:
        return bytes([i % 256]) * (1 << 20)

    for i in range(40):
        assert blob(i)[0] == i % 256
    assert bc.held_bytes() <= 4 << 20 + 4096
    assert blob.contains(39) and not blob.contains(0)
    monkeypatch.setattr(bc, "MAX_ENTRY_BYTES", 1 << 10)

    @bc.bounded_cache(share=1.0)
    def big(i: int) -> bytes:
        return b"x" * (1 << 20)

    big(1)
    assert not big.contains(1)
    bc.clear_all()


# -- family 2: CPU on the decoding-loop page ------------------------------------------------------

def test_loop_work_is_estimated_and_refused_before_it_starts():
    from specviz.base.limits import LOOP_MAX_WORK
    from specviz.rooms.loop.budget import check_loop_budget
    from specviz.rooms.loop.decode import LoopSettings

    small = LoopSettings(topk=2, depth=4, num_draft_tokens=8, rounds=16).checked()
    assert check_loop_budget("The target model verifies the draft tree. ", small) < LOOP_MAX_WORK
    biggest = LoopSettings(topk=4, depth=6, num_draft_tokens=85, rounds=64).checked()
    with pytest.raises(SpecvizError, match=r"lower rounds to \d+ or less") as err:
        check_loop_budget("x" * 340, biggest)
    assert err.value.field == "rounds" and f"{LOOP_MAX_WORK:,}" in err.value.detail
    with pytest.raises(SpecvizError) as err:
        check_loop_budget("x" * 401, small)
    assert err.value.field == "prompt"


def test_loop_page_at_its_maximal_sliders_refuses_without_working():
    """Issue 19 family 2: sliders at their maxima and a 340-character prompt cost 115 s of CPU per
    Enter. Now the page names the field and the limit before any work: the run takes < 20 s of
    CPU here (the page itself, importing the models), not minutes."""
    import time

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "decoding_loop.py"), default_timeout=120)
    at.run()
    for k, v in (("sv_loop::topk", 4), ("sv_loop::depth", 6), ("sv_loop::n", 85), ("sv_loop::rounds", 64),
                 ("sv_loop::prompt", ("The target model verifies the draft tree. " * 9)[:340])):
        at.session_state[k] = v
    t0 = time.process_time()
    at.run()
    assert time.process_time() - t0 < 20
    assert not at.exception, at.exception
    assert any("**rounds**" in e.value and "at most 200,000" in e.value for e in at.error), [e.value for e in at.error]


def test_heavy_slots_follow_the_cgroup_cpu_quota(tmp_path):
    """os.cpu_count() is the host's in a container: the slots follow the pod's CPU quota."""
    from specviz.app.ui.heavy import available_cpus

    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert available_cpus(str(tmp_path)) == 1
    (tmp_path / "cpu.max").write_text("400000 100000\n")
    assert available_cpus(str(tmp_path)) == min(4, len(os.sched_getaffinity(0)))
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert available_cpus(str(tmp_path)) == len(os.sched_getaffinity(0))


# -- family 3: markdown images, links and autolinks -----------------------------------------------

_AUTOLINKS = ("http://e.x/p", "https://e.x", "www.e.x", "me@e.x", "x![i](http://e.x/N)", "[c](https://e.x)")


@pytest.mark.parametrize("text", _AUTOLINKS)
def test_every_escaping_helper_breaks_autolinks(text):
    """remark-gfm links bare URLs *after* escapes and entities are decoded: every helper must leave
    no "http://", "https://", "www." or "x@y" intact (a word joiner sits inside), while the text reads the same."""
    for helper in (safety.md_text, safety.md_prose, safety.md_message, safety.html_text, safety.table_cell):
        out = html.unescape(helper(text)).replace("\\", "")
        assert not re.search(r"https?://|www\.|\w@\w", out), (helper.__name__, out)
        assert out.replace(safety.WORD_JOINER, "").replace(" ", "") == text.replace(" ", ""), (helper.__name__, out)


def test_tr_values_never_autolink():
    from specviz.app.ui.i18n import tr

    assert "http://" not in tr("the scenario '{n}'", n="see http://e.x")


def test_share_caption_and_tables_show_a_markdown_image_name_as_text():
    """Issue 19 family 3: a name x![i](http://host/N) became an <img> in the sidebar's share caption;
    labels became images in st.table cells (audit, greedy shift tables)."""
    from streamlit.testing.v1 import AppTest

    data = json.loads(_relabel(preset("running_example"), labels=["![i](http://e.x/L)", "http://e.x/u"]).to_json())
    data["name"] = "x![i](http://e.x/N)"
    s = scenario_from_dict(data)
    for page, slot in (("greedy", "tree"), ("audit", "audit")):
        at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=120)
        at.session_state[f"sv_scn::{slot}"] = s.to_json()
        if page == "audit":
            at.session_state["sv_audit_text"] = "accept_index = [[0, 2, 3]]"
        at.run()
        assert not at.exception, at.exception
        for el in _elements(at):
            body = getattr(getattr(el, "proto", None), "body", None)
            if isinstance(body, str):
                assert "![i](http" not in body and not re.search(r"(?<!\u2060)https?://e\.x", body), (page, el.type, body[:200])
        if page == "audit":
            # st.table renders its cells as markdown: the cells it shows are the escaped text (the raw
            # value stays in the table's data, which is not rendered)
            shown = "".join(str(t.proto) for t in at.get("table"))
            assert "\\\\!\\\\[i\\\\]" in shown, page
        else:  # greedy's shift table is HTML (markup.table_html): the label is one escaped cell
            bodies = "".join(getattr(el.proto, "body", "") for el in _elements(at) if hasattr(el, "proto"))
            assert f"<td>{safety.html_text('![i](http://e.x/L)')}</td>" in bodies, page


# -- family 4: every value the schema accepts renders on every page --------------------------------

def _extreme(slot: str, coin: float, thr: float, seq_len: int):
    """A scenario for ``slot`` with coins, thresholds and seq_len at the given (admitted) values."""
    name = {"tree": "running_example", "batch": "batch_two_requests", "chain": "pq_example",
            "target_only": "target_only_sampling", "dspark": "dspark_sampling", "audit": "running_example"}[slot]
    d = json.loads(preset(name).to_json())
    for r in d["requests"]:
        r["seq_len"] = seq_len
        if r.get("coins") is not None:
            r["coins"] = [coin] * len(r["coins"])
        if r.get("coin_final") is not None:
            r["coin_final"] = coin
    if slot == "target_only":
        d["threshold_acc"] = thr
        d["threshold_single"] = thr
    return scenario_from_dict(d)


SCHEMA_PAGES = {"overview": "tree", "tree_builder": "tree", "greedy": "tree", "batch_kv": "batch",
                "chain_sampling": "chain", "target_only": "target_only", "dspark": "dspark", "audit": "audit"}


def _peak_rss_mb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) // 1024
    return 0


def _render(page: str, slot: str, s):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=120)
    at.session_state[f"sv_scn::{slot}"] = s.to_json()
    before = _peak_rss_mb()
    at.run()
    assert not at.exception, (page, [e.message for e in at.exception])
    # bounded memory: the process's peak grows by < 300 MB (a 10^9 seq_len used to want 64 GB)
    assert _peak_rss_mb() - before < 300, (page, before, _peak_rss_mb())


@pytest.mark.parametrize("page", sorted(SCHEMA_PAGES))
def test_schema_extremes_render_on_every_page(page):
    """Issue 19 family 4: values the schema accepts crashed widgets (StreamlitValueAboveMaxError):
    coins and coin_final in [0.999, 1), threshold_acc < 0.05, seq_len > 10^6 on Batch/KV and DSpark.
    The limits (specviz.base.limits) are now one set: the schema's extremes render everywhere."""
    from specviz.base.limits import MAX_COIN, MAX_SEQ_LEN, MIN_THRESHOLD

    _render(page, SCHEMA_PAGES[page], _extreme(SCHEMA_PAGES[page], MAX_COIN, MIN_THRESHOLD, MAX_SEQ_LEN))


def test_tree_builder_renders_a_root_with_63_children():
    """> 16 children: the EAGLE form's topk (63) was above the topk widget's maximum (16)."""
    parents = [-1] + [0] * 63
    s = scenario_from_dict({"name": "fan", "algorithm": "greedy", "vocab": ["A"],
                            "requests": [{"tree": {"parents": parents, "tokens": ["A"] * 64}, "seq_len": 10**9,
                                          "target_predict": ["A"] * 64}]})
    _render("tree_builder", "tree", s)


def test_schema_values_render_on_every_page_fuzzed():
    """Hypothesis over the scenario schema's numeric fields (coins, thresholds, seq_len) through every
    scenario page: no exception element, bounded memory. Kept cheap (2 examples x 8 pages)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as hs

    from specviz.base.limits import MAX_COIN, MAX_SEQ_LEN

    @settings(max_examples=2, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(coin=hs.floats(0, MAX_COIN), thr=hs.floats(0, 1), seq_len=hs.integers(0, MAX_SEQ_LEN))
    def check(coin, thr, seq_len):
        for page, slot in SCHEMA_PAGES.items():
            _render(page, slot, _extreme(slot, coin, thr, seq_len))
    check()


def test_schema_refuses_what_the_widgets_cannot_show():
    from specviz.base.limits import MAX_COIN

    d = json.loads(preset("pq_example").to_json())
    d["requests"][0]["coin_final"] = 0.99995
    with pytest.raises(SpecvizError, match="coin_final"):
        scenario_from_dict(d)
    d["requests"][0]["coin_final"] = MAX_COIN
    d["requests"][0]["coins"][0] = 0.99999
    with pytest.raises(SpecvizError, match=r"coins\[0\]"):
        scenario_from_dict(d)


# -- family 5: markup in the chart export ----------------------------------------------------------

def test_chart_export_shows_html_labels_as_text():
    """Issue 19 family 5: labels went into plotly as raw HTML (<a href> clickable, <span style> CSS)
    in the chart's HTML export. Every figure builder now escapes its text arguments."""
    import numpy as np

    from specviz.render.dspark_charts import match_figure
    from specviz.render.mask import mask_heatmap
    from specviz.render.sampling_charts import probability_heatmap

    a, sp = '<a href="http://e.x">A</a>', '<span style="color:red">S</span>'
    figs = [mask_heatmap(np.eye(2, dtype=bool), [a, sp]),
            probability_heatmap([a, sp], [a, sp], [[0.5, 0.5], [1, 0]]),
            match_figure([a, sp, "c"], [a, sp, "c"], [True, False], 1)]
    for fig in figs:
        text = fig.to_json()
        assert "<a href" not in text and "<span style" not in text
        assert "&lt;a href" in text or "&lt;span" in text


# -- family 6: CLI path traversal -------------------------------------------------------------------

def test_audit_scenario_file_stays_in_the_audit_files_folder(tmp_path):
    """Issue 19 family 6: "scenario_file": "../cli/secret.json" was read from anywhere and a field of it
    echoed in the error. Now: one line, exit 2, nothing of the other file; inside the folder and
    --scenario (chosen by the user) still work."""
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"name": "TOPSECRET-1234", "password": "hunter2"}))
    inside = tmp_path / "audits"
    inside.mkdir()
    (inside / "s.json").write_text(preset("running_example").to_json())
    claimed = {"accept_index": [[0, 1, 3]]}
    for ref in ("../secret.json", str(secret), "../../../../../../etc/passwd", "/dev/zero"):
        f = inside / "a.json"
        f.write_text(json.dumps({"scenario_file": ref, "claimed": claimed}))
        r = cli("audit", str(f))
        assert r.returncode == 2, (ref, r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and "scenario_file" in r.stderr and "outside" in r.stderr, r.stderr
        assert "TOPSECRET" not in r.stderr + r.stdout and "hunter2" not in r.stderr + r.stdout and "root:" not in r.stderr
    (inside / "link.json").symlink_to(secret)
    f.write_text(json.dumps({"scenario_file": "link.json", "claimed": claimed}))
    r = cli("audit", str(f))
    assert r.returncode == 2 and "TOPSECRET" not in r.stderr and "outside" in r.stderr
    (inside / "bad.json").write_text(json.dumps({"name": "TOPSECRET-1234", "algorithm": "greedy", "vocab": ["hunter2"]}))
    f.write_text(json.dumps({"scenario_file": "bad.json", "claimed": claimed}))
    r = cli("audit", str(f))
    assert r.returncode == 2 and "TOPSECRET" not in r.stderr and "hunter2" not in r.stderr, r.stderr
    f.write_text(json.dumps({"scenario_file": "s.json", "claimed": claimed}))
    r = cli("audit", str(f))
    assert r.returncode == 0, r.stdout + r.stderr
    f.write_text(json.dumps({"claimed": claimed}))
    r = cli("audit", str(f), "--scenario", str(inside / "s.json"))
    assert r.returncode == 0, r.stdout + r.stderr


# -- family 7: bidi and control characters ---------------------------------------------------------

@pytest.mark.parametrize("bad", ["\u202eevil", "nul\x00", "cr\rx", "esc\x1b[31m", "\u2066iso\u2069", "bom\ufeff"])
def test_bidi_and_control_characters_become_visible_escapes(bad):
    d = json.loads(preset("running_example").to_json())
    d["name"] = "n" + bad
    d["title"] = "t" + bad
    d["description"] = "line one\nline two " + bad
    d = json.loads(json.dumps(d).replace('"A"', json.dumps("A" + bad)))  # the label everywhere it is used
    s = scenario_from_dict(d)
    invisible = re.compile("[\x00-\x09\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069\ufeff]")
    a = s.vocab.index(s.requests[0].tree.tokens[1])
    for value in (s.name, s.title, s.vocab[a], s.requests[0].tree.tokens[1]):
        assert not invisible.search(value) and "\\" in value, repr(value)
    assert "\n" in s.description and not invisible.search(s.description)


# -- also found ------------------------------------------------------------------------------------

def test_presentation_mode_link_opens_and_overview_link_has_a_page():
    """A link made in presentation mode carries extra {"present": true}: it was refused. A link to the
    overview (the app's default page, served at "/") pointed at "/overview": "Page not found"."""
    from specviz.rooms.share import page_path, share_url

    state = ShareState(page="greedy", scenario=preset("running_example"), extra={"present": True})
    assert decode_state(encode_state(state)).extra == {"present": True}
    assert page_path("overview") == "/" and page_path("greedy") == "/greedy"
    assert share_url("http://h:1", ShareState(page="overview")).startswith("http://h:1/?s=")
