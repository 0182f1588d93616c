"""Pictures of a decoding-loop run (pure functions: figures, DOT, tables and safe markdown; no streamlit).

``words`` arguments carry the page's translated labels, so the same function serves both languages.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from specviz.render import svgchart
from specviz.render.palette import PALETTE
from specviz.render.tree import tree_dot

# CommonMark lets a backslash escape any ASCII punctuation character; the prompt is checked to be
# printable ASCII (the tokenizer's vocabulary), so escaping every punctuation character leaves
# nothing that markdown could read as markup.
_PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def md_escape(text: str) -> str:
    out = []
    for c in text:
        if c in _PUNCT:
            out.append("\\" + c)
        elif c == "\n":
            out.append("⏎")
        elif c == " ":
            out.append("\u00a0")      # keep runs of spaces visible
        elif c.isprintable():
            out.append(c)
        else:
            out.append("\ufffd")
    return "".join(out)


def text_spans(run, selected: int | None = None) -> list[dict]:
    """The text as spans: the prompt, then per round its accepted drafts and its bonus."""
    vocab = run.vocab
    spans = [{"text": run.prompt, "kind": "prompt", "round": None}]
    for r in run.rounds:
        drafts, bonus = r.emitted[:-1], r.emitted[-1:]
        if drafts:
            spans.append({"text": "".join(vocab[t] for t in drafts), "kind": "accepted", "round": r.index})
        spans.append({"text": "".join(vocab[t] for t in bonus), "kind": "bonus", "round": r.index})
    for s in spans:
        s["selected"] = selected is not None and s["round"] == selected
    return spans


def text_markdown(spans: list[dict]) -> str:
    """Markdown with Streamlit colour directives: accepted drafts green, bonus orange, the selected round bold."""
    parts = []
    for s in spans:
        body = md_escape(s["text"])
        if not body:
            continue
        if s["kind"] == "accepted":
            body = f":green-background[{body}]"
        elif s["kind"] == "bonus":
            body = f":orange-background[{body}]"
        else:
            body = f":gray[{body}]"
        if s["selected"]:
            body = f"**{body}**"
        parts.append(body)
    return "".join(parts)


def timeline_svg(run, selected: int | None, words: dict) -> str:
    """Accept length per round, as SVG drawn on the server: per round a stacked bar (accepted drafts green,
    the bonus orange, a hover each), the mean tau as a dashed line with its label, the selected round
    on a tinted band, axis titles from ``words``. Thin bars and sparse round numbers keep 64 rounds readable."""
    xs = [r.index for r in run.rounds]
    acc = [r.accept_len - 1 for r in run.rounds]
    cats = [str(x) for x in xs]
    series = [svgchart.Bars(words["accepted"], acc, PALETTE["accepted"],
                            labels=[str(a) if a > 0 and len(xs) <= 24 else "" for a in acc],
                            hovers=[f"{words['round']} {x}: {a} {words['accepted']}" for x, a in zip(xs, acc)]),
              svgchart.Bars(words["bonus"], [1] * len(xs), PALETTE["bonus"],
                            hovers=[f"{words['round']} {x}: 1 {words['bonus']}" for x in xs])]
    hlines = []
    if xs:
        tau = float(np.mean([a + 1 for a in acc]))
        hlines.append((tau, f"τ = {tau:.2f}"))
    sel = selected if selected is not None and 0 <= selected < len(xs) else None
    return svgchart.bar_chart(cats, series, stack=True, y_max=run.settings.depth + 1.5, height=330, hlines=hlines,
                              highlight=sel, highlight_hover=f"{words['round']} {sel}" if sel is not None else "",
                              x_title=words["round"], y_title=words["tokens"], y_step=1, sparse_labels=True,
                              alt=f"{words['tokens']} / {words['round']}")


def walk_states(rnd) -> dict:
    """Node -> accepted / rejected (visited by the sibling scan and refused) / discarded (never visited).

    The scan visits an accepted node's children in sibling order (increasing node index) up to the
    one it accepts; below the last accepted node it visits every child unless the depth limit
    W - 1 was reached.
    """
    t, nodes = rnd.tree, rnd.accept_nodes
    W = len(rnd.accept_index)
    states = {i: "discarded" for i in range(len(t.parents))}
    for j, a in enumerate(nodes):
        states[a] = "accepted"
        kids = [i for i, p in enumerate(t.parents) if p == a]
        if j + 1 < len(nodes):
            for c in kids:
                if c < nodes[j + 1]:
                    states[c] = "rejected"
        elif len(nodes) - 1 < W - 1:
            for c in kids:
                states[c] = "rejected"
    return states


def round_tree_dot(rnd, show, words: dict) -> str:
    """The round's draft tree: accepted path green, visited-and-rejected siblings red, the bonus hanging off the last node."""
    t = rnd.tree
    n = len(t.parents)
    states = walk_states(rnd)
    tips = {i: f"{words['node']} {i}: {show(t.candidates[i])!r}, {words['score']} {t.scores[i]:.3g}, "
               f"{words['position']} {rnd.positions[i]}" for i in range(n)}
    return tree_dot(t.parents, [show(c) for c in t.candidates], states=states, tooltips=tips,
                    bonus=(rnd.accept_nodes[-1], show(rnd.bonus)), bonus_label=words["bonus"], row_word=words["row"])


def kv_table(rnd, show, words: dict) -> pd.DataFrame:
    """The Target's KV rows of this round: the last prefix rows, then the n tree rows; kept or dropped by the commit."""
    n = len(rnd.tree.parents)
    prefix = rnd.kv_before[: len(rnd.kv_before) - n]
    kept = list(rnd.kv_kept)
    rows = []
    for tok, pos in prefix:
        rows.append({words["row"]: "·", words["token"]: show(tok), words["position"]: pos, words["status"]: words["prefix"],
                     words["slot_after"]: ""})
    for i, (tok, pos) in enumerate(rnd.kv_before[len(prefix):]):
        is_kept = i in kept
        rows.append({words["row"]: str(i), words["token"]: show(tok), words["position"]: pos,
                     words["status"]: words["kept"] if is_kept else words["dropped"],
                     words["slot_after"]: str(rnd.seq_len + kept.index(i)) if is_kept else "—"})
    return pd.DataFrame(rows)


def proof_rows(results: dict, words: dict) -> pd.DataFrame:
    """One row per proof: name, pass/fail, the figure behind it."""
    return pd.DataFrame([{words["proof"]: k, words["result"]: v[0], words["detail"]: v[1]} for k, v in results.items()])
