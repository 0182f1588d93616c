"""Tables the tree pages show (pandas DataFrames, Stylers and Arrow tables; no streamlit).

Every table is a pure function of the tree and the arrays, so the same rows appear in the app,
the tests and the benchmark.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from specviz.render.palette import state_color, text_on


def retrieve_columns(tree, labels, retrieve_index, retrieve_next_token, retrieve_next_sibling, positions, cols=None) -> dict:
    """One row per node: token, parent, depth, and SGLang's retrieve_* links and position, as
    {column name: list of values} (``retrieve_arrow`` frames it for the page).

    ``labels`` [n] node texts; the arrays are one request's ([n] each).
    """
    cols = cols or {}
    return {
        cols.get("node", "node"): list(range(tree.n)),
        cols.get("token", "token"): [str(x) for x in labels],
        cols.get("parent", "parent"): [int(x) for x in tree.parents],
        cols.get("depth", "depth"): [int(x) for x in tree.depths()],
        "retrieve_index": [int(x) for x in retrieve_index],
        "retrieve_next_token": [int(x) for x in retrieve_next_token],
        "retrieve_next_sibling": [int(x) for x in retrieve_next_sibling],
        "positions": [int(x) for x in positions],
    }


def retrieve_arrow(*args, **kwargs):
    """``retrieve_columns`` as a pyarrow Table: what a page hands to ``st.dataframe``, which then sends it
    as it is (a pandas frame is converted to Arrow on every draw: ~80% of that table's cost, issue 31)."""
    import pyarrow as pa

    return pa.table(retrieve_columns(*args, **kwargs))


def highlight_rows(df: pd.DataFrame, rows: dict):
    """A Styler colouring whole rows: ``rows`` = {row position: state} (palette states)."""
    def style(frame):
        # Filled as a plain object array, then wrapped once: row assignment into a string-typed frame
        # costs ~1 ms a row (pandas' Arrow strings), which every rerun paid.
        cells = np.full(frame.shape, "", dtype=object)
        for pos, st in rows.items():
            if 0 <= pos < len(frame):
                fill = state_color(st)
                cells[pos, :] = f"background-color: {fill}; color: {text_on(fill)}; font-weight: 600"
        return pd.DataFrame(cells, index=frame.index, columns=frame.columns)
    return df.style.apply(style, axis=None)  # one call for the whole frame: fast at 64+ rows


def shift_table(n: int, labels, rows, predicts, accept_nodes, positions, words: dict, label_of=str) -> pd.DataFrame:
    """``shift_records`` as a DataFrame."""
    return pd.DataFrame(shift_records(n, labels, rows, predicts, accept_nodes, positions, words, label_of))


def shift_records(n: int, labels, rows, predicts, accept_nodes, positions, words: dict, label_of=str) -> list[dict]:
    """The one-position shift, one line (a dict: column -> value) per verify row of a request.

    labels [n] input tokens; rows [n] global rows; predicts [bs*n] (global); accept_nodes: nodes
    on the accepted path (root first); positions [n]. ``words`` names the columns and states.
    A row on the path emits predicts[row] and keeps its KV; every other row is discarded.
    """
    on_path = {node: k for k, node in enumerate(accept_nodes)}
    recs = []
    for i in range(n):
        r = int(rows[i])
        kept = i in on_path
        recs.append({
            words["row"]: r,
            words["input"]: labels[i],
            words["output"]: (label_of(int(predicts[r])) + (" ★" if kept and on_path[i] == len(accept_nodes) - 1 else "")) if kept else "—",
            words["kv"]: (f"✓ {words['pos']} {int(positions[i])}") if kept else f"✗ {words['discarded']}",
        })
    return recs


def path_states(n: int, accept_nodes) -> dict:
    """{row position: state} for ``highlight_rows``: the path accepted, the rest discarded."""
    return {i: ("accepted" if i in set(accept_nodes) else "discarded") for i in range(n)}


def flat_rows_table(commits, trees, labels_of, target_predict, predicts, words: dict, label_of=str) -> pd.DataFrame:
    """Every verify row of the batch, request-major (global row b*n+i), with its fate.

    commits: engine.RequestCommit per request; trees: DrawnTree per request; labels_of[b][i]
    node texts; target_predict[b][i] labels; predicts [bs*n] (global).
    """
    recs = []
    for b, (c, tree) in enumerate(zip(commits, trees)):
        n = tree.n
        depths = tree.depths()
        for i in range(n):
            r = b * n + i
            kept = i in c.accept_nodes
            recs.append({
                words["row"]: r, words["request"]: b, words["node"]: i, words["token"]: labels_of[b][i],
                "target_predict": target_predict[b][i],
                "predicts": label_of(int(predicts[r])) if kept else "—",
                words["kv"]: f"✓ {words['pos']} {c.seq_len + depths[i]}" if kept else f"✗ {words['discarded']}",
            })
    return pd.DataFrame(recs)


def kv_wrong_way(commit, labels, label_of, words: dict) -> pd.DataFrame:
    """The bug made visible: commit KV by *output* tokens instead of by accepted *rows*.

    The right way keeps the KV of rows[accept_index] (R A C). Keying by the outputs (A C X)
    drops the root's KV (computed this round at position seq_len) and asks for the bonus's KV,
    which does not exist: the bonus was never fed through the model.
    """
    by_token = {}
    for node, r in zip(commit.accept_nodes, commit.accept_rows):
        by_token.setdefault(labels[node], (node, r))
    recs = []
    for k, (tok_right, pos) in enumerate(zip(commit.committed_tokens, commit.committed_positions)):
        out_tok = label_of(commit.output_tokens[k])
        have = by_token.get(out_tok)
        right = f"{label_of(tok_right)} ({words['row']} {commit.accept_rows[k]})"
        if have is None:
            wrong = f"{out_tok}: {words['missing']}"
        else:
            wrong = f"{out_tok} ({words['row']} {have[1]})"
        problem = ""
        if k == 0:
            problem = words["root_dropped"].format(tok=label_of(tok_right), pos=pos)
        if have is None:
            problem = (problem + "; " if problem else "") + words["no_kv"].format(tok=out_tok)
        elif have[1] != commit.accept_rows[k]:
            problem = (problem + "; " if problem else "") + words["shifted"].format(tok=out_tok, pos=pos)
        recs.append({words["position"]: pos, words["right"]: right, words["wrong"]: wrong, words["problem"]: problem or "—"})
    return pd.DataFrame(recs)
