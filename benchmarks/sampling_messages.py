"""Messages and bytes the server sends per edit on the sampling pages (issue 31): a deterministic count, not a
timing, so it compares two trees on a loaded machine. Each edit kind is made 3 times over Streamlit's websocket
protocol (as a browser tab does: the widget's fragment rerun), on a server of the given tree.

    /work/main/.venv/bin/python benchmarks/sampling_messages.py [--app-dir DIR]

Prints, per edit kind, the ForwardMsgs of each edit's answer (every delta: element or block) and their bytes, the
errors drawn (st.error, exceptions: 0 expected) and how many answers carried a new share link (the scenario changed:
every edit but opening / closing a box). The chain's p/q text edit opens "Edit p and q as text" first (where the box
is a widget: its text is drawn only while open), types + applies in one rerun, and closes it, on a tab of its own.
"""
import argparse
import asyncio
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import websockets  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from benchmarks.bench_real_class import add_widget_states  # noqa: E402
from tests.conftest import _free_port, _stop, _wait_health  # noqa: E402


async def rerun(ws, page: str, query: str = "", fragment: str = "", states: dict | None = None):
    """One rerun request as a browser sends it; returns (messages, bytes, widgets seen, the page's query, errors
    drawn: st.error or an exception)."""
    bm = BackMsg()
    cs = bm.rerun_script
    cs.page_name, cs.query_string, cs.fragment_id = page, query, fragment
    add_widget_states(cs, states or {})
    await ws.send(bm.SerializeToString())
    n = nbytes = errors = 0
    widgets, q = {}, query
    while True:
        raw = await asyncio.wait_for(ws.recv(), 60)
        fm = ForwardMsg()
        fm.ParseFromString(raw)
        kind = fm.WhichOneof("type")
        n += 1
        nbytes += len(raw)
        if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
            el = fm.delta.new_element
            inner = getattr(el, el.WhichOneof("type"))
            errors += el.WhichOneof("type") == "exception" or (el.WhichOneof("type") == "alert" and el.alert.format == el.alert.ERROR)
            if getattr(inner, "id", "") and hasattr(inner, "label"):
                widgets[(el.WhichOneof("type"), inner.label)] = (inner.id, fm.delta.fragment_id)
        elif kind == "delta" and fm.delta.WhichOneof("type") == "add_block":
            blk = fm.delta.add_block
            if blk.WhichOneof("type") == "expandable" and blk.expandable.id:  # a keyed box is a widget: open / close
                widgets[("expander", blk.expandable.label)] = (blk.expandable.id, fm.delta.fragment_id)
        elif kind == "page_info_changed":
            q = fm.page_info_changed.query_string
        elif kind == "script_finished" and fm.script_finished != fm.FINISHED_EARLY_FOR_RERUN:
            return n, nbytes, widgets, q, errors


async def page_edits(url: str, page: str, edits: list, rounds: int = 3) -> dict:
    """Every edit of ``edits`` ``rounds`` times on one tab of ``page``: kind -> [(messages, bytes, errors drawn,
    whether the share link (the scenario) changed)]."""
    out = {}
    async with websockets.connect(url.replace("http://", "ws://") + "/_stcore/stream", max_size=None,
                                  subprotocols=["streamlit"]) as ws:
        _, _, widgets, q, _ = await rerun(ws, page)
        states = {}  # what this tab has set, sent with every rerun
        for r in range(rounds):
            for name, kind, label, field, value, *typed in edits:
                if (kind, label) not in widgets and kind == "expander":
                    continue  # a tree whose box is no widget (its content always drawn): nothing to open or close
                wid, frag = widgets[(kind, label)]
                v = value(r) if callable(value) else value
                sent = dict(states)
                sent[wid] = (field, v)
                for t_kind, t_label, t_field, t_value in (typed[0] if typed else ()):  # typed with it, sent in the same rerun
                    sent[widgets[(t_kind, t_label)][0]] = (t_field, t_value(r) if callable(t_value) else t_value)
                if field != "trigger_value":
                    states[wid] = (field, v)
                before = q
                n, b, seen, q, errors = await rerun(ws, page, q, frag, sent)
                widgets.update(seen)
                out.setdefault(name, []).append((n, b, errors, q != before))
    return out


# (kind, widget type, label, value field, value for round r[, [(widget type, label, field, value) typed before it]])
PQ_BOX = "Edit p and q as text (paste rows: one row per line)"
EDITS = [  # (page, edits): each entry on a tab of its own
 ("chain_sampling", [("chain coin u_final", "slider", "u_final", "double_array_value", lambda r: [0.1 + 0.2 * r]),
                    ("chain + slot", "button", "+ slot", "trigger_value", True),
                    ("chain slot token", "selectbox", "slot 1", "string_value", lambda r: "ABC"[r % 3]),
                    ("chain − slot", "button", "− slot", "trigger_value", True)]),
 # a tab of its own (the box left open would redraw its text boxes in the edits above): open the box,
 # type a p table and press "Apply the text" (one rerun, as bench_real_class sends it), close the box
 ("chain_sampling", [("chain open p/q text box", "expander", PQ_BOX, "bool_value", True),
                     ("chain p/q text + Apply", "button", "Apply the text", "trigger_value", True,
                      [("text_area", "target_probs (p)", "string_value",
                        lambda r: f"{0.4 + 0.1 * r:.1f} {0.3 - 0.1 * r:.1f} 0.3 0\n0.2 0.5 0.3 0"),
                       # q as drawn (pq_example's): a browser sends every box's value; left out, the click reads it as empty
                       ("text_area", "draft_probs (q)", "string_value", "0.6 0.3 0.1 0")]),
                     ("chain close p/q text box", "expander", PQ_BOX, "bool_value", False)]),
 ("target_only", [("target-only threshold_acc", "slider", "threshold_acc", "double_array_value", lambda r: [0.6 + 0.1 * r]),
                 ("target-only u_final", "slider", "u_final", "double_array_value", lambda r: [0.1 + 0.2 * r])]),
 ("dspark", [("dspark select", "selectbox", "target after t=1", "string_value", lambda r: "ABX"[r % 3])]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app-dir", type=Path, default=ROOT)
    args = ap.parse_args()
    app = args.app_dir.resolve()
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=str(app), TRITON_INTERPRET="1")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
                             "--server.fileWatcherType", "none"], cwd=app, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        _wait_health(url, proc)
        res = {}
        for page, edits in EDITS:
            res.update(asyncio.run(page_edits(url, page, edits)))
    finally:
        _stop(proc)
    print(f"app: {app}")
    for k, v in res.items():
        print(f"{k:28s} messages {[n for n, *_ in v]}  bytes {[b for _, b, *_ in v]}  errors {sum(e for *_, e, _ in v)}  "
              f"scenario changed {sum(c for *_, c in v)}/{len(v)}")


if __name__ == "__main__":
    main()
