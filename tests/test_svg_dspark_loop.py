"""The DSpark grids (match, out tokens, KV columns) and the decoding loop's timeline, drawn as SVG on
the server: every cell's text, colour and hover, the marks, and that the page's inline check accepts them."""
from __future__ import annotations

import html
from types import SimpleNamespace as NS
from xml.sax.saxutils import escape

import pytest

from specviz.rooms.loop import view
from specviz.render import dspark_charts as dc
from specviz.render.palette import WHITE, state_color
from specviz.app.ui.markup import inline_svg
from tests.svg_read import cells, elements, grid_rows, texts

ACC, REJ, BON, DIS, PEN, CMP = (state_color(s) for s in ("accepted", "rejected", "bonus", "discarded", "pending", "compared"))


def _inline_ok(svg: str) -> str:
    from tests.test_hostile_inputs import _check_inline_figure

    body = '<div class="sv-graph">' + inline_svg(svg, stretch=False, max_height="70vh") + "</div>"
    _check_inline_figure(body)
    return body


def test_match_svg_marks_the_run_the_bonus_and_an_ignored_match():
    # drafts A X C against target A B C: A matches, X != B stops the run, C == C comes later -> ignored.
    svg = dc.match_svg(["R", "A", "X", "C"], ["A", "B", "C", "Y"], [True, False, True], 1)
    rows = grid_rows(svg)
    assert [[c["text"] for c in r] for r in rows] == [["R", "A", "X", "C"], ["A", "B", "C", "Y"], ["A", "X", "C"], ["✔", "✘", "(✔)"]]
    assert [c["fill"] for c in rows[0]] == [ACC, ACC, DIS, DIS]  # rows 0..correct_len kept
    assert [c["fill"] for c in rows[1]] == [WHITE, BON, WHITE, WHITE]  # the bonus: target after row correct_len
    assert [c["fill"] for c in rows[3]] == [ACC, REJ, DIS] and rows[3][2]["dashed"]  # the later match greyed, dotted
    assert rows[3][2]["hover"] == "C == C ? True: ignored: after a mismatch"
    assert rows[0][0]["hover"] == "row 0 (anchor): R" and rows[1][1]["hover"] == "target_predict[1] = B (bonus)"
    assert "commit_lens = 2" in texts(svg)
    mark = next(e for e in elements(svg) if e["tag"] == "line" and e.get("stroke-dasharray") == "8,6")
    assert float(mark["x1"]) == pytest.approx(rows[0][2]["x"] - 3)  # the line sits between columns 1 and 2
    _inline_ok(svg)


def test_match_svg_animation_reveals_compares_and_hides_the_result():
    svg = dc.match_svg(["R", "A", "B", "C"], ["A", "B", "X", "Y"], [True, True, False], 2, compared=2, show_result=False)
    rows = grid_rows(svg)
    assert [c["fill"] for c in rows[0]] == [ACC, ACC, ACC, PEN]
    assert [c["text"] for c in rows[3]] == ["✔", "✔", "?"] and rows[3][2]["fill"] == PEN
    assert CMP in [c["fill"] for c in cells(svg)]  # the compare just revealed
    assert not any("commit_lens" in t for t in texts(svg)) and BON not in [c["fill"] for c in cells(svg)]


def test_match_svg_window_cap_shares_one_label_and_greys_the_rows_beyond():
    svg = dc.match_svg(["R", "A", "B", "C"], ["A", "B", "X", "Y"], [True, True, False], 1, raw_correct_len=2, verify_len=2,
                       text={"capped": "beyond verify_len"})
    assert "commit_lens = 2, verify_len = 2" in texts(svg)
    rows = grid_rows(svg)
    assert [c["fill"] for c in rows[1]] == [WHITE, BON, DIS, DIS]  # target rows >= verify_len greyed
    assert rows[0][3]["hover"] == "row 3 (draft 3): C (beyond verify_len)"


def test_match_svg_marks_apart_do_not_overlap_and_chinese_names_fit():
    zh = {"row": "Verify 输入行", "target": "Target 在其后的预测", "draft": "下一个 Draft", "match": "匹配？", "commit": "commit_lens"}
    svg = dc.match_svg(["R", "A", "B", "C", "D"], ["X", "B", "C", "D", "E"], [False, True, True, True], 0, raw_correct_len=0,
                       verify_len=2, text=zh)
    labels = [e for e in elements(svg) if e["tag"] == "text" and e["text"] in ("commit_lens = 1", "verify_len = 2")]
    assert len(labels) == 2 and labels[0]["y"] != labels[1]["y"]  # one column apart: the second label goes a line up
    names = [e for e in elements(svg) if e["tag"] == "text" and e["text"] in zh.values()]
    assert len(names) == 4
    x_end = float(names[0]["x"])  # right-aligned names: the longest one (13 characters, 6 of them CJK) starts inside
    assert x_end - 20 * (7 * 0.6 + 6) >= 0


