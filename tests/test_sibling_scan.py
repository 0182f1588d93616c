"""The target-only page's sibling table (issue 32): per sibling its bucket, the rule that decided it and its
verdict, in the kernel's order of tests, checked against the numpy reference's own trace.

With threshold_single .45, u[0] = .95 and threshold_acc .9 the table showed A's bucket as [0, 0.556) yet
marked A accepted (threshold_single fired), and B's bucket as "[1, 1)".
"""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from specviz.replay import sibling_scan as S
from specviz.replay import steps
from specviz.replay.engine import run_scenario
from specviz.replay.events import AcceptTest
from specviz.rooms.pitfalls import preset
from specviz.inputs.scenario import scenario_from_dict
from specviz.replay.playframes import target_only_frames



def _scenario(*, t_single=1.0, t_acc=1.0, coins=None, p=None, semantics="0.5.23", tree=None):
    data = json.loads(preset("target_only_sampling").to_json())
    data.update(threshold_single=t_single, threshold_acc=t_acc, semantics=semantics)
    req = data["requests"][0]
    if tree is not None:
        req["tree"] = tree
        n = len(tree["parents"])
        req["target_probs"] = p if p is not None else req["target_probs"][:n]
        req["coins"] = (coins or req["coins"])[:n]
    else:
        if p is not None:
            req["target_probs"] = p
        if coins is not None:
            req["coins"] = coins
    return scenario_from_dict(data)


def _root_table(s, lang="en"):
    """The sibling table of the root level in the last frame that shows it."""
    run = run_scenario(s, "numpy", with_trace=True)
    frames = target_only_frames(s, run, lang)
    tables = [f.table for f in frames if f.table and f.table[1][0][0].startswith("1:")]
    return tables[-1]


def test_threshold_single_owns_the_bucket_it_decides_and_an_empty_bucket_says_so():
    """The issue's case: A (p .5) is accepted by threshold_single .45 with coin .95 (the coin test .95 < .5/.9
    fails): A's bucket is every coin [0, 1), the rule is threshold_single, and B is not reached, its bucket empty."""
    s = _scenario(t_single=.45, t_acc=.9, coins=[.95, .55, 0, 0, 0])
    for lang in ("en", "zh"):
        table = _root_table(s, lang)
        a, b = table[1], table[2]
        assert a[3][0] == "[0, 1)", a
        assert a[4][0].startswith("threshold_single") and "0.5 ≥ 0.45" in a[4][0], a
        assert "0.95 ≥ prob_acc/threshold_acc = 0.5/0.9 = 0.556" in a[4][2], a  # the hover: the coin test failed first
        assert a[5][1] == "accepted"
        assert b[3][0] == ("empty" if lang == "en" else "空"), b
        assert b[5][0] == ("not reached" if lang == "en" else "未到达") and b[5][1] == "pending", b
        assert not any("[1, 1)" in str(cell) for row in table for cell in row)


@pytest.mark.parametrize("semantics", ["0.5.23", "earlier"])
def test_a_coin_exactly_on_a_bound(semantics):
    """u[0] = .5 = A's running sum: 0.5.23's strict < rejects A and B's bucket [0.5, 0.8) takes the coin;
    earlier releases' <= accept A, whose bucket [0, 0.5] is closed on the right."""
    s = _scenario(coins=[.5, .55, 0, 0, 0], semantics=semantics)
    a, b = _root_table(s)[1:3]
    if semantics == "0.5.23":
        assert (a[3][0], a[5][1]) == ("[0, 0.5)", "rejected") and a[4][0] == "coin 0.5 ≥ 0.5, p 0.5 < 1", a
        assert "coin test failed (0.5 ≥ prob_acc 0.5)" in a[4][2], a
        assert (b[3][0], b[5][1]) == ("[0.5, 0.8)", "accepted") and b[4][:2] == ("coin 0.5 < 0.8", "accepted"), b
        assert b[4][2] == "coin test: coin 0.5 < prob_acc 0.8", b
    else:
        assert (a[3][0], a[5][1]) == ("[0, 0.5]", "accepted") and a[4][0] == "coin 0.5 ≤ 0.5", a
        assert a[4][2] == "coin test: coin 0.5 ≤ prob_acc 0.5", a
        assert (b[3][0], b[5][0]) == ("(0.5, 0.8]", "not reached"), b


