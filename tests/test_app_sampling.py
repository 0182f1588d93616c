"""AppTest (streamlit.testing.v1) for the sampling pages: chain rejection sampling, target-only tree
sampling and the DSpark chain.

Hand-derived expectations (SEMANTICS.md §0.4-§0.6):
- p/q example: the Draft proposed A with q(A) = .6, p(A) = .3. u[0] = .4: .4 × .6 = .24 < .3 ->
  accepted; full acceptance, so the bonus is drawn from p' = (.2 .5 .3) with u_final = .25: the
  running sum passes .25 at B -> output "A B". u[0] = .7: .42 >= .3 -> rejected; the residual
  (0 .1 .2) normalised (0 1/3 2/3) with u_final = .25 -> threshold .075 -> B -> output "B".
- target-only running tree: u[0] = .4 < .5 accepts A, u[1] = .55 < .6 accepts C, bonus X ->
  "A C X". u[0] = .6: A's bucket is [0, .5), B's [.5, .8) -> B accepted, B has no child,
  terminal from B's plain row with u_final = .5 -> X -> "B X".
- DSpark: drafts A B C against target A B X Y -> correct_len 2. Making the target after row 2
  equal C extends the run to 3 (bonus Y). Making the target after row 1 X instead breaks the run
  at 1, and a later match (row 2 made to match) is ignored.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from specviz.render.svg import have_dot  # noqa: E402

NO_DOT = "the step player draws with Graphviz's dot, which is not installed here (apt-get install graphviz); pages fall back to the browser's graphviz chart"


from tests.figures import graphs
from tests.svg_read import grid_rows, texts
from tests.player_read import players

ROOT = Path(__file__).resolve().parents[1]
CHAIN = str(ROOT / "pages" / "chain_sampling.py")
TARGET_ONLY = str(ROOT / "pages" / "target_only.py")
DSPARK = str(ROOT / "pages" / "dspark.py")
TIMEOUT = 60


def _run(path: str, lang: str = "en") -> AppTest:
    at = AppTest.from_file(path, default_timeout=TIMEOUT)
    at.session_state["sv_lang"] = lang
    at.run()
    _clean(at)
    return at


def _clean(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]


def _open_text_box(at: AppTest) -> AppTest:
    """Open "Edit p and q as text" as a user's click does (closed, its boxes and button are not drawn)."""
    at.session_state["w_chain_text_open"] = True
    at.run()
    _clean(at)
    return at


def _output(at: AppTest) -> str:
    msgs = [s.value for s in at.success if s.value.startswith(("Output this round", "本轮输出"))]
    assert msgs, [s.value for s in at.success]
    return msgs[0]


def _player(at: AppTest) -> dict:
    """The step player's data (every frame of the walk), as the page's rerun sent it."""
    found = players(at)
    assert found, "no step player on the page"
    return found[0]


def _cells(frame: dict) -> list[list[str]]:
    return [[c[0] for c in row] for row in (frame.get("table") or [])]


def _chips(frame: dict, label: str) -> list[str]:
    row = next(r for r in frame["rows"] if r["label"].startswith(label))
    return [c if isinstance(c, str) else c[0] for c in row["chips"]]


def _metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


