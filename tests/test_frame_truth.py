"""Property test (issue 18): every frame of every page's step player states what the reference computed.

For random scenarios of every algorithm, edges included (DSpark verify_len caps, q = 0 and p = 0
slots, coins exactly on thresholds and bucket edges, thresholds below 1, -1 paddings, both
semantics), build every player frame (``specviz.replay.playframes``, what the pages show) in both
languages and check each number it states against the numpy reference's result: accept_index,
correct_len, commit_lens, new_seq_lens, the bonus, verdicts, acceptance probabilities and the
residual's mass. The expected values come from the result arrays and from SEMANTICS.md's rules
written out here, never from the frame builder's own code.
"""
from __future__ import annotations

import re

import numpy as np
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from specviz.replay import engine, steps
from specviz.base.errors import SpecvizError
from specviz.replay.events import AcceptTest, Cap, Commit, Finalize, Terminal
from specviz.inputs.scenario import scenario_from_json
from specviz.replay import playframes

import json

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], derandomize=True)
LANGS = ("en", "zh")
WORD = {"en": {"accepted": "accepted", "rejected": "rejected"}, "zh": {"accepted": "已接受", "rejected": "已拒绝"}}
F32 = np.float32


# -- strategies ----------------------------------------------------------------------------------------

def _row(draw, V, allow_zero_row=False):
    """A probability row from small integer weights: exact zeros and values that put coins on edges."""
    if draw(st.booleans()):  # four quarters spread over the tokens: every running sum is a quarter, like the coins
        w = [0] * V
        for i in draw(st.lists(st.integers(0, V - 1), min_size=4, max_size=4)):
            w[i] += 1
        return [x / 4 for x in w]
    w = draw(st.lists(st.integers(0, 3), min_size=V, max_size=V))
    if sum(w) == 0:
        w[draw(st.integers(0, V - 1))] = 1
    total = sum(w)
    return [x / total for x in w]


def _coin(draw, edges):
    """A coin: exactly on one of ``edges`` (clipped into [0, 1)), on a quarter, or anywhere."""
    pool = sorted({min(float(e), 0.999) for e in edges if 0 <= e < 1} | {0.0, 0.25, 0.5, 0.75})
    return draw(st.one_of(st.sampled_from(pool), st.floats(0, 0.999, allow_nan=False).map(lambda x: round(x, 3))))


def _tree(draw, max_n=7):
    n = draw(st.integers(2, max_n))
    parents = [-1]
    for i in range(1, n):
        parents.append(draw(st.integers(parents[-1] if i > 1 else 0, i - 1)))
    return parents


def _tokens(draw, parents, V):
    """Tokens 0..V-2 (V-1 is the root R), distinct among siblings."""
    toks = [V - 1]
    for i in range(1, len(parents)):
        used = {toks[j] for j in range(1, i) if parents[j] == parents[i]}
        free = [t for t in range(V - 1) if t not in used]
        assume(free)
        toks.append(draw(st.sampled_from(free)))
    return toks


def _depth_width(parents):
    d = [0]
    for p in parents[1:]:
        d.append(d[p] + 1)
    return max(d) + 1


def _scenario(data: dict):
    try:
        return scenario_from_json(json.dumps(data))
    except SpecvizError:
        assume(False)


@st.composite
def tree_scenarios(draw, algorithm):
    V = draw(st.integers(3, 5))
    vocab = [chr(ord("A") + i) for i in range(V - 1)] + ["R"]
    parents = _tree(draw)
    toks = _tokens(draw, parents, V)
    n = len(parents)
    deepest = _depth_width(parents)
    W = draw(st.integers(max(2, deepest - 1), deepest))  # W below the depth + 1: the depth limit cuts the walk
    req = {"tree": {"parents": parents, "tokens": [vocab[t] for t in toks]}, "seq_len": draw(st.integers(0, 20))}
    top = {"format": "specviz.scenario", "version": 1, "name": "prop", "algorithm": algorithm, "vocab": vocab,
           "num_speculative_tokens": W}
    if algorithm == "greedy":
        # the target follows a random child often, so walks go deep; otherwise anything (padding -1 then)
        tp = []
        for i in range(n):
            kids = [toks[j] for j in range(n) if parents[j] == i]
            tp.append(vocab[draw(st.sampled_from(kids))] if kids and draw(st.booleans()) else vocab[draw(st.integers(0, V - 1))])
        req["target_predict"] = tp
    else:
        rows = [_row(draw, V) for _ in range(n)]
        req["target_probs"] = rows
        edges = [float(np.cumsum([rows[i][toks[j]] for j in range(n) if parents[j] == i])[-1]) for i in range(n)
                 if any(parents[j] == i for j in range(n))]
        edges += [float(sum(rows[i][toks[j]] for j in range(1, k + 1) if parents[j] == i)) for i in range(n) for k in range(n)]
        req["coins"] = [_coin(draw, edges) for _ in range(n)]
        req["coin_final"] = _coin(draw, [0.5])
        top["threshold_acc"] = draw(st.sampled_from([1.0, 1.0, 0.5, 0.25]))
        top["threshold_single"] = draw(st.sampled_from([1.0, 1.0, 0.5, 0.0]))
        top["semantics"] = draw(st.sampled_from(["0.5.23", "earlier"]))
    top["requests"] = [req]
    return _scenario(top)


