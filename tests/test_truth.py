"""Regression tests for issue 18, items 1-3, 14, 15: what the screen says is what happened.

1. DSpark's player under a verify_len cap shows the capped correct_len, the re-read bonus and
   commit_lens at every step (the cap is a step of the one trace; frames read only the events).
2. The chain caption of a q = 0 draft (and other edges) says why it is accepted or rejected,
   with the reference's acceptance probability, in both languages and both semantics.
3. The decoding loop's "q as buffer" demo fails proof 3 at the page's defaults, with the power shown.
14. Under "q as buffer" the backend's sampler itself receives q (every backend).
15. run_loop(max_tokens=...) returns exactly max_tokens tokens; a forced n is stated.
"""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from tests.player_read import players
import torch

from specviz.replay import captions, engine, steps
from specviz.inputs import edits
from specviz.replay.frames import replay
from specviz.inputs.scenario import load_scenario
from specviz.replay import playframes

ROOT = Path(__file__).resolve().parents[1]


def _chips(frame, label):
    row = next(r for r in frame.rows if r.label == label)
    return [c if isinstance(c, str) else c[0] for c in row.chips]


# -- 1. DSpark under a verify_len cap ----------------------------------------------------------------

def _capped():
    return edits.set_fields(load_scenario(ROOT / "scenarios/dspark_chain.json"), 0, verify_len=2)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_dspark_player_under_a_verify_len_cap_states_the_capped_values(lang):
    """Preset dspark_chain (drafts A B C, target A B X Y), verify_len = 2: capped = min(2, 2 - 1) = 1,
    bonus = target_predict[1] = B, commit_lens = 2, output A B; only R and A keep KV (SEMANTICS §8)."""
    s = _capped()
    run = engine.run_scenario(s)
    assert int(run.result["correct_len"][0]) == 1 and int(run.result["bonus"][0]) == s.vocab.index("B")
    frames = playframes.dspark_frames(s, run, lang)
    last = frames[-1]
    assert _chips(last, "correct_len")[0] == 1
    assert _chips(last, "bonus") == ["B"]
    assert _chips(last, "commit_lens") == [2]
    assert _chips(last, "new_seq_lens") == [12]
    assert _chips(last, "输出" if lang == "zh" else "output") == ["A", "B"]
    text = "\n".join(f.caption for f in frames)
    assert "min(2, 2 − 1) = 1" in text and "target_predict[1] = B" in text
    assert "= 3" not in text.split("CapCorrectLen")[-1]  # nothing after the cap states commit_lens 3
    # No frame shows commit_lens 3 or an output of three tokens; once the bonus is final it is B.
    for f in frames:
        assert _chips(f, "commit_lens")[0] in ("—", 2)
    # The figure: B is not drawn as accepted at the end, the bonus hangs off A.
    walk = steps.walk_after(steps.typed_events(run.trace.events), len(run.trace.events), 4, 0, dspark=True)
    assert walk.states[1] == "accepted" and walk.states[2] != "accepted" and walk.bonus == (1, s.vocab.index("B"))
    last_arrays = replay(run.trace)[-1].arrays  # the trace's own arrays end equal to the result
    for k in ("correct_len", "bonus", "cap_trim_lens", "commit_lens", "new_seq_lens"):
        assert np.array_equal(last_arrays[k], run.result[k]), k


def test_dspark_page_player_frames_come_from_the_capped_trace():
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages/dspark.py"), default_timeout=120)
    at.session_state["sv_scn::dspark"] = _capped().to_json()
    at.run()
    assert not at.exception, at.exception
    data = players(at)[0]
    captions_ = [f["caption"] for f in data["frames"]]
    assert not any("target_predict[2] = X" in c and "uncapped" not in c for c in captions_), captions_
    assert not any("commit_lens = correct_len + 1 = 3" in c for c in captions_), captions_
    last = {r["label"]: [c if isinstance(c, str) else c[0] for c in r["chips"]] for r in data["frames"][-1]["rows"]}
    assert last["bonus"] == ["B"] and last["commit_lens"] == ["2"] and last["correct_len"][0] == "1"


def test_dspark_sampling_cap_uses_the_two_level_gather_at_the_capped_length():
    """Sampling under a cap: bonus = predicts[accept_index[capped]] = the next accepted draft (§8)."""
    s = load_scenario(ROOT / "scenarios/dspark_sampling.json")
    req = s.requests[0]
    # three drafts, every one accepted (p = q), then a cap at verify_len = 2
    V = len(s.vocab)
    row = [1.0 / V] * V
    s = edits.set_fields(s, 0, chain=[req.chain[0], s.vocab[0], s.vocab[1], s.vocab[2]], target_probs=[row] * 4,
                         draft_probs=[row] * 3, coins=[0.1, 0.1, 0.1], verify_len=2)
    run = engine.run_scenario(s)
    assert int(run.result["raw_correct_len"][0]) == 3 and int(run.result["correct_len"][0]) == 1
    assert int(run.result["bonus"][0]) == 1  # the token accepted at slot 2
    for lang in ("en", "zh"):
        last = playframes.dspark_frames(s, run, lang)[-1]
        assert _chips(last, "bonus") == [s.vocab[1]] and _chips(last, "commit_lens") == [2]
        assert "predicts[accept_index[1]]" in last.caption


