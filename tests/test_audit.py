"""The audit engine: correct claims pass, each planted bug is caught with its rule, pasted text parses safely."""
import json

import pytest

from specviz.rooms.audit import (AuditReport, audit, audit_file, expected_outputs, parse_array, parse_claimed_text)
from specviz.base.errors import SpecvizError
from specviz.rooms.pitfalls import preset


@pytest.fixture(scope="module")
def running():
    return preset("running_example")


def test_correct_claims_pass(running):
    """§0.3: accept_index [0, 1, 3], predicts [A, C, 0, X, 0], accept_lens 3, outputs A C X."""
    r = audit(running, {"accept_index": [[0, 1, 3]], "predicts": [0, 2, 0, 4, 0], "accept_lens": [3],
                        "accept_token_num": 2, "outputs": ["A", "C", "X"], "bonus": "X", "new_seq_lens": 13,
                        "committed_rows": [0, 1, 3], "committed_tokens": ["R", "A", "C"],
                        "accept_tokens": [["A", "C", "X"]]})
    assert r.ok and r.first_error is None and r.summary().startswith("OK")
    assert set(r.checked) >= {"accept_index", "predicts", "accept_lens", "outputs"}


@pytest.mark.parametrize("preset_name", ["running_example", "root_mismatch", "sibling_match", "full_acceptance",
                                         "batch_two_requests", "target_only_sampling", "target_only_rejected_sibling",
                                         "thresholds_below_1", "semantics_disagree", "pq_example", "dspark_chain",
                                         "dspark_sampling"])
def test_reference_outputs_audit_clean(preset_name):
    s = preset(preset_name)
    assert audit(s, expected_outputs(s)).ok


def test_missing_root_row(running):
    r = audit(running, {"accept_index": [1, 3, -1]})
    f = r.first_error
    assert (f.field, f.index, f.expected, f.got) == ("accept_index", (0, 0), 0, 1)
    assert "root's row 0 comes first" in f.rule


def test_accept_lens_without_plus_one(running):
    f = audit(running, {"accept_lens": 2}).first_error
    assert f.field == "accept_lens" and f.expected == 3 and "num_correct_drafts + 1" in f.rule


def test_bonus_not_written(running):
    f = audit(running, {"predicts": [0, 2, 0, 0, 0]}).first_error
    assert f.field == "predicts" and f.index == (3,) and "bonus X is written at the last accepted row" in f.rule


def test_unshifted_predicts(running):
    f = audit(running, {"predicts": [5, 0, 0, 2, 0]}).first_error
    assert f.index == (0,) and "own input token" in f.rule


def test_wrong_sibling(running):
    f = audit(running, {"accept_index": [0, 1, 4]}).first_error
    assert f.index == (0, 2) and f.expected == 3 and f.node == 3 and "first child of A" in f.rule


def test_outputs_as_committed_tokens(running):
    f = audit(running, {"outputs": ["R", "A", "C"]}).first_error
    assert "shifted by one" in f.rule


def test_first_error_follows_field_order(running):
    r = audit(running, {"outputs": ["A", "C"], "accept_index": [[0, 1, 4]]})
    assert [f.field for f in r.findings] == ["accept_index", "outputs"]
    assert r.first_error.field == "accept_index"
    assert "First error: accept_index[0][2]" in r.summary()


def test_local_ids_in_batch():
    s = preset("batch_two_requests")
    f = audit(s, {"accept_index": [[0, 1, 3], [0, 1, 4]]}).first_error
    assert f.index == (1, 0) and "global" in f.rule and "[5, 6, 9]" in f.rule


def test_dspark_correct_len_leading_run():
    s = preset("dspark_chain")
    assert audit(s, {"correct_len": 2, "commit_lens": 3, "out_tokens": [["A", "B", "X", "A"]]}).ok
    f = audit(s, {"commit_lens": 2}).first_error
    assert f.field == "commit_lens" and "correct_len + 1" in f.rule


def test_malformed_claims_are_errors(running):
    with pytest.raises(SpecvizError, match="not an output of greedy"):
        audit(running, {"correct_len": 2})
    with pytest.raises(SpecvizError, match="bs\\*n = 5"):
        audit(running, {"predicts": [0, 1]})
    with pytest.raises(SpecvizError, match="not in the vocabulary"):
        audit(running, {"outputs": ["A", "Q"]})
    with pytest.raises(SpecvizError, match="whole numbers"):
        audit(running, {"accept_index": [0, 1.5, 3]})


