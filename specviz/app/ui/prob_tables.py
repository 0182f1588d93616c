"""Editable probability tables (the chain page's p and q, target-only's p) as one Streamlit Custom Components v2
element (``static/prob_tables.js``), instead of a heading and an ``st.data_editor`` per table.

Why: each data editor cost ~2-5 ms of server CPU a draw (a pandas frame, its Arrow bytes, column config, a
signature hash) and the pair with their headings and columns were 7 of the ~80 messages of every chain edit
that redraws the inputs (issue 31, benchmarks/README.md "chain5"). Here the numbers go in as JSON and one
event comes out.

What goes back and forth:
- in (``data``): ``{ver, digits, tables: [{name, head, columns, rows, values, typed}]}``: ``head`` the table's
  heading as (kind, text) parts (``b`` bold, ``c`` code, ``t`` text: ``heading_parts``), ``rows`` the row
  labels, ``values`` one list of numbers (None: empty) a row, ``typed`` the [row, col] cells that hold text
  the page refused (kept on screen to be fixed); ``ver`` names the numbers the tables were drawn from.
- out (state ``edit``): ``{ver, table, row, col, text, n}`` when the viewer commits a cell (Enter, an arrow
  key, Tab or leaving the cell; ``n`` counts this tab's edits, so the same text typed again is a change);
  the page applies it with ``apply_edit`` in the callback, before its run. A state value, not a trigger: the
  callback reads it from ``st.session_state[key]``, which presents trigger values only beside a state.

The module runs in the app's page (no iframe): trusted code; ``data`` is untrusted (labels are set with
textContent). Keyboard: click or Tab into a cell, type, Enter (down), Shift+Enter (up), arrows up/down,
Escape (undo the typing).

    prob_tables.show([table("p", "**p** `[N, V]`", vocab, labels, rows)], key="w_chain_pq", ver=3, on_edit=cb)
"""
from __future__ import annotations

import math
import re

from specviz.app.ui.static_component import static_component
from specviz.base.errors import SpecvizError

NAME = "specviz.prob_tables"


def component():
    """The component: ``static/prob_tables.js`` loaded from the app's own server (fetched once a tab; a rerun
    carries only the numbers)."""
    return static_component(NAME, "prob_tables.js")


def heading_parts(text: str) -> list[list[str]]:
    """A heading written in the markdown subset the pages use (``**bold**``, ```code```, plain text) as
    (kind, text) parts, drawn by the component with textContent:

    >>> heading_parts("**p = target_probs** `[bs, N, V]` (after each row)")
    [['b', 'p = target_probs'], ['t', ' '], ['c', '[bs, N, V]'], ['t', ' (after each row)']]
    """
    out = []
    for piece in re.split(r"(\*\*[^*]+\*\*|`[^`]+`)", text):
        if not piece:
            continue
        if piece.startswith("**") and piece.endswith("**") and len(piece) > 4:
            out.append(["b", piece[2:-2]])
        elif piece.startswith("`") and piece.endswith("`") and len(piece) > 2:
            out.append(["c", piece[1:-1]])
        else:
            out.append(["t", piece])
    return out


def _number(x) -> float | None:
    x = float(x)
    return None if math.isnan(x) else x  # JSON has no NaN: an empty cell


def table(name: str, head: str, columns: list, row_labels: list, values, typed=()) -> dict:
    """One table's data: ``values`` [rows][len(columns)] numbers (NaN: an empty cell); ``typed`` the refused cells
    as (row, col) or (row, col, text): a cell whose text is no number shows that text, to be fixed."""
    return {"name": name, "head": heading_parts(head), "columns": [str(c) for c in columns],
            "rows": [str(r) for r in row_labels], "values": [[_number(v) for v in row] for row in values],
            "typed": [[int(rc[0]), int(rc[1]), str(rc[2]) if len(rc) > 2 else ""] for rc in typed]}


def _read(text: str) -> float:
    """A cell's text as a number (a decimal comma read as a point); NaN for an empty cell; ValueError else."""
    return float(text.replace(",", ".")) if text.strip() else float("nan")


def not_a_number(cells, fields: dict):
    """The SpecvizError for the first refused cell whose text is no number (``cells``: (table, row, col, text);
    ``fields``: table name -> the scenario field it edits), else None. Said before the scenario's own check,
    which would only see NaN ("contains NaN or inf") where the viewer typed, e.g., "abc" or "0.3.1"."""
    latest = {tuple(cell[:3]): cell[3] for cell in cells if len(cell) >= 4}  # a cell typed again: its last text
    for (t, r, c), text in latest.items():
        if t not in fields:
            continue
        try:
            _read(text)
        except ValueError:
            # the viewer's text, quoted inert: st.error reads markdown, so its punctuation is escaped (``<``, ``>``,
            # ``&`` are left to the error box's own escaping) and "*x*" shows as typed, not as emphasis
            quoted = re.sub(r"([\\`*_{}\[\]()#+\-.!|~\"'$:])", r"\\\1", text)
            return SpecvizError(f"{fields[t]}[{r}][{c}]", f"'{quoted}' is not a number (type a probability such as 0.25)")
    return None


