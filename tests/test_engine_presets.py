"""Every preset through the engine: the commit view a student reads, derived by hand."""
import pytest

from specviz.replay.engine import run_scenario
from specviz.replay.frames import final_arrays, replay
from specviz.inputs.scenario import load_scenario

# name: (accept_rows per request, outputs, committed input tokens, new_seq_len per request)
EXPECTED = {
    # R->A (row 1), A->C (row 3), depth limit; C's prediction X is the bonus.
    "running_example": ([[0, 1, 3]], [["A", "C", "X"]], [["R", "A", "C"]], [13]),
    # Target X at R matches neither A nor B: only the root row, output X.
    "root_mismatch": ([[0]], [["X"]], [["R"]], [11]),
    # C misses the target D at A's row; the sibling D matches (row 4).
    "sibling_match": ([[0, 1, 4]], [["A", "D", "X"]], [["R", "A", "D"]], [13]),
    # Chain R-A-C-D with W = 4, all accepted, bonus Y from D's row.
    "full_acceptance": ([[0, 1, 2, 3]], [["A", "C", "D", "Y"]], [["R", "A", "C", "D"]], [24]),
    # Request 1 lives in rows 5..9: B is row 6, F (second child of B) row 9.
    "batch_two_requests": ([[0, 1, 3], [5, 6, 9]], [["A", "C", "X"], ["B", "F", "Y"]], [["R", "A", "C"], ["R", "B", "F"]], [13, 10]),
    # u0 = .4 in A's bucket [0, .5); u[1] = .55 in C's bucket [0, .6); bonus from C's plain row at .5 -> X.
    "target_only_sampling": ([[0, 1, 3]], [["A", "C", "X"]], [["R", "A", "C"]], [13]),
    # u0 = .6: A rejected, B accepted (.6 < .8); B is a leaf; plain row of B at .5 -> X.
    "target_only_rejected_sibling": ([[0, 2]], [["B", "X"]], [["R", "B"]], [12]),
    # threshold_acc .5: .9 < .5/.5 accepts A; then C with .55.
    "thresholds_below_1": ([[0, 1, 3]], [["A", "C", "X"]], [["R", "A", "C"]], [13]),
    # u0 = .5 on A's edge: 0.5.23's strict < rejects A; B accepted.
    "semantics_disagree": ([[0, 2]], [["B", "X"]], [["R", "B"]], [12]),
    # .7 * .6 = .42 >= .3 rejects A; residual (0, .1, .2) at .25 * .3 = .075 -> B.
    "pq_example": ([[0]], [["B"]], [["R"]], [11]),
    # Leading run A, B; C != X; bonus X; commit 3.
    "dspark_chain": ([[0, 1, 2]], [["A", "B", "X"]], [["R", "A", "B"]], [13]),
    # top_p .5 keeps A .5, B .25, C .25 (ties kept); u0 = .6 in B's bucket [.5, .75); B's plain row at .45 -> X.
    "logits_top_p": ([[0, 2]], [["B", "X"]], [["R", "B"]], [12]),
    # .4 * .6 < .3 accepts A; bonus from p' = (.2 .5 .3) at .5 -> B.
    "dspark_sampling": ([[0, 1]], [["A", "B"]], [["R", "A"]], [12]),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_commit_view(name):
    s = load_scenario(f"scenarios/{name}.json")
    run = run_scenario(s)
    rows, outs, kv, seq = EXPECTED[name]
    assert [c.accept_rows for c in run.commits] == rows
    assert [[s.label(t) for t in c.output_tokens] for c in run.commits] == outs
    assert [[s.label(t) for t in c.committed_tokens] for c in run.commits] == kv
    assert [c.new_seq_len for c in run.commits] == seq
    assert [c.next_root for c in run.commits] == [c.output_tokens[-1] for c in run.commits]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_trace_replays_to_the_result(name):
    run = run_scenario(load_scenario(f"scenarios/{name}.json"))
    frames = replay(run.trace)
    assert len(frames) == len(run.trace.events) + 1
    final = final_arrays(run.trace)
    for key, arr in final.items():
        if key in run.result and key not in ("bonus", "correct_len"):
            assert arr.reshape(-1).tolist() == run.result[key].reshape(-1).tolist(), key


def test_earlier_semantics_flip_the_boundary_coin():
    """SEMANTICS §0.4: earlier releases test coin <= prob_acc, so u0 = .5 accepts A, then C: A C X."""
    s = load_scenario("scenarios/semantics_disagree.json").replace(semantics="earlier")
    c = run_scenario(s).commit
    assert [s.label(t) for t in c.output_tokens] == ["A", "C", "X"]


def test_raw_gather_hazard_reads_the_last_flat_element():
    """A->X variant: accept_index [0, 1, -1]; the raw gather's pad reads predicts[-1] (row 4, never written: 0)."""
    s = load_scenario("scenarios/running_example.json")
    req = s.model_dump(mode="json", exclude_none=True)["requests"][0]
    req["target_predict"] = ["A", "X", "X", "X", "X"]
    s2 = s.replace(requests=[req])
    c = run_scenario(s2).commit
    assert c.accept_rows == [0, 1] and c.pad_slots == [2]
    assert c.raw_gather == [0, 4, 0]


def test_without_top_p_the_same_coin_rejects_b():
    """p(A) = .4, p(B) = .2: B's bucket is [.4, .6) and .6 is not < .6. Residual (0 0 .2 .1 .1) at .45 * .4 -> C."""
    s = load_scenario("scenarios/logits_top_p.json")
    req = s.model_dump(mode="json", exclude_none=True)["requests"][0]
    req["top_p"] = 1.0
    c = run_scenario(s.replace(requests=[req])).commit
    assert [s.label(t) for t in c.output_tokens] == ["C"]