# -- 2. chain captions at the edges ----------------------------------------------------------------------

def _chain(p0, q0, coin, semantics="0.5.23"):
    s = load_scenario(ROOT / "scenarios/pq_example.json")
    V = len(s.vocab)
    pad = lambda r: list(r) + [0.0] * (V - len(r))  # noqa: E731
    p = [pad(p0), pad([1.0])]
    s = edits.set_fields(s, 0, chain=[s.requests[0].chain[0], s.vocab[0]], target_probs=p, draft_probs=[pad(q0)], coins=[coin])
    return s.replace(semantics=semantics)


def _test_caption(s, lang):
    run = engine.run_scenario(s)
    ev = next(e for e in steps.typed_events(run.trace.events) if type(e).__name__ == "AcceptTest")
    return ev, captions.caption(ev, s, lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_chain_q_zero_is_rejected_by_the_q_rule_in_0523(lang):
    """p row (.2 .5 .3 0), q row (0 .5 .5 0), draft token 0: 0.5.23 needs 0 < q <= 1 -> rejected for every coin."""
    s = _chain([.2, .5, .3], [0, .5, .5], 0.5)
    if len(s.vocab) < 3:
        pytest.skip("needs three tokens")
    ev, text = _test_caption(s, lang)
    assert not ev.accepted and ev.accept_prob == 0.0 and ev.q_valid is False
    assert "1.000" not in text and "min(1, p/q)" not in text
    assert "0 < q ≤ 1" in text and "0.000" in text
    assert ("rejected" if lang == "en" else "已拒绝") in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_chain_q_zero_is_accepted_under_earlier_semantics_with_probability_1(lang):
    s = _chain([.2, .5, .3], [0, .5, .5], 0.5, semantics="earlier")
    ev, text = _test_caption(s, lang)
    assert ev.accepted and ev.accept_prob == 1.0
    assert "min(1, p/q)" not in text and "1.000" in text and "<" in text
    assert ("accepted" if lang == "en" else "已接受") in text


@pytest.mark.parametrize("semantics", ["0.5.23", "earlier"])
def test_chain_p_zero_is_rejected_with_probability_0(semantics):
    ev, text = _test_caption(_chain([0, .5, .5], [.5, .5, 0], 0.0, semantics), "en")
    assert not ev.accepted and ev.accept_prob == 0.0 and "≥ p = 0.000" in text.replace("0.0000 ≥", "≥")


def test_chain_coin_exactly_on_the_threshold_is_rejected_and_says_so():
    """§0.5: u = .5, q = .6, p = .3: .5 x .6 = .3 is not < .3 (strict)."""
    ev, text = _test_caption(_chain([.3, .4, .3], [.6, .3, .1], 0.5), "en")
    assert not ev.accepted and "0.3000 ≥ p = 0.3000" in text and "0.500" in text


def test_a_coin_a_hair_below_the_threshold_never_prints_as_equal():
    p0 = float(np.float32(.3))
    coin = float(np.nextafter(np.float32(.5), np.float32(0)))
    ev, text = _test_caption(_chain([p0, .4, .3], [.6, .3, .1], coin), "en")
    assert ev.accepted
    m = re.search(r"= (\S+) < p = (\S+)", text)
    assert m and m.group(1) != m.group(2), text


# -- 14. the kernel makes the "q as buffer" mistake --------------------------------------------------------

@pytest.mark.parametrize("backend", ["numpy", "torch", "triton"])
def test_q_as_buffer_reaches_the_backends_sampler(backend, monkeypatch):
    from specviz.algorithms.backends import get_backend
    from specviz.rooms.loop import decode

    ops = get_backend(backend)
    seen = []
    real = ops.tree_sampling_target_only

    def spy(*args, **kwargs):
        seen.append(kwargs.get("draft_probs"))
        return real(*args, **kwargs)

    fake = SimpleNamespace(**{**vars(ops), "tree_sampling_target_only": spy})
    monkeypatch.setattr("specviz.algorithms.backends.get_backend", lambda name: fake)
    s = decode.LoopSettings(algorithm="target_only", topk=2, depth=2, num_draft_tokens=4, temperature=1.0, rounds=1,
                            backend=backend, mistakes=("q_as_buffer",))
    run = decode.run_loop("The target ", s)
    assert len(seen) == 1 and all(b is not None and float(b.sum()) > 0 for b in seen)
    for rnd, buf in zip(run.rounds, seen):
        np.testing.assert_allclose(np.asarray(buf.cpu() if hasattr(buf, "cpu") else buf)[0], rnd.tree.node_q)   # the Draft's q, row i at node i


def test_a_work_buffer_gives_the_same_result_on_every_backend():
    """A random nonzero buffer: numpy, torch and Triton agree on every integer and on the buffer."""
    from specviz.algorithms.backends import get_backend

    rng = np.random.default_rng(3)
    bs, n, V = 2, 5, 7
    cand = np.array([[5, 0, 1, 2, 3]] * bs, dtype=np.int64)
    ri = np.arange(bs * n).reshape(bs, n)
    nt = np.array([[1, 3, -1, -1, -1]] * bs)
    ns = np.array([[-1, 2, -1, 4, -1]] * bs)
    p = rng.dirichlet(np.ones(V), size=(bs, n)).astype(np.float32)
    q = rng.dirichlet(np.ones(V), size=(bs, n)).astype(np.float32)
    u = np.array([[.95, .9, .9, .9, .9], [.2, .3, .5, .5, .5]], np.float32)
    uf = np.array([.37, .81], np.float32)
    want = None
    for name in ("numpy", "torch", "triton"):
        ops = get_backend(name)
        args = (cand, ri, nt, ns, u, uf, p) if name == "numpy" else tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in (cand, ri, nt, ns, u, uf, p))
        buf = q if name == "numpy" else torch.from_numpy(q)
        r = ops.tree_sampling_target_only(*args, num_speculative_tokens=3, draft_probs=buf)
        got = {k: np.asarray(v.cpu() if hasattr(v, "cpu") else v) for k, v in r.as_dict().items()}
        zero = ops.tree_sampling_target_only(*args, num_speculative_tokens=3)
        if want is None:
            want = got
            # the buffer changes the terminal draw of request 0 (all of the root's children rejected)
            assert got["predicts"].tolist() != np.asarray(zero.predicts).tolist()
            continue
        for k in ("predicts", "accept_index", "accept_token_num"):
            assert got[k].tolist() == want[k].tolist(), (name, k)
        np.testing.assert_allclose(got["draft_probs"], want["draft_probs"], atol=1e-7)


