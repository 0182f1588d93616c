"""The raw tensors expander: every input and result array with SGLang's symbolic shape.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from specviz.app.ui.i18n import term

# -------------------------------------------------------------------------------------------
# Raw tensors
# -------------------------------------------------------------------------------------------

def to_numpy(x):
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def tensor_text(name: str, arr, shape_doc: str = "") -> str:
    """``name  # [bs, n] = [1, 5] int64`` followed by the values (a described full_mask: its rows
    as ``[1 × seq_len] tree cells``, never written out)."""
    if hasattr(arr, "describe") and hasattr(arr, "seq_lens"):  # reference.tree.FullMask
        head = f"{name}  # {shape_doc + ' = ' if shape_doc else ''}[{arr.size:,}] bool (prefix columns all True, described)"
        return f"{head}\n{arr.describe()}"
    a = to_numpy(arr)
    head = f"{name}  # {shape_doc + ' = ' if shape_doc else ''}{list(a.shape)} {a.dtype}"
    body = np.array2string(a, separator=", ", threshold=4096, max_line_width=110)
    return f"{head}\n{body}"


def raw_tensors(tensors: dict, title: str | None = None, expanded: bool = False) -> None:
    """An expander listing tensors named and shaped as in SGLang, its text built only while it is open
    (``state.lazy_expander``, key ``w_raw_open::<page>``): closed, it cost every edit ~7% of the
    script's time, and a first visit Streamlit's syntax highlighter.

    ``tensors``: name -> array, or name -> (array, "[bs, n]") to document the shape symbolically.
    """
    from specviz.app.ui.state import lazy_expander

    box, is_open = lazy_expander(title or term("raw_tensors"), f"w_raw_open::{st.session_state.get('sv_page', '')}",
                                 expanded=expanded)
    if not is_open:
        return
    with box:
        parts = []
        for name, v in tensors.items():
            arr, doc = (v if isinstance(v, tuple) else (v, ""))
            parts.append(tensor_text(name, arr, doc))
        st.code("\n\n".join(parts), language="python")


# SGLang's symbolic shapes of the engine's input / result arrays.
SGLANG_SHAPES = {
    "candidates": "[bs, n]", "retrieve_index": "[bs, n]", "retrieve_next_token": "[bs, n]",
    "retrieve_next_sibling": "[bs, n]", "target_predict": "[bs, n]", "seq_lens": "[bs]",
    "target_probs": "[bs, n, V]", "draft_probs": "[bs, n, V]", "uniform_samples": "[bs, n]",
    "uniform_samples_for_final_sampling": "[bs]", "predicts": "[bs*n]", "accept_index": "[bs, W]",
    "accept_token_num": "[bs]", "verify_lens": "[bs]", "positions": "[bs*n]",
}


def shaped(arrays: dict) -> dict:
    """``arrays`` with SGLang's symbolic shape attached where known (for ``raw_tensors``)."""
    return {k: (v, SGLANG_SHAPES.get(k, "")) for k, v in arrays.items()}