def show(tables: list[dict], key: str, ver: int, on_edit, digits: int = 3) -> None:
    """Draw the tables as one element keyed ``key``; ``on_edit`` (no arguments) runs when a cell is committed,
    before the run (read the event with ``edit_event(key)``)."""
    component()(key=key, data={"ver": int(ver), "digits": int(digits), "tables": tables}, on_edit_change=on_edit)


def edit_event(key: str) -> dict | None:
    """The cell edit that triggered this run (``{ver, table, row, col, text}``), None when there is none or it
    is malformed (the event comes from the browser: never trusted)."""
    import streamlit as st

    ev = (st.session_state.get(key) or {}).get("edit")
    if not isinstance(ev, dict):
        return None
    try:
        out = {"ver": int(ev["ver"]), "table": str(ev["table"]), "row": int(ev["row"]), "col": int(ev["col"]),
               "text": str(ev["text"])[:64]}
    except (KeyError, TypeError, ValueError):
        return None
    return out


def apply_edit(tables: dict, ev: dict) -> tuple[dict, tuple]:
    """``tables`` (name -> rows of numbers) with the cell of ``ev`` set to its text read as a number (text that
    is no number, or an empty cell, reads NaN: the scenario's check then refuses it, naming the field);
    returns (the new tables, the (table, row, col, text) edited, or None when the cell is not in ``tables``).

    >>> apply_edit({"p": [[0.5, 0.5]]}, {"table": "p", "row": 0, "col": 1, "text": "0.25"})
    ({'p': [[0.5, 0.25]]}, ('p', 0, 1, '0.25'))
    """
    out = {name: [list(map(float, r)) for r in rows] for name, rows in tables.items()}
    rows = out.get(ev["table"])
    r, c = ev["row"], ev["col"]
    if rows is None or not (0 <= r < len(rows)) or not (0 <= c < len(rows[r])):
        return out, None
    try:
        value = _read(ev["text"])
    except ValueError:
        value = float("nan")
    rows[r][c] = value
    return out, (ev["table"], r, c, ev["text"])


class Pending:
    """A page's refused cells, held in session state until fixed: the tables as typed (``<prefix>_<name>`` per
    table), the typed cells (``<prefix>_cells``: (table, row, col, text)) and the version of the numbers they were
    typed over (``<prefix>_ver``). Held cells of other numbers (another scenario) are dropped with them."""

    def __init__(self, prefix: str, names: tuple):
        self.keys = {name: f"{prefix}_{name}" for name in names}
        self.cells_key, self.ver_key = f"{prefix}_cells", f"{prefix}_ver"

    def tables(self, ver: int) -> dict | None:
        """The held tables (name -> rows as typed) when they were typed over ``ver``, else None."""
        import streamlit as st

        if st.session_state.get(self.ver_key) != ver:
            return None
        return {name: st.session_state[key] for name, key in self.keys.items()}

    def cells(self) -> list:
        import streamlit as st

        return st.session_state.get(self.cells_key, []) if self.ver_key in st.session_state else []

    def hold(self, ver: int, tables: dict, cell: tuple) -> None:
        import streamlit as st

        earlier = self.cells() if st.session_state.get(self.ver_key) == ver else []
        st.session_state.update({**{self.keys[name]: rows for name, rows in tables.items()},
                                 self.ver_key: ver, self.cells_key: [*earlier, list(cell)]})

    def clear(self) -> None:
        import streamlit as st

        for key in (*self.keys.values(), self.cells_key, self.ver_key):
            st.session_state.pop(key, None)

    def pop(self) -> dict | None:
        """The held tables (name -> rows, or None) and nothing held any more (what "Normalise rows" starts from);
        None, and everything still held, when a held cell's text is no number: there is nothing to divide, and
        reading it as 0 would lose the viewer's typing (the run names that cell)."""
        import streamlit as st

        if not_a_number(self.cells(), {name: name for name in self.keys}) is not None:
            return None
        out = {name: st.session_state.get(key) for name, key in self.keys.items()}
        self.clear()
        return out

    def on_edit(self, key: str, ver: int, tables: dict, store) -> None:
        """The tables' on_edit callback body: apply the committed cell to the held tables (or ``tables``, the
        scenario's, drawn as version ``ver``) and ``store`` them (a callable that raises on a refusal); a refused
        one is held, to be drawn as typed and named by the page's check."""
        ev = edit_event(key)
        if ev is None or ev["ver"] != ver:
            return  # the tables were drawn from other numbers: the run redraws them
        new, cell = apply_edit(self.tables(ver) or tables, ev)
        if cell is None:
            return
        try:
            store(new)
        except (SpecvizError, TypeError, ValueError):  # left to the run: its check shows the error, the cells kept
            self.hold(ver, new, cell)
            return
        self.clear()