@pytest.mark.parametrize("path", [CHAIN, TARGET_ONLY, DSPARK], ids=["chain", "target_only", "dspark"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_page_runs(path, lang):
    at = AppTest.from_file(path, default_timeout=TIMEOUT)
    at.session_state["sv_lang"] = lang
    at.session_state["w_chain_mc_open"] = at.session_state["w_to_mc_open"] = True  # every chart, the Monte Carlo's too
    at.run()
    _clean(at)
    assert not at.error, [e.value for e in at.error]
    assert len(graphs(at)) + len(at.get("plotly_chart")) >= 2, "the page draws its charts"
    if path == DSPARK:  # the match grid, out tokens and KV columns: SVG drawn on the server, no plotly script
        assert not at.get("plotly_chart")
        figs = graphs(at)
        assert any("commit_lens = 3" in f for f in figs) and any("KV" in f and "c=3" in f for f in figs)


@pytest.mark.parametrize("path, key", [(CHAIN, "w_chain_sem"), (TARGET_ONLY, "w_to_sem")], ids=["chain", "target_only"])
def test_the_semantics_choice_reads_in_the_chosen_language(path, key):
    at = _run(path, "zh")
    radio = at.radio(key=key)
    assert radio.options == ["0.5.23", "更早版本"], radio.options  # the labels; the values stay "0.5.23" / "earlier"
    assert radio.value == "0.5.23"


# ---------------------------------------------------------------------------------------------
# Chain rejection sampling
# ---------------------------------------------------------------------------------------------

def test_chain_coin_across_p_over_q_flips_the_verdict():
    at = _run(CHAIN)
    assert "**B**" in _output(at)  # preset u[0] = .7: rejected, correction B
    at.slider(key="w_chain_coin0").set_value(0.4).run()
    _clean(at)
    assert "**A B**" in _output(at)  # .24 < .3: accepted, bonus B from p'
    at.slider(key="w_chain_coin0").set_value(0.5).run()  # .5 × .6 = .3 is not < .3: the test is strict
    _clean(at)
    assert "**B**" in _output(at)
    coins = json.loads(at.session_state["sv_scn::chain"])["requests"][0]["coins"]
    assert coins == [0.5]


def test_a_chain_structural_edit_is_one_run_of_the_page(monkeypatch):
    """Issue 31: "+ slot", "- slot" and a slot's token were read after their widget and followed by a
    rerun, so each click ran the page's scenario view twice. As callbacks, each click is one run that draws
    the edited scenario."""
    from specviz.app.ui import sampling_page

    runs = []
    real = sampling_page.require_algorithm
    monkeypatch.setattr(sampling_page, "require_algorithm", lambda *a, **k: runs.append(1) or real(*a, **k))
    at = _run(CHAIN)
    for act, want in ((lambda: at.button(key="w_chain_add").click(), ["R", "A", "A"]),
                      (lambda: at.selectbox(key="w_chain_tok2").set_value("C"), ["R", "A", "C"]),
                      (lambda: at.button(key="w_chain_del").click(), ["R", "A"])):
        runs.clear()
        act().run()
        _clean(at)
        chain = json.loads(at.session_state["sv_scn::chain"])["requests"][0]["chain"]
        assert chain == want
        assert len(runs) == 1, f"{len(runs)} runs of the scenario view for one click"
    assert [s.value for s in at.selectbox if s.key and s.key.startswith("w_chain_tok")] == ["A"]


def test_chain_quick_buttons_and_randomise_update_the_coins():
    at = _run(CHAIN)
    at.button(key="w_chain_q1").click().run()
    _clean(at)
    assert "**A B**" in _output(at)
    assert at.slider(key="w_chain_coin0").value == pytest.approx(0.4)
    at.number_input(key="w_chain_seed").set_value(7).run()
    at.button(key="w_chain_rand").click().run()
    _clean(at)
    req = json.loads(at.session_state["sv_scn::chain"])["requests"][0]
    assert at.slider(key="w_chain_coin0").value == pytest.approx(req["coins"][0])
    assert at.slider(key="w_chain_coin_final").value == pytest.approx(req["coin_final"])


def test_chain_bad_p_row_names_the_field_and_keeps_other_edits():
    at = _run(CHAIN)
    at.slider(key="w_chain_coin0").set_value(0.4).run()
    before = at.session_state["sv_scn::chain"]
    _open_text_box(at)
    ver = at.session_state["sv_cv::chain_pq"][1]  # the p/q boxes' key suffix (moves on when p or q change)
    at.text_area(key=f"w_chain_ptext::{ver}").set_value("0.3 0.4 0.3 0\n0.2 0.5 0.5 0")
    at.button(key="w_chain_apply").click().run()
    _clean(at)
    errors = [e.value for e in at.error]
    assert any("requests[0].target_probs[1]" in e and "sums to 1.2" in e for e in errors), errors
    assert at.session_state["sv_scn::chain"] == before  # the scenario (and the coin edit) is kept
    assert at.slider(key="w_chain_coin0").value == pytest.approx(0.4)
    at.text_area(key=f"w_chain_ptext::{ver}").set_value("0.3 0.4 0.3 0\n0.2 zero 0.3 0")
    at.button(key="w_chain_apply").click().run()
    assert any("requests[0].target_probs[1]" in e.value for e in at.error)


def test_chain_player_walks_the_trace():
    """Every step is in the player (stepping needs no rerun); new inputs start it at the outcome."""
    at = _run(CHAIN)
    data = _player(at)
    frames = data["frames"]
    assert data["start"] == len(frames) - 1  # new inputs: the outcome first
    assert frames[0]["caption"].startswith("Start")
    assert "Test u·q < p" in frames[3]["caption"]
    # u[0] = .7: the test of slot 1 shows its numbers and verdict from step 3 on, not before.
    assert _cells(frames[2])[1][-1] == "…"
    assert _cells(frames[3])[1][5:] == ["0.42", "0.42 ≥ 0.3", "rejected"]
    assert _chips(frames[-1], "predicts") == ["B", "·"]  # the residual draw wrote B at row 0
    assert _chips(frames[-1], "u_final") == ["0.250", "→ B"]
    assert not any("u_final" in r["label"] for r in frames[4]["rows"])  # the terminal draw appears at its step


def _open_monte_carlo(path: str, pre: str, backend: str | None = None) -> AppTest:
    """The page with its Monte Carlo box open (the student's one click; closed, nothing is computed)."""
    at = AppTest.from_file(path, default_timeout=TIMEOUT)
    at.session_state["sv_lang"] = "en"
    at.session_state[f"w_{pre}_mc_open"] = True
    if backend:
        at.session_state["sv_backend"] = backend
    at.run()
    _clean(at)
    return at


@pytest.mark.parametrize("path,pre", [(CHAIN, "chain"), (TARGET_ONLY, "to")], ids=["chain", "target_only"])
def test_the_monte_carlo_is_not_computed_until_its_box_is_opened(path, pre, monkeypatch):
    """Issue 31: the Monte Carlo was a third of every chain edit's server CPU. Closed (the default), the page
    runs no trial, shows no figure (nothing stale) and says it is not computed; open, it runs and shows it."""
    from specviz.algorithms import distributions as dist

    calls = []
    for name in ("chain_monte_carlo", "target_only_monte_carlo"):
        real = getattr(dist, name)
        monkeypatch.setattr(dist, name, lambda *a, _real=real, **k: calls.append(1) or _real(*a, **k))
    at = _run(path)
    at.slider(key=f"w_{pre}_coin0").set_value(0.6).run()  # an edit, box still closed
    _clean(at)
    assert not calls
    assert not any(m.label == "TV distance to p" for m in at.metric)
    assert any(c.value.startswith("Not computed yet") for c in at.caption), [c.value for c in at.caption]
    opened = _open_monte_carlo(path, pre)
    assert float(_metric(opened, "TV distance to p")) >= 0.0
    assert not any(c.value.startswith("Not computed yet") for c in opened.caption)


def test_chain_monte_carlo_matches_p():
    at = _open_monte_carlo(CHAIN, "chain")
    tv = float(_metric(at, "TV distance to p"))
    assert tv < 0.05  # 4000 trials, draft token drawn from q: the output is p


# ---------------------------------------------------------------------------------------------
# Target-only tree sampling
# ---------------------------------------------------------------------------------------------

def test_target_only_coin_moves_the_accept_to_the_sibling():
    at = _run(TARGET_ONLY)
    assert "**A C X**" in _output(at)
    at.slider(key="w_to_coin0").set_value(0.6).run()
    _clean(at)
    out = _output(at)
    assert "**B X**" in out and "[0, 2, -1]" in out


def test_target_only_thresholds_bias_the_monte_carlo():
    at = _open_monte_carlo(TARGET_ONLY, "to")
    assert float(_metric(at, "exact TV (closed form)")) == pytest.approx(0.0, abs=1e-6)
    at.slider(key="w_to_tacc").set_value(0.5).run()
    _clean(at)
    assert float(_metric(at, "exact TV (closed form)")) == pytest.approx(0.5, abs=1e-6)  # A always wins at t_acc = .5
    assert float(_metric(at, "TV distance to p")) > 0.4
    assert any("biased" in w.value for w in at.warning)


def test_target_only_steps_fill_the_buffer():
    at = _run(TARGET_ONLY)
    at.slider(key="w_to_coin0").set_value(0.9).run()  # A and B both rejected: buffer (.5 .3), terminal X
    _clean(at)
    assert "**X**" in _output(at)
    frames = _player(at)["frames"]
    texts = [f["caption"] for f in frames[:7]]
    assert any("work buffer draft_probs[row 0][A]" in t for t in texts), texts
    k = next(i for i, t in enumerate(texts) if "work buffer draft_probs[row 0][A]" in t)
    assert _chips(frames[k - 1], "work buffer")[0] == "A 0"  # the buffer fills at that step
    assert _chips(frames[k], "work buffer")[0] == "A 0.5"
    # the level scan: A's bucket [0, .5) and B's [.5, .8) against u[0] = .9: both rejected
    scans = [[[r[3], r[-1]] for r in _cells(f)[1:]] for f in frames]  # (bucket, verdict); the rule in between
    assert [["[0, 0.5)", "rejected"], ["[0.5, 0.8)", "rejected"]] in scans, scans
    assert [["[0, 0.5)", "…"], ["[0.5, 0.8)", "…"]] == scans[0]  # nothing decided at step 0


# ---------------------------------------------------------------------------------------------
# DSpark
# ---------------------------------------------------------------------------------------------

def test_dspark_target_prediction_changes_correct_len():
    at = _run(DSPARK)
    assert _metric(at, "correct_len") == "2" and _metric(at, "bonus") == "X"
    at.selectbox(key="w_ds_tp2").set_value("C").run()
    _clean(at)
    assert _metric(at, "correct_len") == "3" and _metric(at, "bonus") == "Y"
    assert _metric(at, "commit_lens") == "4" and _metric(at, "new_seq_lens") == "14"
    match, out, kv = _ds_grids(at)
    assert "commit_lens = 4" in texts(match)
    rows = grid_rows(match)
    assert [c["text"] for c in rows[1]] == ["A", "B", "C", "Y"] and rows[1][3]["fill"] == "#E69F00"  # the bonus
    assert [c["text"] for c in rows[3]] == ["✔", "✔", "✔"]
    assert [(c["text"], c["fill"]) for c in grid_rows(out)[1]] == [("A", "#009E73"), ("B", "#009E73"), ("C", "#009E73"), ("Y", "#E69F00")]
    assert [c["text"] for c in grid_rows(kv)[1]] == ["10", "11", "12", "13"]


def _ds_grids(at: AppTest) -> tuple[str | None, str, str]:
    """The DSpark page's three grids (match, out tokens, KV columns), told apart by their row names."""
    figs = graphs(at)
    match = next((f for f in figs if "next draft" in f or "下一个 Draft" in f), None)  # greedy only
    out = next(f for f in figs if "after the bonus scatter" in f or "scatter bonus 之后" in f)
    kv = next(f for f in figs if "KV location" in f or "KV 位置" in f)
    return match, out, kv


def test_dspark_later_match_is_ignored():
    at = _run(DSPARK)
    at.selectbox(key="w_ds_tp1").set_value("X").run()
    at.selectbox(key="w_ds_tp2").set_value("C").run()
    _clean(at)
    assert _metric(at, "correct_len") == "1" and _metric(at, "bonus") == "X"
    assert any("ignored" in c.value for c in at.caption)
    match, out, kv = _ds_grids(at)
    marks = grid_rows(match)[3]
    assert [(c["text"], c["fill"]) for c in marks] == [("✔", "#009E73"), ("✘", "#D55E00"), ("(✔)", "#E8E8E8")]
    assert marks[2]["hover"].endswith("ignored: after a mismatch") and "commit_lens = 2" in texts(match)
    assert [c["fill"] for c in grid_rows(kv)[1]] == ["#009E73", "#009E73", "#E8E8E8", "#E8E8E8"]


def test_dspark_verify_window_cap():
    at = _run(DSPARK)
    at.slider(key="w_ds_vlen").set_value(2).run()
    _clean(at)
    assert _metric(at, "correct_len") == "1" and _metric(at, "cap_trim_lens") == "1" and _metric(at, "bonus") == "B"
    match = _ds_grids(at)[0]
    assert "commit_lens = 2, verify_len = 2" in texts(match)  # both boundaries on one line: one label
    assert [c["fill"] for c in grid_rows(match)[1]][2:] == ["#E8E8E8", "#E8E8E8"]  # rows beyond the window greyed


def test_dspark_grids_in_chinese():
    match, out, kv = _ds_grids(_run(DSPARK, "zh"))
    assert {"Verify 输入行", "Target 在其后的预测", "下一个 Draft", "匹配？"} <= set(texts(match))
    assert "Draft，末位 0" in texts(out) and "Verify 行" in texts(kv)


def test_dspark_sampling_mode():
    at = _run(DSPARK)
    at.radio(key="w_ds_mode").set_value("sampling").run()
    _clean(at)
    assert _metric(at, "correct_len") == "1" and _metric(at, "bonus") == "B"  # u[0] = .4 accepts A; u_final = .5 -> B
    assert not at.get("plotly_chart")
    match, out, kv = _ds_grids(at)
    assert match is None  # the match grid is the greedy rule's picture
    assert [(c["text"], c["fill"]) for c in grid_rows(out)[1]][:2] == [("A", "#009E73"), ("B", "#E69F00")]


# ---------------------------------------------------------------------------------------------
# Monte Carlo on the other backends
# ---------------------------------------------------------------------------------------------

def _backend_or_skip(name: str) -> None:
    from specviz.algorithms.backends import available_backends

    why = available_backends().get(name)
    if why is not None:
        pytest.skip(f"{name} backend unavailable: {why}")


def test_chain_monte_carlo_runs_on_the_torch_backend():
    _backend_or_skip("torch")
    at = _open_monte_carlo(CHAIN, "chain", backend="torch")
    assert float(_metric(at, "TV distance to p")) < 0.05
    assert any("on torch" in c.value for c in at.caption)


@pytest.mark.parametrize("path,pre", [(CHAIN, "chain"), (TARGET_ONLY, "to")], ids=["chain", "target_only"])
def test_triton_interpreter_monte_carlo_waits_for_the_button(path, pre):
    """Under the CPU interpreter a trial costs ~30 ms: the page offers small N and runs only on request."""
    _backend_or_skip("triton")
    from specviz.algorithms.backends import backend_label

    if "interpreter" not in backend_label("triton"):
        pytest.skip("triton runs on a GPU here: the Monte Carlo runs at once")
    at = _open_monte_carlo(path, pre, backend="triton")
    assert not any(m.label == "TV distance to p" for m in at.metric)
    assert at.button(key=f"w_{pre}_mc_go").label == "Run 100 trials"


@pytest.mark.filterwarnings("ignore::specviz.base.errors.SpecvizWarning")  # the badge's backend comparison warns too
def test_chain_semantics_switch_on_a_zero_q_proposal():
    """q(A) = 0 although the Draft proposed A (impossible for a real draft): 0.5.23 rejects (0 < q fails),
    earlier releases accept (u·0 < p = .3). A warning explains the degenerate input."""
    at = _run(CHAIN)
    _open_text_box(at)
    ver = at.session_state["sv_cv::chain_pq"][1]  # the p/q boxes' key suffix (moves on when p or q change)
    at.text_area(key=f"w_chain_qtext::{ver}").set_value("0 0.5 0.5 0")
    at.button(key="w_chain_apply").click().run()
    _clean(at)
    assert any("q = 0" in w.value for w in at.warning)
    assert "accept_lens = 1" in _output(at)  # rejected; the residual (.3 0 0) can only give A as the correction
    at.radio(key="w_chain_sem").set_value("earlier").run()
    _clean(at)
    assert "accept_lens = 2" in _output(at)  # accepted: A, then the bonus from the next row


def test_dspark_sampling_adds_and_removes_a_draft():
    at = _run(DSPARK)
    at.radio(key="w_ds_mode").set_value("sampling").run()
    at.button(key="w_ds_add").click().run()
    _clean(at)
    req = json.loads(at.session_state["sv_scn::dspark"])["requests"][0]
    assert len(req["chain"]) == 3 and len(req["target_probs"]) == 3 and len(req["draft_probs"]) == 2 and len(req["coins"]) == 2
    at.button(key="w_ds_del").click().run()
    _clean(at)
    assert _metric(at, "correct_len") == "1" and _metric(at, "bonus") == "B"  # back to the preset's window


def test_target_only_takes_the_tree_builder_tree():
    """The Tree builder's tree (slot "tree": R; A, B; C, D under A; plus a third child E of B here) replaces the
    page's tree; nodes that existed keep their p rows and coins, a new node gets a uniform row."""
    from specviz.inputs.scenario import load_scenario

    run = load_scenario(ROOT / "scenarios" / "running_example.json")
    data = json.loads(run.to_json())
    data["vocab"] = ["A", "B", "C", "D", "X", "R"]
    data["requests"][0]["tree"] = {"parents": [-1, 0, 0, 1, 1, 2], "tokens": ["R", "A", "B", "C", "D", "X"]}
    data["requests"][0]["target_predict"] = ["A", "C", "X", "X", "X", "X"]
    at = AppTest.from_file(TARGET_ONLY, default_timeout=TIMEOUT)
    at.session_state["sv_scn::tree"] = json.dumps(data)
    at.run()
    at.button(key="w_to_usetree").click().run()
    _clean(at)
    req = json.loads(at.session_state["sv_scn::target_only"])["requests"][0]
    assert req["tree"]["parents"] == [-1, 0, 0, 1, 1, 2]
    assert req["target_probs"][0] == [0.5, 0.3, 0, 0, 0.2, 0] and req["target_probs"][5] == pytest.approx([1 / 6] * 6)
    assert "**A C X**" in _output(at)  # same coins on the shared nodes: the walk is unchanged


@pytest.mark.parametrize("path,slider", [(CHAIN, "w_chain_coin0"), (TARGET_ONLY, "w_to_coin0"), (DSPARK, "w_ds_vlen")],
                         ids=["chain", "target_only", "dspark"])
def test_presentation_mode_folds_the_inputs_under_the_player(path, slider):
    """Presentation mode: the player draws large (``present``), the inputs fold into a closed expander,
    and the panels under the player say they show the end state."""
    at = AppTest.from_file(path, default_timeout=TIMEOUT)
    at.session_state["sv_present"] = True
    at.run()
    _clean(at)
    assert _player(at)["present"] is True
    folded = [e for e in at.expander if e.label.startswith("1. Inputs")]
    assert folded and folded[0].slider(key=slider) is not None
    assert any("the end state" in c.value for c in at.caption)


def test_dspark_grid_hovers_in_chinese():
    match, out, kv = _ds_grids(_run(DSPARK, "zh"))
    assert grid_rows(match)[0][1]["hover"] == "行 1 (Draft 1): A" and grid_rows(match)[2][0]["hover"] == "Draft 位于行 1: A"
    assert grid_rows(out)[1][3]["hover"] == "out[3] = 0: 旧值 (列 >= commit_lens = 3)"
    assert grid_rows(kv)[1][3]["hover"] == "列 3: 位置 -1：不提交" and grid_rows(kv)[1][0]["hover"] == "列 0: 保留在位置 10"
