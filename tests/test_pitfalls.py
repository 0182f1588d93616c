"""Every pitfall shows different results for the buggy and the correct side, on the same inputs."""
import pytest

from specviz.rooms.audit import audit, expected_outputs
from specviz.base.errors import SpecvizError
from specviz.rooms.pitfalls import BY_KEY, PITFALLS, get_pitfall

REQUIRED = {"no_root_row", "pad_gather", "dspark_non_leading", "kv_by_outputs", "buffer_as_q", "q_zero",
            "coin_on_boundary", "thresholds_below_1", "top_p_one_side", "local_node_ids"}


def test_gallery_covers_the_issue_list():
    assert REQUIRED <= set(BY_KEY)


@pytest.mark.parametrize("pitfall", PITFALLS, ids=lambda p: p.key)
def test_buggy_and_correct_differ(pitfall):
    rows = pitfall.compare()
    assert rows and any(r.differs for r in rows), [(r.field, r.buggy, r.correct) for r in rows]


@pytest.mark.parametrize("pitfall", PITFALLS, ids=lambda p: p.key)
def test_correct_side_is_the_reference(pitfall):
    s = pitfall.scenario()
    exp = expected_outputs(s)
    assert pitfall.correct_outputs(s) == {f: exp[f] for f in pitfall.fields}


@pytest.mark.parametrize("pitfall", PITFALLS, ids=lambda p: p.key)
def test_text_in_both_languages(pitfall):
    for d in (pitfall.title, pitfall.symptom, pitfall.fix):
        assert d["en"].strip() and d["zh"].strip()
        assert any("\u4e00" <= ch <= "\u9fff" for ch in d["zh"])


def test_no_root_row_hand_worked():
    """Running example: the buggy accept_index is [1, 3, -1] (outputs C, X); the correct one [0, 1, 3] (A, C, X)."""
    rows = {r.field: r for r in get_pitfall("no_root_row").compare()}
    assert rows["accept_index"].buggy == "[1, 3, -1]" and rows["accept_index"].correct == "[0, 1, 3]"
    assert rows["outputs"].buggy == "[C, X]" and rows["outputs"].correct == "[A, C, X]"


def test_pad_gather_reads_the_other_request():
    rows = {r.field: r for r in get_pitfall("pad_gather").compare()}
    assert rows["bonus"].buggy == "[Y, Y]" and rows["bonus"].correct == "[X, Y]"


def test_dspark_leading_run():
    rows = {r.field: r for r in get_pitfall("dspark_non_leading").compare()}
    assert (rows["correct_len"].buggy, rows["correct_len"].correct) == ("2", "1")


def test_unknown_pitfall_is_a_clear_error():
    with pytest.raises(SpecvizError, match="not in the gallery"):
        get_pitfall("nope")


@pytest.mark.parametrize("pitfall", PITFALLS, ids=lambda p: p.key)
def test_audit_catches_the_planted_bug(pitfall):
    s = pitfall.scenario()
    report = audit(s, pitfall.buggy_outputs(s))
    assert not report.ok and report.first_error is not None
    assert report.first_error.rule


@pytest.mark.parametrize("pitfall", PITFALLS, ids=lambda p: p.key)
def test_buggy_outputs_as_pasted_text_are_caught(pitfall):
    """What the "Audit the buggy outputs" button pastes (labels as text) parses and is caught the same way."""
    from specviz.rooms.audit import parse_claimed_text
    from specviz.rooms.pitfalls import display

    s = pitfall.scenario()
    bug = pitfall.buggy_outputs(s)
    text = "\n".join(f"{f} = {display(s, f, v)}" for f, v in bug.items())
    direct, pasted = audit(s, bug).first_error, audit(s, parse_claimed_text(text)).first_error
    assert pasted is not None and (pasted.field, pasted.index) == (direct.field, direct.index)
