"""What every page shares, as one namespace (``ui``) over the cohesive modules of ``specviz.app.ui``:
``i18n`` (tr, term, lang), ``state`` (values that survive a page switch), ``scenarios`` (slots,
presets, load/save), ``guard`` (errors), ``tensors`` (raw tensors), ``backend_cache`` (runs and the
badge), ``stepping`` (server-side step controls), ``widgets`` (chips, tables, legend), ``theme``
(page setup, presentation mode).

A page is a thin script:

    import streamlit as st
    from specviz.app.ui import common as ui

    ui.page_setup("greedy")                    # CSS, sidebar: language, backend, load/save scenario
    s = ui.scenario("tree")                    # the Scenario in slot "tree" (edits survive page switches)
    st.title(ui.tr("Greedy accept", "贪心接受"))
    run = ui.run(s)                            # cached engine.run_scenario on the chosen backend, or None after st.error
    ui.backend_badge(s)                        # "all backends agree" (engine.compare_backends)
    with ui.guard():                           # SpecvizError -> st.error naming the field; never a traceback
        ...
    step = ui.step_controls("greedy", num_frames)   # first / back / next / play / speed / scrub
    ui.raw_tensors({"accept_index": (arr, "[bs, W]"), ...})
    ui.end_page()                              # drives "play" (sleep, advance, rerun)

Session state holds inputs only (scenario JSON per slot, language, backend, step, selection);
results come from ``st.cache_data``. Keys this module owns start with ``sv_``. A widget's own
key is never the source of truth (Streamlit drops widget keys on a page switch): use
``ui.persist_key`` / ``ui.widget`` so a value survives moving between pages.

Scenario slots (``SLOTS``), each defaulting to a preset in ``scenarios/``:
``tree`` (running example; overview, tree builder, greedy accept), ``batch``, ``chain``
(p/q example), ``target_only``, ``dspark``. A page may also use a slot name of its own with
``default=``.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path


def ensure_triton_env() -> None:
    """Switch the Triton interpreter on when there is no CUDA GPU, before anything imports triton."""
    if "TRITON_INTERPRET" in os.environ or "triton" in sys.modules:
        return
    has_gpu = any(Path("/dev").glob("nvidia[0-9]*"))
    if not has_gpu:
        os.environ["TRITON_INTERPRET"] = "1"


ensure_triton_env()  # before anything below imports torch / triton

from specviz.app.ui.i18n import (  # noqa: E402,F401
    LANGS, TERMS, lang, tr, term)
from specviz.app.ui.state import (  # noqa: E402,F401
    persist_key, widget, set_value, synced_key, widget_key, lazy_expander)
from specviz.app.ui.scenarios import (  # noqa: E402,F401
    ROOT, SCENARIO_DIR, SLOTS, preset_names, load_preset, scenario, set_scenario, scenario_version, try_update, scenario_io)
from specviz.app.ui.guard import (  # noqa: E402,F401
    show_error, show_field_error, defer_error, show_deferred_error, guard, rerun_view)
from specviz.app.ui.tensors import (  # noqa: E402,F401
    to_numpy, tensor_text, raw_tensors, SGLANG_SHAPES, shaped)
from specviz.app.ui.backend_cache import (  # noqa: E402,F401
    available_backends, usable_backends, backend_label, interpreted, backend, backend_selector, run, compare, backend_badge,
    compare_call, badge, greedy_frames, greedy_frames_key, frames_key)
from specviz.app.ui.stepping import (  # noqa: E402,F401
    SPEEDS, step, set_step, step_controls, end_page, mark_last)
from specviz.app.ui.widgets import (  # noqa: E402,F401
    chip, chip_row, chip_rows, STYLED_ROWS_LIMIT, state_table, text_table, legend, page_link, graph, chart)
from specviz.app.ui.theme import (  # noqa: E402,F401
    CSS, PRESENT_CSS, presenting, editing_area, route_through_app, page_setup)
