"""Model-based edit tests (issue 9): random sequences of real user actions, checked after each one.

Two state machines (hypothesis ``RuleBasedStateMachine``):

- ``TreeEdits`` drives the library's tree edits (``specviz.inputs.edits`` on ``DrawnTree``) exactly as
  the tree builder's buttons call them, with a model of the tree kept as token paths. After every
  action: the scenario's tree is the model's tree, the width equals deepest path + 1, and greedy
  accept along any branch accepts the whole branch (the width never cuts a walk).
- ``LivePages`` drives the app through AppTest (app.py with its router): tree builder edits,
  greedy targets (the step player's frames are checked, not clicked: stepping is client-side), chain coins (u[0], u_final) and typed p rows (valid, and broken ones that must be refused
  naming the field), the language radio and page switches. After every action,
  what the page shows (live accept_index at the last step, the shift caption's tokens, Overview's
  outputs, the retrieve table, the chosen language) equals what the engine computes from the
  scenario held in session state.

Counts: ``TreeEdits`` 200 sequences x up to 30 actions (library calls);
``LivePages`` 5 sequences x up to 20 actions (each action is 1-3 AppTest reruns).
The action counters are printed with ``-s``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from tests.player_read import players

pytest.importorskip("hypothesis")
pytest.importorskip("streamlit")
from hypothesis import HealthCheck, settings, strategies as st  # noqa: E402
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from specviz.app.ui.state import widget_key
from specviz.inputs import edits
from specviz.replay import engine  # noqa: E402
from specviz.inputs.scenario import load_scenario, scenario_from_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LABELS = ["A", "B", "C", "D", "X"]
COUNTS = {"library": 0, "pages": 0}


# -- the library: tree edits ---------------------------------------------------------------------------

class TreeEdits(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.s = load_scenario(ROOT / "scenarios/running_example.json")

    def _tree(self):
        return self.s.tree(0)

    @rule(k=st.integers(0, 40), tok=st.sampled_from(LABELS))
    def add_child(self, k, tok):
        t = self._tree()
        if t.n >= 12:
            return
        self.s = edits.replace_tree(self.s, t.add_child(k % t.n, self.s.token_id(tok)))
        COUNTS["library"] += 1

    @rule(k=st.integers(1, 40), tok=st.sampled_from(LABELS))
    def add_sibling(self, k, tok):
        t = self._tree()
        if t.n < 2 or t.n >= 12:
            return
        self.s = edits.replace_tree(self.s, t.add_sibling(1 + k % (t.n - 1), self.s.token_id(tok)))
        COUNTS["library"] += 1

    @rule(k=st.integers(1, 40))
    def delete(self, k):
        t = self._tree()
        if t.n < 2:
            return
        self.s = edits.replace_tree(self.s, t.delete_subtree(1 + k % (t.n - 1)))
        COUNTS["library"] += 1

    @rule(k=st.integers(0, 40), tok=st.sampled_from(LABELS))
    def relabel(self, k, tok):
        t = self._tree()
        self.s = edits.replace_tree(self.s, t.relabel(k % t.n, self.s.token_id(tok)))
        COUNTS["library"] += 1

    @rule(k=st.integers(1, 40), step=st.sampled_from([-1, 1]))
    def reorder(self, k, step):
        t = self._tree()
        if t.n < 2:
            return
        self.s = edits.replace_tree(self.s, t.move_sibling(1 + k % (t.n - 1), step))
        COUNTS["library"] += 1

    @rule(pick=st.sampled_from(["first", "last"]))
    def set_targets(self, pick):
        self.s = edits.set_target_predict(self.s, edits.agree_along(self.s, pick))
        COUNTS["library"] += 1

    @invariant()
    def width_is_derived_and_never_cuts_a_branch(self):
        t = self._tree()
        assert self.s.width == t.max_depth + 1
        for pick in ("first", "last"):
            s = edits.set_target_predict(self.s, edits.agree_along(self.s, pick))
            c = engine.run_scenario(s, with_trace=False).commit
            assert c.accept_nodes == edits.branch(t, pick), (pick, t, c.accept_nodes)


TestTreeEdits = TreeEdits.TestCase
TestTreeEdits.settings = settings(max_examples=60, stateful_step_count=30, deadline=None,
                                  suppress_health_check=list(HealthCheck))


# -- the live pages ---------------------------------------------------------------------------------------

def _texts(at) -> str:
    """Markdown and captions as the reader sees them (HTML entities of escaped chips decoded, markdown
    backslash escapes removed)."""
    import html

    raw = "\n".join(str(m.value) for m in at.markdown) + "\n" + "\n".join(str(c.value) for c in at.caption)
    return re.sub(r"\\(.)", r"\1", html.unescape(raw))


class LivePages(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        self.at.run()
        self.page = "overview"
        self._go("tree_builder")

    # helpers
    def _run(self, el):
        el.run()
        assert not self.at.exception, self.at.exception
        COUNTS["pages"] += 1

    def _go(self, page):
        self.at.switch_page(f"pages/{page}.py")
        self._run(self.at)
        self.page = page

    def _scenario(self):
        return scenario_from_json(self.at.session_state["sv_scn::tree"])

    def _lang(self):
        return self.at.session_state["sv_lang"] if "sv_lang" in self.at.session_state else "en"

    # actions: the tree builder
    @precondition(lambda self: self.page == "tree_builder")
    @rule(k=st.integers(0, 40), tok=st.sampled_from(LABELS),
          action=st.sampled_from(["w_add_child", "w_add_sibling", "w_delete", "w_relabel", "w_up", "w_down"]))
    def tree_edit(self, k, tok, action):
        n = self._scenario().n
        if action == "w_add_child" or action == "w_add_sibling":
            if n >= 10:
                return
        node = k % n
        if node == 0 and action not in ("w_add_child", "w_relabel"):
            node = 1 if n > 1 else 0
        if node == 0 and action not in ("w_add_child", "w_relabel"):
            return
        self._run(self.at.selectbox(key=widget_key("sv_sel::tree", self.at.session_state)).set_value(node))
        self._run(self.at.selectbox(key=widget_key("sv_tok::tree", self.at.session_state)).set_value(tok))
        self._run(self.at.button(key=action).click())

    # actions: greedy
    @precondition(lambda self: self.page == "greedy")
    @rule(which=st.sampled_from(["w_q_first", "w_q_last", "w_q_root"]))
    def quick_targets(self, which):
        btn = [b for b in self.at.button if b.key == which]
        if btn:
            self._run(btn[0].click())
    
    @precondition(lambda self: self.page == "greedy")
    @rule(k=st.integers(0, 40), tok=st.sampled_from(LABELS))
    def set_target(self, k, tok):
        boxes = [sb for sb in self.at.selectbox if str(sb.key).startswith("w_tp::")]
        if boxes:
            self._run(boxes[k % len(boxes)].set_value(tok))
    
    # actions: chain rejection sampling (coins and p rows)
    @precondition(lambda self: self.page == "chain_sampling")
    @rule(which=st.integers(-1, 0), value=st.integers(0, 999))
    def set_coin(self, which, value):
        key = "w_chain_coin_final" if which < 0 else "w_chain_coin0"
        self._run(self.at.slider(key=key).set_value(value / 1000))

    @precondition(lambda self: self.page == "chain_sampling")
    @rule(weights=st.lists(st.lists(st.integers(0, 9), min_size=3, max_size=3), min_size=2, max_size=2),
          broken=st.booleans())
    def set_p_rows(self, weights, broken):
        """Type p rows into the text box and apply; a broken row (sum 1.25) is refused, naming the field."""
        rows = []
        for w in weights:
            w = [x + 1 for x in w]  # no all-zero row
            rows.append([x / sum(w) for x in w] + [0.0])
        if broken:
            rows[1][0] += 0.25
        before = self.at.session_state["sv_scn::chain"]
        self.at.session_state["w_chain_text_open"] = True  # the text boxes are drawn only while their box is open
        self._run(self.at)
        ver = self.at.session_state["sv_cv::chain_pq"][1]  # the p/q boxes' key suffix (moves on when p or q change)
        self.at.text_area(key=f"w_chain_ptext::{ver}").set_value("\n".join(" ".join(f"{x:.6f}" for x in r) for r in rows))
        self._run(self.at.button(key="w_chain_apply").click())
        if broken:
            assert self.at.session_state["sv_scn::chain"] == before
            assert any("target_probs[1]" in str(e.value) for e in self.at.error), [e.value for e in self.at.error]
        else:
            got = scenario_from_json(self.at.session_state["sv_scn::chain"]).requests[0].target_probs
            assert np.allclose(np.asarray(got), [[float(f"{x:.6f}") for x in r] for r in rows], atol=1e-6)

    # actions: anywhere
    @rule(lang=st.sampled_from(["en", "zh"]))
    def switch_language(self, lang):
        self._run(self.at.radio(key=widget_key("sv_lang", self.at.session_state)).set_value(lang))

    @rule(page=st.sampled_from(["tree_builder", "greedy", "overview", "chain_sampling"]))
    def switch_page(self, page):
        self._go(page)

    # what the page shows == what the engine computes
    @invariant()
    def language_in_step(self):
        assert self.at.radio(key=widget_key("sv_lang", self.at.session_state)).value == self._lang()

    @invariant()
    def page_matches_engine(self):
        s = self._scenario()
        run = engine.run_scenario(s, with_trace=False)
        c = run.commit
        text = _texts(self.at)
        zh = self._lang() == "zh"
        if self.page == "tree_builder":
            table = next(d.value for d in self.at.dataframe if "retrieve_next_token" in d.value.columns)
            ri, nt, ns = s.tree(0).retrieve_arrays(0)
            assert list(table["retrieve_next_token"]) == list(nt)
            assert list(table["retrieve_next_sibling"]) == list(ns)
            assert self.at.title[0].value == ("构建验证树" if zh else "Tree builder")
        elif self.page == "greedy":
            assert f"W = {s.width}" in text  # the width is shown
            # the step player holds every frame (stepping happens in the browser): its last frame is the result
            found = players(self.at)
            assert found, "no step player on the greedy page"
            last = found[0]["frames"][-1]
            code = next(r["code"] for r in last["rows"] if r.get("code", "").startswith("accept_index[0]"))
            assert json.loads(code.split("=", 1)[1]) == [int(x) for x in run.result["accept_index"][0]]
            # the end-state panel under the player: the shift sentence of the live walk
            outs = [s.label(t) for t in c.output_tokens]
            word = "产生" if zh else "emits"
            for i, o in zip([s.label(t) for t in c.committed_tokens], outs):
                assert f"{i} {word} {o}" in text or f"{i} 行{word} {o}" in text, (i, o, text[-600:])
            assert self.at.title[0].value == ("贪心接受" if zh else "Greedy accept")
        elif self.page == "chain_sampling":
            cs = scenario_from_json(self.at.session_state["sv_scn::chain"])
            want = [int(x) for x in engine.run_scenario(cs, with_trace=False).result["accept_index"][0]]
            # the step player's last frame (the outcome; stepping is client-side): its accept_index chips
            found = players(self.at)
            assert found, "no step player on the chain page"
            last = found[0]["frames"][-1]
            shown = [int(c[0]) for c in next(r for r in last["rows"] if r["label"] == "accept_index")["chips"]]
            assert shown == want, (shown, want)
            assert self.at.slider(key="w_chain_coin0").value == pytest.approx(cs.requests[0].coins[0])
        elif self.page == "overview":
            rows = "[" + ", ".join(str(r) for r in c.accept_rows) + "]"
            assert f"accept_index = {rows}" in text
            outs = " ".join(s.label(t) for t in c.output_tokens)
            assert (f"输出 {outs}" if zh else f"outputs {outs}") in text
            preset = load_scenario(ROOT / "scenarios/running_example.json")
            assert any(b.key == "w_reset_running" for b in self.at.button) == (not edits.same_inputs(s, preset))


TestLivePages = LivePages.TestCase
TestLivePages = pytest.mark.skipif(not __import__("specviz.render.svg", fromlist=["have_dot"]).have_dot(),
                                   reason="the step player draws with Graphviz's dot, which is not installed here "
                                          "(apt-get install graphviz)")(TestLivePages)
TestLivePages.settings = settings(max_examples=1, stateful_step_count=20, deadline=None,
                                  suppress_health_check=list(HealthCheck))


def test_zz_report_action_counts():
    """Runs last in this file: prints how many actions the two machines performed (-s to see)."""
    print(f"\nmodel-based actions: library {COUNTS['library']}, live pages {COUNTS['pages']} AppTest runs")