@st.composite
def chain_scenarios(draw, algorithm):
    V = draw(st.integers(3, 5))
    vocab = [chr(ord("A") + i) for i in range(V - 1)] + ["R"]
    N = draw(st.integers(2, 5))
    chain = ["R"] + [vocab[draw(st.integers(0, V - 2))] for _ in range(N - 1)]
    req = {"chain": chain, "seq_len": draw(st.integers(0, 20))}
    top = {"format": "specviz.scenario", "version": 1, "name": "prop", "algorithm": algorithm, "vocab": vocab}
    if algorithm == "dspark_greedy":
        # the target agrees with the next draft often, so runs are long and caps bite
        req["target_predict"] = [chain[t + 1] if t + 1 < N and draw(st.booleans()) else vocab[draw(st.integers(0, V - 1))]
                                 for t in range(N)]
    else:
        p = [_row(draw, V) for _ in range(N)]
        q = [list(p[j]) if draw(st.booleans()) else _row(draw, V) for j in range(N - 1)]  # q = p: accepted, runs grow
        if draw(st.booleans()):  # a q = 0 or a p = 0 slot for the proposed token
            j = draw(st.integers(1, N - 1))
            tok = vocab.index(chain[j])
            which = q if draw(st.booleans()) else p
            row = which[j - 1]
            row[tok] = 0.0
            if sum(row) == 0:
                row[(tok + 1) % (V - 1)] = 1.0
            s_ = sum(row)
            which[j - 1] = [x / s_ for x in row]
        req["target_probs"], req["draft_probs"] = p, q
        # edges of the test u*q < p: u = p / q exactly (when it lies in [0, 1))
        edges = [p[j - 1][vocab.index(chain[j])] / q[j - 1][vocab.index(chain[j])] for j in range(1, N)
                 if q[j - 1][vocab.index(chain[j])] > 0]
        req["coins"] = [_coin(draw, edges) for _ in range(N - 1)]
        req["coin_final"] = _coin(draw, [0.5])
        if algorithm == "chain_rejection":
            top["semantics"] = draw(st.sampled_from(["0.5.23", "earlier"]))
            top["num_speculative_tokens"] = N
    if algorithm.startswith("dspark") and draw(st.booleans()):
        req["verify_len"] = draw(st.integers(1, N))
    top["requests"] = [req]
    return _scenario(top)


# -- checks ----------------------------------------------------------------------------------------------

def _chips(frame, label):
    row = next((r for r in frame.rows if r.label == label), None)
    return None if row is None else [c if isinstance(c, str) else c[0] for c in row.chips]


def _check_printed_comparison(text, left, right, pattern):
    """Two numbers around < / ≥: the symbol matches the values and different values never print the same."""
    m = re.search(pattern, text)
    assert m, text
    a, sym, b = m.group(1), m.group(2), m.group(3)
    assert sym == ("<" if left < right else "≥"), text
    if left != right:
        assert a != b, text


def _clean(q, semantics):
    q = np.asarray(q, dtype=np.float32)
    return np.where((q >= 0) & (q <= 1), q, F32(0)) if semantics == "0.5.23" else q


def _accept_probability(p, q, semantics):
    """SEMANTICS §7/§10 written out: P over u in [0, 1) that the chain test accepts."""
    if semantics == "0.5.23":
        return min(1.0, p / q) if 0 < q <= 1 else 0.0
    return min(1.0, p / q) if q > 0 else (1.0 if p > 0 else 0.0)


