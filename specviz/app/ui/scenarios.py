"""Scenario slots in session state (the scenario JSON is the user's input), presets, load/save.

Slots (``SLOTS``), each defaulting to a preset in ``scenarios/``: ``tree`` (running example;
overview, tree builder, greedy accept), ``batch``, ``chain`` (p/q example), ``target_only``,
``dspark``. A page may also use a slot name of its own with ``default=``.
"""
from __future__ import annotations

import hashlib

import streamlit as st
from specviz.app.ui.bounded_cache import bounded_cache

from specviz.base.errors import SpecvizError
from specviz.inputs.naming import file_stem, is_edited
from specviz.base.paths import app_root
from specviz.inputs.scenario import Scenario, load_scenario, scenario_from_dict, scenario_from_json
from specviz.app.ui.guard import show_error
from specviz.app.ui.i18n import tr

ROOT = app_root()  # app.py, pages/, scenarios/: the checkout, or specviz/_app/ in a wheel
SCENARIO_DIR = ROOT / "scenarios"

SLOTS = {
    "tree": "running_example",
    "batch": "batch_two_requests",
    "chain": "pq_example",
    "target_only": "target_only_sampling",
    "dspark": "dspark_chain",
}

# -------------------------------------------------------------------------------------------
# Scenarios
# -------------------------------------------------------------------------------------------

@st.cache_data(show_spinner=False)
def _preset_json(name: str) -> str:
    return load_scenario(SCENARIO_DIR / f"{name}.json").to_json()


_PRESETS_SEEN: dict = {}  # the folder's mtime -> the names


def preset_names() -> list[str]:
    """The presets in ``scenarios/`` (file stems), listed again only when the folder changes (every
    page's sidebar asks each rerun, and a glob was 3% of a class's server CPU)."""
    mtime = SCENARIO_DIR.stat().st_mtime_ns
    names = _PRESETS_SEEN.get(mtime)
    if names is None:
        _PRESETS_SEEN.clear()
        names = _PRESETS_SEEN[mtime] = tuple(sorted(p.stem for p in SCENARIO_DIR.glob("*.json")))
    return list(names)


def load_preset(name: str) -> Scenario:
    return scenario_from_json(_preset_json(name))


@bounded_cache()
def _parse(text: str) -> Scenario:
    s = scenario_from_json(text)
    s.compact_json  # computed once here and cached with the value: reruns never re-serialise the scenario
    return s


def scenario(slot: str = "tree", default: str | None = None) -> Scenario:
    """The scenario held in ``slot`` (defaulting to its preset). Edits stay until replaced."""
    key = f"sv_scn::{slot}"
    if key not in st.session_state:
        st.session_state[key] = _preset_json(default or SLOTS.get(slot, "running_example"))
    return _parse(st.session_state[key])


def set_scenario(slot: str, s: Scenario) -> None:
    """Replace the scenario in ``slot`` (already validated: a Scenario value)."""
    st.session_state[f"sv_scn::{slot}"] = s.to_json()
    st.session_state[f"sv_ver::{slot}"] = st.session_state.get(f"sv_ver::{slot}", 0) + 1


def scenario_version(slot: str) -> int:
    """Bumps on every ``set_scenario``: widget keys that include it are rebuilt from the scenario."""
    return st.session_state.get(f"sv_ver::{slot}", 0)


def try_update(slot: str, build) -> bool:
    """Call ``build()`` -> Scenario (or dict); store it when valid, else show st.error and keep the old one."""
    try:
        new = build()
        if isinstance(new, dict):
            new = scenario_from_dict(new)
    except SpecvizError as exc:
        show_error(exc)
        return False
    set_scenario(slot, new)
    return True


def scenario_io(slot: str = "tree", presets: list[str] | None = None) -> None:
    """Sidebar: pick a preset, load a JSON file, save the current scenario as JSON."""
    from specviz.app.ui.state import lazy_expander

    box, is_open = lazy_expander(tr("Scenario: load / save", "场景：加载 / 保存"), f"w_io_open::{slot}", parent=st.sidebar)
    if not is_open:
        return
    s = scenario(slot)
    with box:
        names = presets if presets is not None else preset_names()
        edited = is_edited(s)  # derived: the preset's name beside other inputs would be false
        cur = s.name if s.name in names and not edited else None
        hint = (tr("edited: {n} (pick a preset to reload it)", "已修改：{n}（选择预设可重新加载）", n=s.name) if edited
                else tr("choose a preset", "选择预设"))
        choice = st.selectbox(tr("Preset", "预设"), names, index=names.index(cur) if cur else None,
                              key=f"w_preset::{slot}::{scenario_version(slot)}", placeholder=hint)
        if choice and (choice != s.name or edited):
            set_scenario(slot, load_preset(choice))
            st.rerun()
        up = st.file_uploader(tr("Load scenario JSON", "加载场景 JSON"), type=["json"], key=f"w_upload::{slot}")
        if up is not None:
            data = up.getvalue()
            digest = hashlib.sha1(data).hexdigest()
            if st.session_state.get(f"sv_upload::{slot}") != digest:
                try:
                    new = scenario_from_json(data)  # bytes: size checked before decoding, strict UTF-8
                except SpecvizError as exc:
                    show_error(exc)
                else:
                    st.session_state[f"sv_upload::{slot}"] = digest
                    set_scenario(slot, new)
                    st.rerun()
        st.download_button(tr("Save scenario JSON", "保存场景 JSON"), s.to_json(), file_name=f"{file_stem(s)}.json",
                           mime="application/json", key=f"w_download::{slot}")
