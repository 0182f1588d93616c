"""The tree builder's retrieve_* table shows the selected node as its selected row (the grid's own selection),
not as a pandas Styler's colour: marshalling a Styler cost ~0.03 s of server CPU every rerun
(benchmarks/README, "Tree builder and greedy: server CPU per edit")."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _tables(at) -> list:
    """Every dataframe proto the run drew (walking the element tree)."""
    found = []

    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "selection_default") and hasattr(proto, "arrow_data"):
            found.append(proto)
        children = getattr(node, "children", None)
        for child in (children.values() if isinstance(children, dict) else []):
            walk(child)

    walk(at._tree)
    return found


def _retrieve_table(at):
    return next(p for p in _tables(at) if "w_rt::" in p.id)


def test_the_selected_node_is_the_tables_selected_row_and_no_styler():
    import json

    at = AppTest.from_file(str(ROOT / "pages/tree_builder.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    table = _retrieve_table(at)
    assert json.loads(table.selection_default)["selection"]["rows"] == [1]  # the running example selects node 1
    assert not table.arrow_data.styler.styles, "the table is still coloured by a pandas Styler"
    next(s for s in at.selectbox if s.label.startswith("Selected node")).select(3).run()
    assert not at.exception, at.exception
    assert json.loads(_retrieve_table(at).selection_default)["selection"]["rows"] == [3]