def test_out_tokens_svg_output_then_stale():
    svg = dc.out_tokens_svg(["A", "B", "C"], ["A", "B", "X", "0"], 2, text={"before": "Draft，末位 0", "stale": "旧值"})
    rows = grid_rows(svg)
    assert [c["text"] for c in rows[0]] == ["A", "B", "C", "0"] and {c["fill"] for c in rows[0]} == {WHITE}
    assert [c["text"] for c in rows[1]] == ["A", "B", "X", "0"]
    assert [c["fill"] for c in rows[1]] == [ACC, ACC, BON, DIS]
    assert rows[1][2]["hover"] == "out[2] = X: bonus scattered at correct_len = 2"
    assert rows[1][3]["hover"] == "out[3] = 0: 旧值 (column >= commit_lens = 3)"
    assert "commit_lens = 3" in texts(svg) and "Draft，末位 0" in texts(svg) and "out[3]" in texts(svg)
    _inline_ok(svg)


def test_kv_columns_svg_kept_positions_and_minus_one():
    svg = dc.kv_columns_svg(["R", "A", "B", "C"], [10, 11, 12, -1], text={"loc": "KV 位置"})
    rows = grid_rows(svg)
    assert [c["text"] for c in rows[1]] == ["10", "11", "12", "-1"]
    assert [c["fill"] for c in rows[1]] == [ACC, ACC, ACC, DIS] and rows[1][3]["text_fill"] == "#777777"
    assert rows[1][2]["hover"] == "column 2: kept at position 12" and rows[1][3]["hover"] == "column 3: location -1: not committed"
    assert "KV 位置" in texts(svg) and "c=3" in texts(svg)
    _inline_ok(svg)


def test_hostile_labels_are_text_in_every_grid():
    from tests.test_hostile_inputs import LABELS

    labs = LABELS[:8]
    T = len(labs)
    for svg in (dc.match_svg(labs, labs[1:] + labs[:1], [True] * (T - 1), 2, verify_len=5),
                dc.out_tokens_svg(labs[1:], labs, 3),
                dc.kv_columns_svg(labs, list(range(T)))):
        body = _inline_ok(svg)
        for lab in labs:
            assert escape(lab) in svg  # escaped as XML text
            assert lab.replace("\n", " ") in html.unescape(body)  # and shown as itself
        assert "<img" not in body and "<iframe" not in body and "<script" not in body
        widths = {float(e["width"]) for e in elements(svg) if e["tag"] == "rect" and e["hover"]}
        assert min(widths) >= 0.6 * 22 * max(len(x) for x in labs)  # the cells widen to hold the longest label


def _run(accept_lens, depth=4):
    return NS(rounds=[NS(index=i, accept_len=a) for i, a in enumerate(accept_lens)], settings=NS(depth=depth))


WORDS = {"accepted": "accepted drafts", "bonus": "bonus", "round": "round", "tokens": "tokens per Target pass"}


def test_timeline_svg_stacks_drafts_and_bonus_with_tau_and_the_selected_round():
    run = _run([1, 3, 5, 2])  # accepted drafts 0 2 4 1; tau = 11 / 4
    svg = view.timeline_svg(run, 2, WORDS)
    hov = [e["hover"] for e in elements(svg) if e["tag"] == "rect" and e["hover"]]
    for i, a in enumerate([0, 2, 4, 1]):
        assert f"round {i}: {a} accepted drafts" in hov and f"round {i}: 1 bonus" in hov
    bars = {e["hover"]: e for e in elements(svg) if e["tag"] == "rect"}
    assert bars["round 2: 4 accepted drafts"]["fill"] == ACC and bars["round 2: 1 bonus"]["fill"] == BON
    assert float(bars["round 2: 4 accepted drafts"]["height"]) == pytest.approx(4 * float(bars["round 2: 1 bonus"]["height"]), abs=0.5)
    assert "τ = 2.75" in texts(svg)
    band = bars["round 2"]  # the selected round's tinted band, around its bar
    assert float(band["x"]) <= float(bars["round 2: 1 bonus"]["x"]) <= float(band["x"]) + float(band["width"])
    assert "round" in texts(svg) and "tokens per Target pass" in texts(svg)
    _inline_ok(svg)


@pytest.mark.parametrize("words", [WORDS, {"accepted": "被接受的草稿", "bonus": "bonus", "round": "轮", "tokens": "每次 Target 前向的 token 数"}])
def test_timeline_svg_keeps_64_rounds_readable(words):
    run = _run([1 + (i * 7) % 5 for i in range(64)])
    svg = view.timeline_svg(run, 41, words)
    bars = [e for e in elements(svg) if e["tag"] == "rect" and f": 1 {words['bonus']}" in e["hover"]]
    assert len(bars) == 64
    numbers = [e for e in elements(svg) if e["tag"] == "text" and e["text"].isdigit() and e.get("font-weight") == "bold"]
    shown = [int(e["text"]) for e in numbers]
    assert 0 in shown and 41 in shown and len(shown) < 32  # sparse, the selected round always named
    xs = sorted(float(e["x"]) for e in numbers)
    assert min(b - a for a, b in zip(xs, xs[1:])) >= 0.6 * 14 * 2  # no two round numbers overlap
    assert words["round"] in texts(svg) and any(t.startswith("τ = ") for t in texts(svg))
    _inline_ok(svg)