def test_threshold_acc_and_p_equal_to_threshold_single():
    """threshold_acc .5 stretches A's bound to 1: coin .7 >= prob_acc .5 is accepted only by the stretch.
    threshold_single .3 = B's p exactly (p >= threshold_single fires at equality) with A rejected."""
    a = _root_table(_scenario(t_acc=.5, coins=[.7, .55, 0, 0, 0]))[1]
    assert a[5][1] == "accepted" and a[4][0] == "coin 0.7 < 1 (threshold_acc)" and a[3][0] == "[0, 1)", a
    assert "prob_acc/threshold_acc = 0.5/0.5 = 1" in a[4][2] and "stretches" in a[4][2], a
    p = json.loads(preset("target_only_sampling").to_json())["requests"][0]["target_probs"]
    p[0] = [0.25, 0.25, 0, 0, 0.5, 0]  # A .25, B .25; coin .9 fails both coin tests
    a, b = _root_table(_scenario(t_single=.25, p=p, coins=[.9, .55, 0, 0, 0]))[1:3]
    # A's p .25 >= .25 too: threshold_single fires on A first (the kernel tests siblings in order)
    assert a[5][1] == "accepted" and a[4][0].startswith("threshold_single: p 0.25 ≥ 0.25"), a
    assert b[3][0] == "empty" and b[5][0] == "not reached", b


def test_p_zero_is_rejected_by_the_guard_first():
    p = json.loads(preset("target_only_sampling").to_json())["requests"][0]["target_probs"]
    p[0] = [0, 0.5, 0, 0, 0.5, 0]  # A has no mass
    a, b = _root_table(_scenario(t_single=0.0, p=p, coins=[0.0, .55, 0, 0, 0]))[1:3]
    assert a[3][0] == "empty" and a[5][1] == "rejected" and a[4][0].startswith("p = 0"), a
    assert b[5][1] == "accepted" and b[4][0] == "coin 0 < 0.5", b  # coin 0 < .5 decides before threshold_single 0


def _random_case(rng: random.Random):
    """A root with 3 children over V = 6, p rows with exact-ish values and zeros, thresholds at, below and at 1,
    coins drawn or put exactly on a running sum or a bound."""
    V = 6
    raw = [rng.choice([0, 0, 1, 2, 3, 5]) for _ in range(V)]
    if sum(raw) == 0:
        raw[0] = 1
    row = [x / sum(raw) for x in raw]
    t_acc = rng.choice([1.0, 1.0, .9, .5, .25])
    t_single = rng.choice([1.0, 1.0, .45, .3, 0.0] + [row[rng.randrange(3)]])
    cum = np.cumsum(np.asarray(row[:3], dtype=np.float32), dtype=np.float32)
    coin = rng.choice([rng.random() * .9999, float(cum[rng.randrange(3)]),
                       float(np.float32(cum[rng.randrange(3)]) / np.float32(max(t_acc, 1e-9))), 0.0])
    coin = min(coin, .9999)
    tree = {"parents": [-1, 0, 0, 0], "tokens": ["R", "A", "B", "C"]}
    p = [row] + [[1 / V] * V for _ in range(3)]
    return dict(tree=tree, p=p, coins=[coin, 0, 0, 0], t_acc=t_acc, t_single=t_single,
                semantics=rng.choice(["0.5.23", "earlier"]))