def _check_eagle(s, run, frames, lang, kind):
    res = run.result
    k = int(res["accept_token_num"][0])
    ai = [int(x) for x in res["accept_index"][0]]
    assert ai[k + 1:] == [-1] * (len(ai) - k - 1)  # the -1 padding
    pr = res["predicts"].reshape(-1)
    last = frames[-1]
    if kind == "greedy":
        assert last.rows[1].code == f"accept_index[0] = {ai}"
        assert _chips(last, "accept_token_num") == [k] and _chips(last, "num_correct_drafts") == [k]
    else:
        assert _chips(last, "accept_index") == ai
    typed = [e for e in steps.typed_events(run.trace.events) if e.request == 0]
    assert len(frames) == len(typed) + 1
    for f, ev in zip(frames[1:], typed):
        text = f.caption
        if isinstance(ev, Commit):
            assert f"accept_token_num = {k}" in text, text
        elif isinstance(ev, Terminal):
            assert ev.token == int(pr[ai[k]]), (ev, ai)
            assert s.label(ev.token) in text
        elif isinstance(ev, AcceptTest):
            assert WORD[lang]["accepted" if ev.accepted else "rejected"] in text, text
            assert ev.accepted == (ev.node in ai), (ev, ai)  # bs = 1: global row == node
            if ev.q is None:  # target-only: coin < prob_acc / threshold_acc ?
                m = re.search(r"coin (\S+) [<≤] prob_acc / threshold_acc = ([^?？\s]+)", text)
                assert m and (ev.coin == ev.bound or m.group(1) != m.group(2)), text
                rule = (ev.p > 0 and (ev.coin < ev.bound or ev.single_fired)) if s.semantics == "0.5.23" \
                    else (ev.coin <= ev.bound or ev.single_fired)
                assert ev.accepted == rule, ev
            else:  # chain: the rule of the run's semantics, the reference's probability
                assert abs(ev.accept_prob - _accept_probability(ev.p, ev.q, s.semantics)) < 1e-6, ev
                assert f"{ev.accept_prob:.3f}" in text, text
                if ev.q_valid is False:
                    assert not ev.accepted and "0 < q ≤ 1" in text and "min(1, p/q)" not in text, text
                else:
                    _check_printed_comparison(text, ev.u_times_q, ev.p, r"= (\S+) (<|≥) p = (\S+) ")
                    assert ev.accepted == (ev.u_times_q < ev.p), ev
                    if ev.q <= 0:
                        assert "min(1, p/q)" not in text, text
    if kind == "chain":
        # verdict cells: slot j accepted iff j <= k; the hover states the reference's probability
        table = last.table
        for row in table[1:]:
            j = int(row[0][0] if isinstance(row[0], tuple) else row[0])
            verdict = row[-1]
            if verdict[1] in ("accepted", "rejected"):
                assert (verdict[1] == "accepted") == (j <= k), (j, k, verdict)
                assert verdict[0] == WORD[lang][verdict[1]]
        # the residual's mass: relu(p - clean(q)) at row k, or plain p after full acceptance
        res_ev = next(e for e in run.trace.events if e.kind == "residual")
        p_row = np.asarray(run.inputs["target_probs"][0][k], dtype=np.float32)
        N = len(s.requests[0].chain)
        want = p_row if k == N - 1 else np.maximum(p_row - _clean(run.inputs["draft_probs"][0][k], s.semantics), F32(0))
        np.testing.assert_allclose(np.asarray(res_ev.data["dist"], dtype=np.float64), want, atol=1e-7)
    if kind == "target_only":
        # scanned siblings: the bucket shown holds the coin iff the reference accepted (0.5.23, no single-threshold hit)
        for f in frames:
            if not f.table:
                continue
            for row in f.table[1:]:
                node = int(row[0][0].split(":")[0])
                state = row[-1][1]
                ev = next((e for e in typed if isinstance(e, AcceptTest) and e.node == node), None)
                if state in ("accepted", "rejected"):
                    assert ev is not None and (state == "accepted") == ev.accepted
                    assert row[-1][0] == WORD[lang][state]
                    assert row[1] == f"{ev.p:.3g}" and row[2] == f"{ev.prob_acc:.3g}", (row, ev)
        # the terminal draw row names the bonus the result holds
        u_final = _chips(last, "u_final")
        if u_final is not None and len(u_final) > 1:
            assert u_final[1] == f"→ {s.label(int(pr[ai[k]]))}"


