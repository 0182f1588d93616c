"""AppTest: the Decoding loop page runs in both languages and shows the library's numbers."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from specviz.rooms.loop import metrics as M  # noqa: E402
from specviz.rooms.loop.decode import LoopSettings, run_loop  # noqa: E402
from tests.figures import graphs  # noqa: E402
from tests.svg_read import elements, texts  # noqa: E402
from tests.player_read import players

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages/decoding_loop.py")
DEFAULT = dict(prompt="The target model verifies the draft tree. ")


def _run(lang="en", **state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["sv_lang"] = lang
    at.session_state["sv_backend"] = "torch"
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def _player(at) -> dict:
    """The step player's data (one frame per round)."""
    (data,) = players(at)
    return data


def _proofs(at):
    return next(d.value for d in at.dataframe if d.value.columns[0] in ("proof", "证明"))


def _metric(at, starts: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(starts))


@pytest.mark.parametrize("lang,title,tau_label", [("en", "Decoding loop", "τ tokens"), ("zh", "解码循环", "τ 每次")])
def test_page_runs_in_both_languages_and_shows_the_librarys_tau(lang, title, tau_label):
    at = _run(lang, **{"sv_loop::rounds": 8})
    assert at.title[0].value == title
    run = run_loop(DEFAULT["prompt"], LoopSettings(rounds=8, backend="torch", temperature=0.8))
    m = M.run_metrics(run)
    assert _metric(at, tau_label) == f"{m.tau:.2f}"
    # The timeline: SVG drawn on the server (no plotly chart on the page), tau's line labelled with the library's value,
    # one accepted-drafts bar and one bonus bar per round; no round singled out (rounds step in the player).
    assert not at.get("plotly_chart")
    words = ("round", "accepted drafts", "bonus", "tokens per Target pass") if lang == "en" else ("轮", "被接受的草稿", "bonus（奖励 token）", "每次 Target 前向的 token 数")
    timeline = next(f for f in graphs(at) if f"τ = {m.tau:.2f}" in texts(f))
    hovers = [e["hover"] for e in elements(timeline) if e["tag"] == "rect"]
    for r in run.rounds:
        assert f"{words[0]} {r.index}: {r.accept_len - 1} {words[1]}" in hovers and f"{words[0]} {r.index}: 1 {words[2]}" in hovers
    assert f"{words[0]} 0" not in hovers and words[0] in texts(timeline) and words[3] in texts(timeline)
    assert any(f"{m.system_efficiency:.1%}" == x.value for x in at.metric)
    # Every round is a step of the player (stepped in the browser): its caption names the library's
    # accept length, its accept_index chips are the library's, and the KV table keeps exactly its rows.
    data = _player(at)
    assert len(data["frames"]) == len(run.rounds) == 8
    for r, f in zip(run.rounds, data["frames"]):
        assert f"k = {r.accept_len - 1}" in f["caption"] and str(r.index) in f["caption"]
        ai = next(row for row in f["rows"] if row["label"] == "accept_index")
        assert [int(c[0]) for c in ai["chips"]] == list(r.accept_index)
        kept = [cells for cells in f["table"][1:] if cells[3][1] == "accepted"]
        assert len(kept) == len(r.kv_kept)
        assert f["svg2"] is not None  # the round's tree mask beside the rows
    # Proofs hold on the default run.
    proofs = _proofs(at)
    assert all(v in ("holds", "成立") for v in proofs.iloc[:, 1])


def test_a_mistake_shows_a_failing_proof_and_where_the_text_diverges():
    at = _run("en", **{"sv_loop::rounds": 6, "sv_loop::m::kv_by_outputs": True})
    proofs = _proofs(at)
    assert any(v in ("FAILS", "不成立") for v in proofs.iloc[:, 1])
    assert any("diverges" in str(x.value) for x in at.markdown)
    assert at.code, "the two texts side by side"


def test_bad_prompt_is_an_error_naming_the_field():
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["sv_loop::prompt"] = "接受"
    at.run()
    assert not at.exception
    assert at.error and "prompt" in at.error[0].value


def test_shrinking_the_tree_keeps_num_draft_tokens_in_range():
    at = _run("en", **{"sv_loop::rounds": 2, "sv_loop::topk": 3, "sv_loop::depth": 5, "sv_loop::n": 30})
    at.session_state["sv_loop::topk"] = 2
    at.session_state["w_sv_loop::topk"] = 2
    at.run()
    assert not at.exception and not at.error
    assert at.session_state["sv_loop::n"] <= 2 + 4 * 4 + 1


def test_sampling_page_runs_the_monte_carlo():
    at = _run("en", **{"sv_loop::rounds": 2, "sv_loop::algorithm": "target_only", "sv_loop::run_mc": True,
                       "sv_loop::trials": 100, "sv_loop::prompt": "Each round the "})
    text = "\n".join(str(x.value) for x in at.markdown)
    assert "L1 =" in text and "bound" in text


# -- issue 32: the summary box and the power line say what the proofs below them say -------------------------

def test_summary_box_follows_every_proof_shown_q_as_buffer_fails_proof_3():
    """q_as_buffer on, the Monte Carlo run at the page's defaults: proof 3 FAILS below, so the box above must not
    say the proofs hold (it said "Both proofs hold on this prompt"); it names proof 3 as failing."""
    at = _run("en", **{"sv_loop::algorithm": "target_only", "sv_loop::m::q_as_buffer": True, "sv_loop::run_mc": True})
    text = "\n".join(str(x.value) for x in at.markdown)
    assert "**FAILS** (200 trials)" in text, text[-2000:]
    assert not at.success, [s.value for s in at.success]
    (box,) = [w.value for w in at.warning if "Fails with these settings" in w.value]
    assert "3. Sampling lossless" in box.split("Holds:")[0] and "1. Tree pass exact" in box.split("Holds:")[1], box


def test_summary_box_says_proof_3_has_not_run_and_power_names_the_mistake():
    """A correct target-only sampler, Monte Carlo not run: the box says which proofs hold and that proof 3 has not run
    (no "hold" claim for it), and the power line states the power against q_as_buffer instead of "≥ 0.0%"."""
    at = _run("en", **{"sv_loop::algorithm": "target_only"})
    assert not at.success
    (box,) = [i.value for i in at.info if "Not run yet" in i.value]
    assert "3. Sampling lossless" in box.split("Not run yet")[1], box
    text = "\n".join(str(x.value) for x in at.markdown)
    assert "0.0%" not in text
    power = next(t for t in text.split("\n") if t.startswith("**Detection power"))
    assert "this sampler is correct" in power and "q_as_buffer" in power and "**> 99.9%** or more" in power, power


def test_summary_box_all_hold_in_chinese_for_greedy():
    at = _run("zh", **{"sv_loop::rounds": 4})
    (box,) = [s.value for s in at.success]
    assert box.startswith("本页的每个证明在这个 prompt 上都成立") and "3." not in box, box