@pytest.mark.parametrize("seed", range(6))
def test_table_agrees_with_the_reference_trace(seed):
    """Random levels (coins on running sums and bounds, p = 0, thresholds below 1): for every sibling the
    reference tested, the row's verdict is the trace's, the coin lies in its bucket iff it was accepted,
    and the rule matches the trace (single_fired, the coin test); the siblings it never tested are the
    ones after the accepted one, shown as not reached; buckets never overlap and are never "[x, x)"."""
    rng = random.Random(seed)
    for _ in range(40):
        case = _random_case(rng)
        s = _scenario(**case)
        run = run_scenario(s, "numpy", with_trace=True)
        tested = {e.node: e for e in steps.typed_events(run.trace.events) if isinstance(e, AcceptTest)}
        coin = float(s.requests[0].coins[0])
        rows = S.scan_level(run.inputs["target_probs"][0][0], [s.vocab.index(t) for t in "ABC"], [1, 2, 3], coin,
                            threshold_single=s.threshold_single, threshold_acc=s.threshold_acc, semantics=s.semantics)
        for r in rows:
            ev = tested.get(r.node)
            assert r.reached == (ev is not None), (case, r)
            if ev is None:
                assert r.rule == S.NOT_REACHED and not r.accepted
                continue
            assert (r.p, r.prob_acc, r.bound) == (ev.p, ev.prob_acc, ev.bound), (case, r, ev)
            assert r.accepted == ev.accepted, (case, r, ev)
            assert S.in_bucket(r, coin) == ev.accepted, (case, r, coin)
            coin_ok = (ev.coin < ev.bound) if s.semantics == "0.5.23" else (ev.coin <= ev.bound)
            assert (r.rule in (S.COIN, S.THRESHOLD_ACC)) == (ev.accepted and coin_ok and (ev.p > 0 or s.semantics != "0.5.23"))
            assert (r.rule == S.SINGLE) == (ev.accepted and not coin_ok and ev.single_fired), (case, r, ev)
            assert (r.rule == S.P_ZERO) == (s.semantics == "0.5.23" and ev.p == 0), (case, r, ev)
            text = S.bucket_text(r, "en", coin)
            lo, hi = (None, None) if text == "empty" else text[1:-1].split(", ")
            assert text == "empty" or lo != hi or text[0] + text[-1] == "[]", text  # only [0, 0] (earlier: coin 0 <= 0) holds one point
        holding = [r.node for r in rows if S.in_bucket(r, coin)]
        assert len(holding) <= 1, (case, rows)
        accepted = [r.node for r in rows if r.accepted]
        assert holding == accepted, (case, rows)


def _captions(s, lang="en"):
    run = run_scenario(s, "numpy", with_trace=True)
    return [f.caption for f in target_only_frames(s, run, lang)]


def test_the_step_caption_reads_the_tests_in_the_kernels_order():
    """The sentence above the table says which test decided, in the kernel's order: the coin test failed and
    threshold_single accepted (it used to read "coin 0.950 < … = 0.556? → accepted — p ≥ threshold_single fires");
    a p = 0 sibling is stopped by 0.5.23's guard; earlier releases compare with ≤."""
    caps = _captions(_scenario(t_single=.45, t_acc=.9, coins=[.95, .55, 0, 0, 0]))
    assert any("coin 0.950 < prob_acc / threshold_acc = 0.556? no; p = 0.500 ≥ threshold_single = 0.450 → accepted" in c
               for c in caps), caps
    p = json.loads(preset("target_only_sampling").to_json())["requests"][0]["target_probs"]
    p[0] = [0, 0.5, 0, 0, 0.5, 0]
    caps = _captions(_scenario(t_single=0.0, p=p, coins=[0.0, .55, 0, 0, 0]))
    assert any("p = 0 fails 0.5.23's p > 0 guard" in c and c.endswith("→ rejected") for c in caps), caps
    caps = _captions(_scenario(coins=[.5, .55, 0, 0, 0], semantics="earlier"))
    assert any("coin 0.500 ≤ prob_acc / threshold_acc = 0.500? yes → accepted" in c for c in caps), caps