# -- 15. max_tokens and a forced n ----------------------------------------------------------------------

def test_run_loop_returns_exactly_max_tokens_and_says_what_it_cut():
    from specviz.rooms.loop.decode import LoopSettings, run_loop

    s = LoopSettings(topk=2, depth=4, num_draft_tokens=8, rounds=16)
    full = run_loop("The target model ", s)
    for max_tokens in (1, 3, 5):
        run = run_loop("The target model ", s, max_tokens=max_tokens)
        assert len(run.generated) == max_tokens and run.generated == full.generated[:max_tokens]
        assert len(run.text) == max_tokens
        assert run.dropped == len(run.round_tokens) - max_tokens
        assert (run.dropped > 0) == any("max_tokens" in n for n in run.notes)


def test_topk_1_states_the_forced_num_draft_tokens():
    from specviz.rooms.loop.decode import LoopSettings, run_loop

    run = run_loop("The ", LoopSettings(topk=1, depth=3, num_draft_tokens=8, rounds=1))
    assert run.settings.num_draft_tokens == 4
    assert any("num_draft_tokens = depth + 1 = 4" in n and "asked 8" in n for n in run.notes)


# -- 3. the q-as-buffer demo fails at the page's defaults ------------------------------------------------

def test_q_as_buffer_fails_proof_3_at_the_pages_defaults_with_power_shown():
    """The page's defaults (prompt, settings, trials) with the target-only sampler and the mistake on:
    the exact detection power is ~1 and the proof, run as the page runs it, reports a failure."""
    from specviz.rooms.loop import proofs
    from specviz.rooms.loop.decode import LoopSettings

    s = proofs.proof_settings(LoopSettings(algorithm="target_only", **proofs.PAGE_SETTINGS, mistakes=("q_as_buffer",))).checked()
    power = proofs.detection_power(proofs.PAGE_PROMPT, s, proofs.PAGE_TRIALS)
    assert power.power > 0.99 and power.tv > 0.1
    clean = proofs.detection_power(proofs.PAGE_PROMPT, replace(s, mistakes=()), proofs.PAGE_TRIALS)
    assert clean.tv < 1e-6 and clean.power <= 1e-3  # a correct sampler: the law is p, failures at most delta / 2
    proof = proofs.sampling_lossless(proofs.PAGE_PROMPT, s, num_tokens=proofs.PROOF_TOKENS, trials=proofs.PAGE_TRIALS)
    assert not proof.ok and not proof.set_ok, proof