@pytest.mark.parametrize("text, want", [
    ("[[0, 1, 3]]", [[0, 1, 3]]),
    ("[0,1,3,]", [0, 1, 3]),
    ("(0, 1, -1)", [0, 1, -1]),
    ("tensor([[0, 1, 3]], device='cuda:0', dtype=torch.int32)", [[0, 1, 3]]),
    ("tensor([[ 0,  1, -1],\n        [ 5,  6,  9]], dtype=torch.int32)", [[0, 1, -1], [5, 6, 9]]),
    ("array([0, 2, 0, 4, 0], dtype=int32)", [0, 2, 0, 4, 0]),
    ("tensor(3, device='cuda:0')", 3),
    ("7", 7),
    ("['A', \"C\", 'X']", ["A", "C", "X"]),
    ("[0.25, 1e-3]", [0.25, 0.001]),
])
def test_parse_array(text, want):
    assert parse_array(text) == want


@pytest.mark.parametrize("text, match", [
    ("", "empty"),
    ("[1, 2", "not closed"),
    ("[1, 2))", "do not match|unexpected"),
    ("__import__('os').system('true')", "unexpected text"),
    ("[1, {2}]", "cannot be read"),
    ("tensor([0, 1, ..., 9])", "truncated"),
    ("[1 2]", "expected"),
    ("tensor([1, 2]", "unclosed"),
])
def test_parse_array_malformed(text, match):
    with pytest.raises(SpecvizError, match=match):
        parse_array(text, "accept_index")


def test_parse_claimed_text_multiline():
    text = "accept_index = tensor([[0, 1, 3]],\n       device='cuda:0', dtype=torch.int32)\naccept_lens: [3]\n"
    assert parse_claimed_text(text) == {"accept_index": [[0, 1, 3]], "accept_lens": [3]}
    with pytest.raises(SpecvizError, match="field name"):
        parse_claimed_text("[0, 1, 3]")


def test_audit_file(tmp_path, running):
    path = tmp_path / "claim.json"
    path.write_text(json.dumps({"scenario": json.loads(running.to_json()),
                                "claimed": {"accept_index": "tensor([[0, 1, 3]], dtype=torch.int32)", "accept_lens": [2]}}))
    r = audit_file(path)
    assert isinstance(r, AuditReport) and not r.ok and r.first_error.field == "accept_lens"
    rel = tmp_path / "rel.json"
    (tmp_path / "s.json").write_text(running.to_json())
    rel.write_text(json.dumps({"scenario_file": "s.json", "claimed": {"accept_index": [[0, 1, 3]]}}))
    assert audit_file(rel).ok
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(SpecvizError, match="not valid JSON"):
        audit_file(bad)
    with pytest.raises(SpecvizError, match="cannot be read"):
        audit_file(tmp_path / "missing.json")
    bad.write_text(json.dumps({"claimed": {}}))
    with pytest.raises(SpecvizError, match="scenario"):
        audit_file(bad)


def test_rules_in_chinese(running):
    f = audit(running, {"accept_index": [1, 3, -1]}).first_error
    assert "root 的第 0 行必须排在最前" in f.rule_zh
    assert f.sentence("zh").startswith("accept_index[0][0]：得到 1，应为 0。accept_index")  # identifiers keep their case
    assert f.sentence().startswith("accept_index[0][0]: got 1, expected 0. accept_index")
    for claim in ({"accept_lens": 2}, {"predicts": [0, 2, 0, 0, 0]}, {"outputs": ["R", "A", "C"]}, {"committed_rows": [1, 3]}):
        g = audit(running, claim).first_error
        assert g.rule_zh and any("\u4e00" <= ch <= "\u9fff" for ch in g.rule_zh), claim


@pytest.mark.parametrize("seed", range(25))
def test_random_questions_audit_clean_and_catch_any_change(seed):
    """On random greedy trees: the reference's own outputs pass, and changing any one accept_index slot,
    output token or the length is caught at exactly that place."""
    from specviz.rooms.audit import quiz_scenario

    s = quiz_scenario(seed)
    exp = expected_outputs(s)
    assert audit(s, exp).ok
    ai = exp["accept_index"][0]
    for j in range(len(ai)):
        bad = list(ai)
        bad[j] = (bad[j] + 2) if bad[j] >= 0 else 1
        f = audit(s, {"accept_index": [bad]}).first_error
        assert f is not None and f.field == "accept_index" and f.rule and f.rule_zh
    outs = exp["outputs"][0]
    bad_out = outs[:-1] + [(outs[-1] + 1) % len(s.vocab)]
    f = audit(s, {"outputs": [bad_out]}).first_error
    assert f is not None and f.field == "outputs"
    f = audit(s, {"accept_lens": [exp["accept_lens"][0] + 1]}).first_error
    assert f is not None and f.expected == exp["accept_lens"][0]
