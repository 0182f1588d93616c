"""Where a page's rerun spends its CPU (issue 20, goal 5): cProfile around the page script only.

AppTest drives the page; a profiler is switched on inside Streamlit's script thread around
``exec_func_with_error_handling`` (the page script and the widgets it draws), so AppTest's own
bookkeeping is not counted. Each edit toggles a Target prediction (greedy page) between two
values, so after the first two edits every rerun is a cached result (the common case in class);
on ``--page pages/tree_builder.py`` the edits are "Add child" / "Delete subtree" alternating.

    python benchmarks/profile_rerun.py [--page pages/greedy.py] [--edits 20] [--top 25]

Prints the script's CPU per rerun (without the profiler, measured first) and the cumulative share of
the page script's time of the named parts below, then the top functions by cumulative time.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)

# Parts named by the function that draws them (module path fragment, function name).
PARTS = {
    "state table (widgets.state_table)": ("specviz/app/ui/widgets.py", "state_table"),
    "text tables (widgets.text_table)": ("specviz/app/ui/widgets.py", "text_table"),
    "share controls (share_ui.share_controls)": ("specviz/app/ui/share_ui.py", "share_controls"),
    "export controls (share_ui.export_controls)": ("specviz/app/ui/share_ui.py", "export_controls"),
    "page_setup (theme.page_setup)": ("specviz/app/ui/theme.py", "page_setup"),
    "scenario (scenarios.scenario)": ("specviz/app/ui/scenarios.py", "scenario"),
    "step player (player.show)": ("specviz/app/ui/player.py", "show"),
    "selectboxes (st.selectbox)": ("streamlit/elements/widgets/selectbox.py", "selectbox"),
    "table editors (st.data_editor)": ("streamlit/elements/widgets/data_editor.py", "data_editor"),
    "Streamlit's per-element enqueue": ("streamlit/delta_generator.py", "_enqueue"),
}


def _edits(at, n):
    if any(b.key == "w_add_child" for b in at.button):  # the tree builder: Add child / Delete subtree alternating
        for i in range(n):
            at.button(key="w_add_child" if i % 2 == 0 else "w_delete").click().run()
            if at.exception:
                raise SystemExit(f"the page raised: {at.exception}")
        return
    boxes = [sb for sb in at.selectbox if sb.label.startswith("Target(A)")]
    if not boxes:
        raise SystemExit("no Target(A) select box on this page: --page pages/greedy.py")
    values = ["D", "C"]
    for i in range(n):
        box = next((sb for sb in at.selectbox if sb.label.startswith("Target(A)")), None)
        if box is None:  # AppTest sometimes returns a run without the editor (a few in hundreds of runs here): run again
            at.run()
            box = next(sb for sb in at.selectbox if sb.label.startswith("Target(A)"))
        box.select(values[i % 2]).run()
        if at.exception:
            raise SystemExit(f"the page raised: {at.exception}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--page", default="pages/greedy.py")
    ap.add_argument("--app-dir", type=Path, default=ROOT, help="another checkout (before/after): its pages and specviz")
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--callers", nargs="*", default=[], help="also print who calls these functions (names)")
    args = ap.parse_args()
    app_dir = args.app_dir.resolve()
    sys.path.insert(0, str(app_dir))
    os.chdir(app_dir)

    from streamlit.runtime.scriptrunner import exec_code, script_runner
    from streamlit.testing.v1 import AppTest

    state = {"profile": None, "cpu": 0.0, "runs": 0}
    original = exec_code.exec_func_with_error_handling

    def measured(func, ctx):
        t0 = time.thread_time()
        prof = state["profile"]
        if prof is not None:
            prof.enable()
        try:
            return original(func, ctx)
        finally:
            if prof is not None:
                prof.disable()
            state["cpu"] += time.thread_time() - t0
            state["runs"] += 1

    script_runner.exec_func_with_error_handling = measured  # the name the script runner calls
    at = AppTest.from_file(str(app_dir / args.page), default_timeout=120).run()
    if at.exception:
        raise SystemExit(f"the page raised: {at.exception}")
    _edits(at, 2)  # both results cached from here on
    state.update(cpu=0.0, runs=0)
    _edits(at, args.edits)
    plain = state["cpu"] / state["runs"]
    state.update(profile=cProfile.Profile(), cpu=0.0, runs=0)
    _edits(at, args.edits)
    stats = pstats.Stats(state["profile"])
    total = max(v[3] for k, v in stats.stats.items() if k[2] == "measured" or "exec_func_with_error_handling" in k[2])
    print(f"page {args.page}: {args.edits} cached edits; script CPU per rerun without the profiler: "
          f"{plain * 1e3:.1f} ms (thread time)")
    print("| part | share of the script's time |\n|---|---|")
    for label, (path, name) in PARTS.items():
        cum = sum(v[3] for k, v in stats.stats.items() if k[0].endswith(path) and k[2] == name)
        print(f"| {label} | {100 * cum / total:.0f}% |")
    out = io.StringIO()
    pstats.Stats(state["profile"], stream=out).sort_stats("cumulative").print_stats(args.top)
    print(out.getvalue())
    for name in args.callers:
        out = io.StringIO()
        pstats.Stats(state["profile"], stream=out).sort_stats("cumulative").print_callers(name)
        print(out.getvalue())


if __name__ == "__main__":
    main()