def _check_dspark(s, run, frames, lang):
    res = run.result
    raw, k = int(res["raw_correct_len"][0]), int(res["correct_len"][0])
    T = len(s.requests[0].chain)
    vlen = int(run.inputs["verify_lens"][0])
    assert k == min(raw, vlen - 1)  # CapCorrectLen (§8)
    commit, new_seq = int(res["commit_lens"][0]), int(res["new_seq_lens"][0])
    assert commit == k + 1 and new_seq == s.requests[0].seq_len + commit
    bonus = s.label(int(res["bonus"][0]))
    if s.algorithm == "dspark_greedy":
        assert int(res["bonus"][0]) == int(run.inputs["target_predict"][0][k])
    else:
        assert int(res["bonus"][0]) == int(res["predicts"][int(res["accept_index"][0][k])])  # the two-level gather
    out = [s.label(int(t)) for t in res["out_tokens"][0][:commit]]
    assert out[-1] == bonus
    typed = [e for e in steps.typed_events(run.trace.events) if e.request == 0]
    assert len(frames) == len(typed) + 1
    settled = False
    for f, ev in zip(frames[1:], typed):
        settled = settled or isinstance(ev, (Cap, Finalize))
        assert _chips(f, "commit_lens")[0] in ("—", commit), (_chips(f, "commit_lens"), commit)
        if settled:
            assert _chips(f, "bonus") == [bonus]
            assert _chips(f, "correct_len")[0] == k
        text = f.caption
        if isinstance(ev, Cap):
            assert f"min({raw}, {vlen} − 1) = **{k}**".replace("**", "") in text and f"cap_trim_lens = {raw - k}" in text, text
            assert bonus in text
        if isinstance(ev, Finalize):
            assert f"commit_lens = correct_len + 1 = {commit}" in text and f"= {new_seq}" in text, text
        if isinstance(ev, Commit):
            assert f"= {raw}" in text, text
        if isinstance(ev, Terminal) and not settled and k != raw:
            assert ev.provisional
        if isinstance(ev, Finalize) or settled:  # after the cap nothing states the uncapped commit_lens
            assert f"commit_lens = correct_len + 1 = {raw + 1}" not in text or raw == k, text
    last = frames[-1]
    assert _chips(last, "correct_len")[0] == k and _chips(last, "bonus") == [bonus] and _chips(last, "commit_lens") == [commit]
    assert _chips(last, "new_seq_lens") == [new_seq]
    assert _chips(last, "输出" if lang == "zh" else "output") == out
    assert (vlen < T) == (_chips(last, "verify_len") is not None)
    # the figure: rows 0..k kept (accepted), every later row not
    if s.algorithm == "dspark_greedy":
        states = steps.walk_after(typed, len(typed), T, 0, dspark=True).states
    else:
        states = dict(enumerate(steps.scan_view(typed, T, chain=True, finish=False).states))
    for i in range(T):
        assert (states.get(i) == "accepted") == (i <= k), (i, k, states)


BUILDERS = {"greedy": playframes.greedy_frames, "target_only": playframes.target_only_frames,
            "chain_rejection": playframes.chain_frames, "dspark_greedy": playframes.dspark_frames,
            "dspark_sampling": playframes.dspark_frames}


def _edges(s, run):
    """Name the edges this example reaches (hypothesis statistics show how often each is hit)."""
    res = run.result
    if "raw_correct_len" in res and int(res["raw_correct_len"][0]) != int(res["correct_len"][0]):
        event("verify_len cap cuts the run")
    if "accept_index" in res and s.algorithm in ("greedy", "target_only") and -1 in res["accept_index"][0].tolist():
        event("-1 padding")
    for ev in steps.typed_events(run.trace.events):
        if isinstance(ev, AcceptTest):
            if ev.q is not None and ev.q == 0:
                event("q = 0 slot")
            if ev.p == 0:
                event("p = 0 slot")
            if (ev.q is not None and ev.u_times_q == ev.p) or (ev.q is None and ev.coin == ev.bound):
                event("coin exactly on the threshold")
            if ev.single_fired:
                event("threshold_single fires")
    if s.semantics == "earlier":
        event("earlier semantics")
    if s.threshold_acc < 1:
        event("threshold_acc < 1")


def _check(s):
    run = engine.run_scenario(s)
    _edges(s, run)
    for lang in LANGS:
        frames = BUILDERS[s.algorithm](s, run, lang)
        if s.algorithm.startswith("dspark"):
            _check_dspark(s, run, frames, lang)
        else:
            _check_eagle(s, run, frames, lang, {"greedy": "greedy", "target_only": "target_only", "chain_rejection": "chain"}[s.algorithm])


@settings(max_examples=25, **SETTINGS)
@given(s=tree_scenarios("greedy"))
def test_greedy_frames_state_the_reference(s):
    _check(s)


@settings(max_examples=30, **SETTINGS)
@given(s=tree_scenarios("target_only"))
def test_target_only_frames_state_the_reference(s):
    _check(s)


@settings(max_examples=40, **SETTINGS)
@given(s=chain_scenarios("chain_rejection"))
def test_chain_frames_state_the_reference(s):
    _check(s)


@settings(max_examples=30, **SETTINGS)
@given(s=chain_scenarios("dspark_greedy"))
def test_dspark_greedy_frames_state_the_reference(s):
    _check(s)


@settings(max_examples=30, **SETTINGS)
@given(s=chain_scenarios("dspark_sampling"))
def test_dspark_sampling_frames_state_the_reference(s):
    _check(s)
