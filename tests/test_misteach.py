"""Regression tests for issue 9 ("the app must never mis-teach"): one test per finding.

Each test drives what a user does (AppTest for pages, the library for the rest) and compares
what is shown with what the engine computes from the live scenario.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from specviz.app.ui.state import widget_key
from specviz.render.svg import have_dot  # noqa: E402

NO_DOT = "the step player draws with Graphviz's dot, which is not installed here (apt-get install graphviz); pages fall back to the browser's graphviz chart"


from specviz.inputs import edits  # noqa: E402
from specviz.replay import engine  # noqa: E402
from specviz.rooms.audit import audit  # noqa: E402
from specviz.inputs.scenario import load_scenario  # noqa: E402
from specviz.inputs.scenario import scenario_from_json as load_scenario_json  # noqa: E402
from tests.figures import graphs, node_markup  # noqa: E402
from tests.player_read import players

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 120


def _app() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    return at


def _ok(at):
    assert not at.exception, at.exception
    return at


def _texts(at) -> str:
    return "\n".join(str(m.value) for m in at.markdown) + "\n" + "\n".join(str(c.value) for c in at.caption)


def _player_frames(at) -> list[dict]:
    """The greedy step player's frames (every step of the walk), as the page's rerun sent them."""
    found = players(at)
    assert found, "no step player on the page"
    return found[0]["frames"]


def _live_accept_index(at, k: int = -1) -> list[int]:
    """The player's line `accept_index[0] = [...]` at frame k (default: the walk's last step)."""
    code = [r["code"] for r in _player_frames(at)[k]["rows"] if r.get("code", "").startswith("accept_index[0]")]
    assert code, "no live accept_index line"
    return json.loads(code[0].split("=", 1)[1])


def _running():
    return load_scenario(ROOT / "scenarios/running_example.json")


# -- 1. the width never shrinks behind the user's back -----------------------------------------------

def _rebuild(s, steps):
    """Apply tree edits as the tree builder does (delete / add child by token path)."""
    for op, path, label in steps:
        tree = s.tree(0)
        paths = edits.token_paths(tree)
        ids = tuple(s.token_id(x) for x in path)
        node = paths.index(ids)
        if op == "delete":
            s = edits.replace_tree(s, tree.delete_subtree(node))
        else:
            s = edits.replace_tree(s, tree.add_child(node, s.token_id(label)))
    return s


def test_width_follows_the_tree_after_delete_and_re_add():
    s = edits.add_vocab(edits.add_vocab(_running(), "E"), "F")
    s = _rebuild(s, [("delete", "RA", None), ("add", "R", "A"), ("add", "RA", "C")])
    assert s.width == max(s.tree(0).depths()) + 1 == 3
    s = edits.set_target_predict(s, edits.agree_along(s, "last"))
    c = engine.run_scenario(s).commit
    assert [s.label(t) for t in c.output_tokens] == ["A", "C", "X"]


def test_width_after_building_RABE_AC_D_BF():
    s = edits.add_vocab(edits.add_vocab(_running(), "E"), "F")
    s = _rebuild(s, [("delete", "RA", None), ("delete", "RB", None), ("add", "R", "A"), ("add", "R", "B"),
                              ("add", "R", "E"), ("add", "RA", "C"), ("add", "RA", "D"), ("add", "RB", "F")])
    tp = edits.free_token(s, s.tree(0))
    labels = [tp] * s.n
    tree = s.tree(0)
    paths = edits.token_paths(tree)
    labels[0] = "B"
    labels[paths.index((s.token_id("R"), s.token_id("B")))] = "F"
    s = edits.set_target_predict(s, labels)
    c = engine.run_scenario(s).commit
    assert [s.label(t) for t in c.committed_tokens] == ["R", "B", "F"]


def test_greedy_page_after_delete_and_re_add_accepts_the_whole_walk():
    at = _app()
    at.switch_page("pages/tree_builder.py").run()
    at.selectbox(key=widget_key("sv_sel::tree", at.session_state)).select(1).run()
    _ok(at.button(key="w_delete").click().run())
    at.selectbox(key=widget_key("sv_sel::tree", at.session_state)).select(0).run()
    at.selectbox(key=widget_key("sv_tok::tree", at.session_state)).select("A").run()
    _ok(at.button(key="w_add_child").click().run())
    at.selectbox(key=widget_key("sv_tok::tree", at.session_state)).select("C").run()
    _ok(at.button(key="w_add_child").click().run())
    _ok(at.switch_page("pages/greedy.py").run())
    q = next(b for b in at.button if "A → C" in str(b.label))
    _ok(q.click().run())
    s = load_scenario_json(at.session_state["sv_scn::tree"])
    assert s.width == 3
    want = engine.run_scenario(s).commit
    assert [s.label(t) for t in want.output_tokens] == ["A", "C", "X"]
    assert _live_accept_index(at) == want.accept_rows == [0, 2, 3]
    text = _texts(at)
    assert "num_speculative_tokens" in text  # the width is shown with what it means


# -- 2. edited trees never keep the preset's words ---------------------------------------------------

def test_overview_caption_and_reset_follow_the_live_result():
    at = _app()
    at.switch_page("pages/greedy.py").run()
    next(sb for sb in at.selectbox if sb.label.startswith("Target(A)")).select("D").run()
    _ok(at.switch_page("pages/overview.py").run())
    text = _texts(at)
    assert "[0,1,3]" not in text.replace(" ", "") and "A C X" not in text, text
    assert "A D X" in text
    assert any(b.key == "w_reset_running" for b in at.button)
    _ok(at.button(key="w_reset_running").click().run())
    assert "A C X" in _texts(at)
    assert not any(b.key == "w_reset_running" for b in at.button)


def test_greedy_shift_caption_names_the_live_walk():
    at = _app()
    _ok(at.switch_page("pages/greedy.py").run())
    q = next(b for b in at.button if str(b.label).startswith("Target agrees along B"))
    _ok(q.click().run())
    text = _texts(at)
    assert "(R, A, C)" not in text and "row R emits A" not in text, text
    s = load_scenario(ROOT / "scenarios/running_example.json")
    assert "R emits B" in text


def test_exported_animation_title_is_the_live_walk():
    from specviz.rooms.export import animation_html

    s = _running()
    s = edits.set_target_predict(s, edits.agree_along(s, "last"))  # R -> B
    html = animation_html(s)
    raw = re.search(r'<script type="application/json" id="sv-data">(.*?)</script>', html, re.S).group(1)
    data = json.loads(raw)  # the player sets the page title and description from this data
    title, desc = data["title"], data["desc"]
    assert "A C X" not in title and "R -> A -> C" not in title, title
    assert "B X" in title and "R → B" in title, title
    assert "R -> A -> C" not in desc and "output A C X" not in desc, desc
    assert "accept_index = [0, 2]" in desc, desc


# -- 3. DSpark sampling's terminal caption --------------------------------------------------------------

def test_dspark_sampling_terminal_caption_is_not_the_greedy_one():
    at = AppTest.from_file(str(ROOT / "pages/dspark.py"), default_timeout=TIMEOUT)
    at.session_state["sv_scn::dspark"] = load_scenario(ROOT / "scenarios/dspark_sampling.json").to_json()
    _ok(at.run())
    seen = [f["caption"] for f in _player_frames(at)]  # every step's caption, as the player shows it
    assert len(seen) > 3
    joined = "\n".join(seen)
    assert "target_predict" not in joined, joined
    assert "u_final" in joined


# -- 4. one language key ---------------------------------------------------------------------------------

def test_language_radio_stays_in_step_on_every_page():
    at = _app()
    at.radio(key=widget_key("sv_lang", at.session_state)).set_value("zh").run()
    for p in ["pages/tree_builder.py", "pages/greedy.py", "pages/chain_sampling.py", "pages/dspark.py",
              "pages/pitfalls.py", "pages/quiz.py", "pages/overview.py"]:
        _ok(at.switch_page(p).run())
        assert at.session_state["sv_lang"] == "zh"
        assert at.radio(key=widget_key("sv_lang", at.session_state)).value == "zh", p
    at.radio(key=widget_key("sv_lang", at.session_state)).set_value("en").run()
    assert at.session_state["sv_lang"] == "en"
    assert at.title[0].value == "The Accept stage of speculative decoding"


# -- 5. the badge fails on a silent backend ----------------------------------------------------------------

class _Fake:
    """A backend namespace whose greedy function returns ``make(real_result_dict)``."""

    def __init__(self, make, real):
        self.make, self.real = make, real

    def verify_tree_greedy(self, *a, **kw):
        r = self.real.verify_tree_greedy(*a, **kw)
        d = self.make({k: v for k, v in r.as_dict().items()})

        class R:
            def as_dict(self_inner):
                return d
        return R()


@pytest.mark.parametrize("make,what", [
    (lambda d: {}, "nothing"),
    (lambda d: {k: v for k, v in d.items() if k != "accept_index"}, "accept_index"),
    (lambda d: {**d, "accept_index": d["accept_index"].reshape(-1)}, "shape"),
])
def test_compare_backends_fails_on_a_silent_backend(monkeypatch, make, what):
    import specviz.algorithms.backends as backends

    real = backends.get_backend("torch")
    monkeypatch.setattr(backends, "get_backend", lambda name: _Fake(make, real))
    out = engine.compare_backends(_running(), ["fake"])
    assert out["fake"] is not None, what
    assert what in out["fake"] or what == "nothing"


def test_compare_backends_passes_an_honest_backend():
    assert engine.compare_backends(_running(), ["torch"]) == {"torch": None}


# -- 6. audit points at the claimed thing -------------------------------------------------------------------

def test_audit_points_at_the_claimed_node():
    f = audit(_running(), {"accept_index": [[0, 1, 4]]}).first_error
    assert f.claimed_node == 4 and f.claimed_row == 4
    assert f.node == 3  # the expected node stays known


def test_audit_names_the_one_wrong_output_token():
    f = audit(_running(), {"outputs": ["A", "D", "X"]}).first_error
    assert f.where == "outputs[0][1]", f.where
    assert f.got == "D" and f.expected == "C"


def test_audit_page_outlines_and_paints_the_claimed_row():
    at = AppTest.from_file(str(ROOT / "pages/audit.py"), default_timeout=TIMEOUT)
    _ok(at.run())
    _ok(at.text_area(key=widget_key("sv_audit_text", at.session_state)).set_value("accept_index = [[0, 1, 4]]").run())
    from specviz.render.palette import PALETTE, state_color

    fig = graphs(at)[0]
    n4, n3 = node_markup(fig, "n4").lower(), node_markup(fig, "n3").lower()
    assert PALETTE["selected"].lower() in n4 and state_color("rejected").lower() in n4, n4  # the claimed D: outlined, red
    assert PALETTE["selected"].lower() not in n3 and state_color("accepted").lower() in n3, n3  # the expected C stays accepted
    styles = next(str(x.proto) for x in at.table if state_color("rejected") in str(x.proto))  # the shift table's colours
    red_rule = next(rule for rule in styles.split("\\n") if state_color("rejected") in rule)
    assert "_row4_" in red_rule and "_row3_" not in red_rule, styles  # the claimed row 4 is red, not the correct row 3


# -- 7. teaching slips ------------------------------------------------------------------------------------

def test_quiz_placeholders_are_neutral():
    at = AppTest.from_file(str(ROOT / "pages/quiz.py"), default_timeout=TIMEOUT)
    _ok(at.run())
    box = at.text_input(key=widget_key("sv_quiz_answer", at.session_state))
    assert box.placeholder not in ("[0, 1, 3]", "A C X"), box.placeholder
    exp = engine.run_scenario(_running()).result
    assert str([int(x) for x in exp["accept_index"][0]]) != box.placeholder


def test_greedy_end_state_is_revealed_by_the_walk_and_labelled_as_the_end():
    """Stepping happens in the browser (issue 11), so the panel under the player is the end state
    and says so; the walk itself reveals accept_index and the counts step by step."""
    at = AppTest.from_file(str(ROOT / "pages/greedy.py"), default_timeout=TIMEOUT)
    _ok(at.run())
    frames = _player_frames(at)

    def count(frame):
        row = next(r for r in frame["rows"] if r["label"] == "num_correct_drafts")
        return row["chips"][0][0]

    assert _live_accept_index(at, 0) == [-1, -1, -1] and count(frames[0]) == "0"
    assert _live_accept_index(at, -1) == [0, 1, 3] and count(frames[-1]) == "2"
    assert "The end state, after the walk's last step" in _texts(at)


def test_tour_stop_4_does_not_send_semantics_to_the_chain_page():
    src = (ROOT / "pages/tour.py").read_text()
    assert "switch semantics between 0.5.23 and earlier: why do they disagree" not in src
    # the chain test is strict < under both semantics: the same coin gives the same verdict
    from specviz.reference import chain_rejection_sampling  # noqa: F401
    s = load_scenario(ROOT / "scenarios/pq_example.json")
    data = s.model_dump(mode="json")
    out = []
    for sem in ("0.5.23", "earlier"):
        d = dict(data, semantics=sem) if "semantics" in data else data
        try:
            from specviz.inputs.scenario import scenario_from_dict
            out.append(engine.run_scenario(scenario_from_dict(d)).result["accept_index"].tolist())
        except Exception:  # noqa: BLE001
            out.append(None)
    assert out[0] == out[1]


# -- 5b. the page's badge turns red on a silent backend ------------------------------------------------------

def _compare_all(at) -> None:
    """Press the badge's "Compare ... too" when the page left a backend to it (a CPU server compares
    torch and the Triton interpreter on request: test_badge_on_request)."""
    keys = [b.key for b in at.button if (b.key or "").startswith("w_badge_all::")]
    if keys:
        at.button(key=keys[0]).click().run()


@pytest.mark.parametrize("make", [lambda d: {}, lambda d: {k: v for k, v in d.items() if k != "accept_index"}])
def test_greedy_page_badge_is_red_for_a_silent_backend(monkeypatch, make):
    import streamlit as st

    import specviz.algorithms.backends as backends

    real_get = backends.get_backend
    real = real_get("torch")
    monkeypatch.setattr(backends, "get_backend", lambda name: _Fake(make, real) if name == "torch" else real_get(name))
    from specviz.app.ui import bounded_cache

    bounded_cache.clear_all()  # the badge's comparison is cached per scenario (ui.bounded_cache)
    st.cache_data.clear()
    try:
        at = AppTest.from_file(str(ROOT / "pages/greedy.py"), default_timeout=TIMEOUT)
        _ok(at.run())
        _compare_all(at)
        assert not any("backends agree" in str(x.value) for x in at.success)
        assert any("torch disagrees with the reference" in str(e.value) for e in at.error), [e.value for e in at.error]
    finally:
        bounded_cache.clear_all()
        st.cache_data.clear()


def test_a_backend_that_raises_is_named_as_failing_not_as_disagreeing(monkeypatch):
    """A crash is not an answer: the badge says the backend failed to run (and why), not that it disagrees."""
    import streamlit as st

    import specviz.algorithms.backends as backends

    real_get = backends.get_backend

    class _Raising:
        def __getattr__(self, name):
            def boom(*args, **kwargs):
                raise RuntimeError("out of device memory")
            return boom

    monkeypatch.setattr(backends, "get_backend", lambda name: _Raising() if name == "torch" else real_get(name))
    from specviz.app.ui import bounded_cache

    bounded_cache.clear_all()
    st.cache_data.clear()
    try:
        at = AppTest.from_file(str(ROOT / "pages/greedy.py"), default_timeout=TIMEOUT)
        at.run()
        _compare_all(at)
        errors = [str(e.value) for e in at.error]
        assert any("torch failed to run these inputs: out of device memory" in e for e in errors), errors
        assert not any("disagrees" in e for e in errors), errors
    finally:
        bounded_cache.clear_all()
        st.cache_data.clear()
