"""What every page shares: language, backend, scenario state, errors, raw tensors, step controls.

A page is a thin script:

    import streamlit as st
    from specviz.ui import common as ui

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

import contextlib
import hashlib
import os
import sys
import threading
import time
from pathlib import Path


def ensure_triton_env() -> None:
    """Switch the Triton interpreter on when there is no CUDA GPU, before anything imports triton."""
    if "TRITON_INTERPRET" in os.environ or "triton" in sys.modules:
        return
    has_gpu = any(Path("/dev").glob("nvidia[0-9]*"))
    if not has_gpu:
        os.environ["TRITON_INTERPRET"] = "1"


ensure_triton_env()

import numpy as np  # noqa: E402
import streamlit as st  # noqa: E402

from streamlit.errors import StreamlitAPIException  # noqa: E402
from streamlit.runtime.scriptrunner_utils.exceptions import ScriptControlException  # noqa: E402

from specviz.errors import BackendUnavailable, SpecvizError  # noqa: E402
from specviz.paths import app_root  # noqa: E402
from specviz.scenario import Scenario, load_scenario, scenario_from_dict, scenario_from_json  # noqa: E402

ROOT = app_root()  # app.py, pages/, scenarios/: the checkout, or specviz/_app/ in a wheel
SCENARIO_DIR = ROOT / "scenarios"

SLOTS = {
    "tree": "running_example",
    "batch": "batch_two_requests",
    "chain": "pq_example",
    "target_only": "target_only_sampling",
    "dspark": "dspark_chain",
}

LANGS = {"en": "English", "zh": "简体中文"}

# -------------------------------------------------------------------------------------------
# Language
# -------------------------------------------------------------------------------------------

# The article's terms, in both languages. Pages use ``term("accept_index")`` for these and
# ``tr(en, zh)`` for their own sentences.
TERMS = {
    "draft": ("Draft", "Draft（草稿）"),
    "verify": ("Target Verify", "Target Verify（目标模型验证）"),
    "accept": ("Accept", "Accept（接受）"),
    "output": ("Output", "输出"),
    "kv": ("KV", "KV"),
    "bonus": ("bonus", "bonus（奖励 token）"),
    "root": ("root", "根节点"),
    "node": ("node", "节点"),
    "row": ("row", "行"),
    "token": ("token", "token"),
    "accept_index": ("accept_index", "accept_index"),
    "accept_lens": ("accept_lens", "accept_lens"),
    "num_correct_drafts": ("num_correct_drafts", "num_correct_drafts"),
    "predicts": ("predicts", "predicts"),
    "target_predict": ("target_predict", "target_predict"),
    "accepted": ("accepted", "已接受"),
    "rejected": ("rejected", "已拒绝"),
    "pending": ("pending", "待定"),
    "discarded": ("discarded", "丢弃"),
    "committed": ("committed", "提交"),
    "backend": ("Backend", "后端"),
    "language": ("Language", "语言"),
    "scenario": ("Scenario", "场景"),
    "step": ("Step", "步骤"),
    "first_child": ("first child", "第一个子节点"),
    "next_sibling": ("next sibling", "下一个兄弟节点"),
    "next_root": ("next root", "下一轮的根"),
    "raw_tensors": ("Raw tensors (named and shaped as in SGLang)", "原始张量（名称与形状同 SGLang）"),
}


def lang() -> str:
    """The chosen language: ``"en"`` or ``"zh"``."""
    return st.session_state.get("sv_lang", "en")


def tr(en: str, zh: str | None = None, **fmt) -> str:
    """The text in the chosen language (``zh`` falls back to ``en``); ``fmt`` fills ``{}`` fields."""
    text = zh if (lang() == "zh" and zh) else en
    return text.format(**fmt) if fmt else text


def term(key: str) -> str:
    """An article term (``TERMS``) in the chosen language."""
    en, zh = TERMS.get(key, (key, key))
    return zh if lang() == "zh" else en


# -------------------------------------------------------------------------------------------
# Persistent values and widgets
# -------------------------------------------------------------------------------------------

def persist_key(key: str, default):
    """A non-widget session value (survives page switches); set to ``default`` the first time."""
    if key not in st.session_state:
        st.session_state[key] = default
    return st.session_state[key]


def widget(fn, label: str, key: str, default, **kwargs):
    """Render ``fn(label, key=..., ...)`` whose value lives in the session key ``key``.

    The widget gets its own key ``"w_" + key``, refilled from ``key`` when Streamlit dropped it
    (after a page switch), and copied back on change, so the value survives page switches.
    """
    persist_key(key, default)
    wkey = "w_" + key
    # The session key is the one source of truth: the widget is refilled from it on every run
    # (Streamlit keeps widget state per page, so a widget copy kept across a page switch can
    # show another value than the one every page reads).
    st.session_state.pop("sv_dirty::" + key, None)
    st.session_state[wkey] = st.session_state[key]

    def _copy():
        st.session_state[key] = st.session_state[wkey]

    fn(label, key=wkey, on_change=_copy, **kwargs)
    return st.session_state[key]


def set_value(key: str, value) -> None:
    """Set a persistent value and the widget showing it (call from a callback or before rendering)."""
    st.session_state[key] = value
    if "w_" + key in st.session_state:
        try:
            st.session_state["w_" + key] = value
        except StreamlitAPIException:  # the widget is already drawn in this run: refill it on the next
            st.session_state["sv_dirty::" + key] = True


# -------------------------------------------------------------------------------------------
# Scenarios
# -------------------------------------------------------------------------------------------

@st.cache_data(show_spinner=False)
def _preset_json(name: str) -> str:
    return load_scenario(SCENARIO_DIR / f"{name}.json").to_json()


def preset_names() -> list[str]:
    """The presets in ``scenarios/`` (file stems)."""
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.json"))


def load_preset(name: str) -> Scenario:
    return scenario_from_json(_preset_json(name))


@st.cache_data(show_spinner=False, max_entries=256)
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
    s = scenario(slot)
    with st.sidebar.expander(tr("Scenario: load / save", "场景：加载 / 保存"), expanded=False):
        names = presets if presets is not None else preset_names()
        cur = s.name if s.name in names else None
        choice = st.selectbox(tr("Preset", "预设"), names, index=names.index(cur) if cur else None,
                              key=f"w_preset::{slot}::{scenario_version(slot)}", placeholder=tr("choose a preset", "选择预设"))
        if choice and choice != s.name:
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
        st.download_button(tr("Save scenario JSON", "保存场景 JSON"), s.to_json(), file_name=f"{s.name}.json",
                           mime="application/json", key=f"w_download::{slot}")


# -------------------------------------------------------------------------------------------
# Backends
# -------------------------------------------------------------------------------------------

# torch, Triton and the kernels take 1.5-2.5 s to import on this 2-core machine: more than a first
# visit may take. The numpy reference needs none of them, so they load in a background thread
# (started once the first page has been drawn, or as soon as a page needs another backend), and
# the "all backends agree" badge waits for them: until then it says it is still comparing, and a
# small fragment redraws the page once they are in. SPECVIZ_BADGE_WAIT_S (seconds, default 0)
# lets a page wait that long for them instead (the tests set it, so AppTest sees the badge).
BADGE_WAIT_S = float(os.environ.get("SPECVIZ_BADGE_WAIT_S", "0") or 0)
_LOADED = threading.Event()
_LOADER_LOCK = threading.Lock()
_AVAILABLE: dict = {}


def _load_backends() -> None:
    from specviz.backends import available_backends as avail

    try:
        _AVAILABLE.update(avail())  # imports torch, Triton and the kernels
    except Exception as exc:  # noqa: BLE001  never leave the pages waiting: numpy still works
        from specviz.backends import BACKENDS

        _AVAILABLE.update({b: (None if b == "numpy" else f"failed to load ({type(exc).__name__}: {exc})") for b in BACKENDS})
    freeze_import_heap()
    _LOADED.set()


def start_loading_backends() -> None:
    """Start importing torch / Triton / the kernels in the background (once per process)."""
    with _LOADER_LOCK:
        if getattr(start_loading_backends, "thread", None) is None:
            th = threading.Thread(target=_load_backends, name="specviz-backends", daemon=True)
            start_loading_backends.thread = th
            th.start()


def backends_loaded(wait: float = 0.0) -> bool:
    """True when the backends are imported (waiting up to ``wait`` seconds, starting the import if needed)."""
    if _LOADED.is_set():
        return True
    if wait > 0:
        start_loading_backends()
        return _LOADED.wait(wait)
    return False


def available_backends() -> dict:
    """Backend -> None when usable, else why not (loaded once per process; waits for the import)."""
    start_loading_backends()
    _LOADED.wait()
    return dict(_AVAILABLE)


def freeze_import_heap() -> None:
    """Move every object alive now (the imported modules: Streamlit, pandas, torch, Triton) to the
    garbage collector's permanent generation, once the backends are imported. A full collection
    then walks only what the sessions allocate, not the ~270k objects of the libraries (0.25-0.3 s
    holding the GIL on this 2-core machine, which every click paid while Streamlit ran
    gc.collect(2) after each script run; .streamlit/config.toml now switches that off too)."""
    import gc

    gc.freeze()


def usable_backends() -> list[str]:
    return [b for b, why in available_backends().items() if why is None]


def backend_label(name: str) -> str:
    from specviz.backends import backend_label as label

    if name == "numpy" or not backends_loaded():  # no availability known yet: the plain label
        return label(name)
    why = available_backends().get(name)
    return label(name) if why is None else f"{name} ({tr('unavailable', '不可用')})"


def backend() -> str:
    """The chosen backend (falls back to numpy when the chosen one cannot run here)."""
    name = st.session_state.get("sv_backend", "numpy")
    if name == "numpy":
        return name  # never waits for torch
    return name if available_backends().get(name) is None else "numpy"


def backend_selector() -> str:
    """Sidebar select box of every backend; an unavailable one says why and numpy is used."""
    from specviz.backends import BACKENDS

    name = widget(st.sidebar.selectbox, term("backend"), "sv_backend", "numpy", options=list(BACKENDS), format_func=backend_label)
    why = available_backends().get(name) if name != "numpy" else None
    if why is not None:
        st.sidebar.warning(tr("{b} cannot run here: {why}. Using numpy.", "{b} 无法在此运行：{why}。改用 numpy。", b=name, why=why))
    return backend()


# Results are cached per process (every session shares them: a class editing the same scenario
# computes it once) under the scenario's canonical JSON (engine.scenario_key: no titles, sorted
# keys) plus the backend names. st.cache_data returns each caller its own unpickled copy, so no
# session can change what another one reads; nothing here depends on who asks.
RESULT_CACHE_ENTRIES = 256


@st.cache_data(show_spinner=False, max_entries=RESULT_CACHE_ENTRIES)
def _run(key: str, backend_name: str):
    from specviz.engine import run_scenario

    return run_scenario(scenario_from_json(key), backend_name)


def run(s: Scenario, backend_name: str | None = None):
    """``engine.run_scenario`` on the chosen backend (cached on the scenario's canonical JSON), or None after st.error."""
    from specviz.engine import scenario_key

    try:
        result = _run(scenario_key(s), backend_name or backend())
    except (SpecvizError, BackendUnavailable) as exc:
        show_error(exc)
        return None
    result.scenario = s  # the caller's own value (its title and description), on the caller's own copy
    return result


@st.cache_data(show_spinner=False, max_entries=RESULT_CACHE_ENTRIES)
def _compare(key: str, names: tuple) -> dict:
    from specviz.engine import compare_backends

    return compare_backends(scenario_from_json(key), list(names))


def compare(s: Scenario) -> dict:
    """Backend -> None when it matches the reference on these inputs, else what differs (cached)."""
    from specviz.engine import scenario_key

    return _compare(scenario_key(s), tuple(usable_backends()))


def backend_badge(s: Scenario) -> bool:
    """The "all backends agree" badge for the current inputs; returns True when they agree.

    While torch / Triton are still loading (the first seconds of a server) it says so instead and
    redraws the page once they are in: it never says "agree" before the comparison has run."""
    if not backends_loaded(BADGE_WAIT_S):
        badge_pending()
        return False
    try:
        diffs = compare(s)
    except SpecvizError as exc:
        show_error(exc)
        return False
    return badge(diffs)


@st.fragment(run_every=0.5)
def _await_backends() -> None:
    start_loading_backends()
    if _LOADED.is_set():
        st.rerun(scope="app")  # now the page draws the real badge
    st.info(tr("Comparing with the torch and Triton backends: loading them (the numpy reference result is shown)…",
               "正在与 torch 和 Triton 后端比较：正在加载（先显示 numpy 参考实现的结果）…"), icon=":material/hourglass_top:")


def badge_pending() -> None:
    """The badge's place while the backends load: a note, redrawn every 0.5 s until they are in."""
    _await_backends()


@st.cache_data(show_spinner=False, max_entries=256)
def _compare_call(fn_name: str, args: tuple, kwargs: dict, names: tuple) -> dict:
    import dataclasses

    from specviz.backends import get_backend

    def arrays(result):
        if dataclasses.is_dataclass(result):
            result = dataclasses.asdict(result) if not hasattr(result, "as_dict") else result.as_dict()
        if isinstance(result, dict):
            return {k: _to_np(v) for k, v in result.items()}
        if isinstance(result, tuple):
            return {f"out[{k}]": _to_np(v) for k, v in enumerate(result)}
        return {"out": _to_np(result)}

    def call(name):
        ops = get_backend(name)
        if name != "numpy":
            import torch

            conv = tuple(torch.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in args)
        else:
            conv = args
        return arrays(getattr(ops, fn_name)(*conv, **kwargs))

    want = call("numpy")
    out = {}
    for name in names:
        if name == "numpy":
            out[name] = None
            continue
        try:
            got = call(name)
        except Exception as exc:  # noqa: BLE001  a broken backend is reported on the badge
            out[name] = f"failed: {exc}"
            continue
        from specviz.engine import result_difference

        diff = result_difference(want, got)
        out[name] = diff
    return out


def compare_call(fn_name: str, *args, **kwargs) -> dict:
    """Run one API function (spec/API.md) on every usable backend; backend -> None when it equals
    the numpy reference (integers exactly, floats within 1e-6), else what differs. Cached.

    Positional arguments are numpy arrays (converted to torch tensors for the other backends).
    """
    if not backends_loaded(BADGE_WAIT_S):
        return None  # badge(None): still loading
    args = tuple(np.asarray(a) if isinstance(a, (list, np.ndarray)) else a for a in args)
    return _compare_call(fn_name, args, kwargs, tuple(usable_backends()))


def badge(diffs: dict | None, what: str = "") -> bool:
    """Show the "all backends agree" badge for a ``compare`` / ``compare_call`` result (None: the
    backends are still loading; a note that says so, redrawn until they are in)."""
    if diffs is None:
        badge_pending()
        return False
    names = ", ".join(backend_label(b) for b in diffs)
    bad = {b: d for b, d in diffs.items() if d is not None}
    suffix = f" · {what}" if what else ""
    if not bad:
        st.success(tr("All backends agree ({names}){suffix}", "所有后端结果一致（{names}）{suffix}", names=names, suffix=suffix),
                   icon=":material/check_circle:")
        return True
    for b, d in bad.items():
        st.error(tr("{b} disagrees with the reference{suffix}: {d}", "{b} 与参考实现不一致{suffix}：{d}", b=b, d=d, suffix=suffix),
                 icon=":material/cancel:")
    return False


# -------------------------------------------------------------------------------------------
# Errors
# -------------------------------------------------------------------------------------------

def show_error(exc: Exception) -> None:
    """st.error naming the field (SpecvizError) or the kind of failure (anything else)."""
    if isinstance(exc, SpecvizError):
        st.error(f"**{exc.field}**: {exc.detail}", icon=":material/warning:")
    else:
        st.error(f"**{type(exc).__name__}**: {exc}", icon=":material/warning:")


@contextlib.contextmanager
def guard():
    """Run a block; a SpecvizError (or any other failure) becomes st.error, never a traceback.

    The rest of the block is skipped; the page goes on after it and the user's edits are kept.
    """
    try:
        yield
    except SpecvizError as exc:
        show_error(exc)
    except ScriptControlException:  # st.rerun / st.stop pass through
        raise
    except Exception as exc:  # noqa: BLE001  the page must never show a traceback
        show_error(exc)


# -------------------------------------------------------------------------------------------
# Raw tensors
# -------------------------------------------------------------------------------------------

def _to_np(x):
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def tensor_text(name: str, arr, shape_doc: str = "") -> str:
    """``name  # [bs, n] = [1, 5] int64`` followed by the values."""
    a = _to_np(arr)
    head = f"{name}  # {shape_doc + ' = ' if shape_doc else ''}{list(a.shape)} {a.dtype}"
    body = np.array2string(a, separator=", ", threshold=4096, max_line_width=110)
    return f"{head}\n{body}"


def raw_tensors(tensors: dict, title: str | None = None, expanded: bool = False) -> None:
    """An expander listing tensors named and shaped as in SGLang.

    ``tensors``: name -> array, or name -> (array, "[bs, n]") to document the shape symbolically.
    """
    with st.expander(title or term("raw_tensors"), expanded=expanded):
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


# -------------------------------------------------------------------------------------------
# Step controls (the animation)
# -------------------------------------------------------------------------------------------

SPEEDS = (0.5, 1.0, 2.0, 4.0)  # steps per second


def step(key: str) -> int:
    return int(st.session_state.get(f"sv_step::{key}", 0))


def set_step(key: str, value: int) -> None:
    set_value(f"sv_step::{key}", int(value))


def step_controls(key: str, num_frames: int, start: int = 0) -> int:
    """First / back / next / last / play-pause buttons, a speed and a scrub slider.

    ``num_frames`` frames are numbered 0..num_frames-1. Returns the current frame. Call
    ``end_page()`` at the end of the page so that "play" advances.
    """
    mark_last(key, num_frames)
    last = max(0, num_frames - 1)
    skey, pkey = f"sv_step::{key}", f"sv_play::{key}"
    cur = persist_key(skey, start)
    if cur > last:
        set_value(skey, last)
    playing = bool(st.session_state.get(pkey, False))

    def go(v):
        def cb():
            set_value(skey, max(0, min(last, v() if callable(v) else v)))
            st.session_state[pkey] = False
        return cb

    def toggle():
        now = not st.session_state.get(pkey, False)
        if now and step(key) >= last:
            set_value(skey, 0)
        st.session_state[pkey] = now

    cols = st.columns([1, 1, 1, 1, 1.4, 2.2])
    # Material icons (a font Streamlit ships), never glyphs such as ⏮ ⏭ that a classroom PC may lack.
    cols[0].button(tr("first", "第一步"), key=f"w_first::{key}", on_click=go(0), help=tr("first step", "第一步"), width="stretch",
                   icon=":material/first_page:")
    cols[1].button(tr("back", "上一步"), key=f"w_back::{key}", on_click=go(lambda: step(key) - 1), help=tr("back", "上一步"),
                   width="stretch", icon=":material/chevron_left:")
    cols[2].button(tr("next", "下一步"), key=f"w_next::{key}", on_click=go(lambda: step(key) + 1), help=tr("next", "下一步"),
                   width="stretch", icon=":material/chevron_right:")
    cols[3].button(tr("last", "最后一步"), key=f"w_last::{key}", on_click=go(last), help=tr("last step", "最后一步"), width="stretch",
                   icon=":material/last_page:")
    cols[4].button(tr("pause", "暂停") if playing else tr("play", "播放"), key=f"w_play::{key}", on_click=toggle,
                   icon=":material/pause:" if playing else ":material/play_arrow:", width="stretch")
    with cols[5]:
        widget(st.select_slider, tr("speed (steps/s)", "速度（步/秒）"), f"sv_speed::{key}", 1.0, options=list(SPEEDS),
               label_visibility="collapsed", format_func=lambda v: f"{v:g} /s")  # language-neutral options
    if last > 0:
        widget(st.slider, tr("step", "步骤"), skey, start, min_value=0, max_value=last)
    st.session_state.setdefault("sv_playing_keys", set()).add(key)
    return step(key)


def end_page() -> None:
    """Advance any playing animation by one step after a pause, then rerun the page. Starts loading
    the torch / Triton backends (in the background) once the first page has been drawn."""
    start_loading_backends()
    for key in list(st.session_state.get("sv_playing_keys", ())):
        if not st.session_state.get(f"sv_play::{key}"):
            continue
        speed = float(st.session_state.get(f"sv_speed::{key}", 1.0))
        time.sleep(1.0 / max(speed, 0.1))
        nxt = step(key) + 1
        last = st.session_state.get(f"sv_last::{key}")
        set_value(f"sv_step::{key}", nxt)
        if last is not None and nxt >= last:
            st.session_state[f"sv_play::{key}"] = False
        st.rerun()


def mark_last(key: str, num_frames: int) -> None:
    """Tell ``end_page`` where the animation ends (``step_controls`` does it for you)."""
    st.session_state[f"sv_last::{key}"] = max(0, num_frames - 1)


# -------------------------------------------------------------------------------------------
# Page setup
# -------------------------------------------------------------------------------------------

# Streamlit's stylesheet forces one small font size on every graphviz <text>, which ignores the
# DOT fontsize (nodes are laid out for 18-26 pt text, then drawn at ~11 px). Give each text its
# own size back: one rule per size the renderers use (graphviz writes font-size="18.00").
_GRAPH_FONT_CSS = "".join(
    f'[data-testid="stGraphVizChart"] svg text[font-size="{k}.00"]{{font-size:{k}px !important}}' for k in range(6, 49))

CSS = "<style>" + _GRAPH_FONT_CSS + """
/* Projector-sized: larger base text, tables and code; little space above the title. */
[data-testid="stMainBlockContainer"] { padding-top: 2.2rem; }
/* A figure never grows past the window's height (a projector is 720 px tall): it scales down whole. */
[data-testid="stGraphVizChart"] svg { max-height: calc(100vh - 140px); width: auto; max-width: 100%; }
h1 { padding-top: 0.2rem !important; }
html, body, [data-testid="stAppViewContainer"] { font-size: 19px; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 1.05rem; }
[data-testid="stDataFrame"] div, [data-testid="stTable"] td, [data-testid="stTable"] th { font-size: 1.0rem; }
[data-testid="stCode"] code { font-size: 0.9rem; }
.sv-chip { display: inline-block; min-width: 2.4em; padding: .15em .5em; margin: .1em; border-radius: .35em;
           text-align: center; font-weight: 600; font-family: ui-monospace, monospace; border: 2px solid transparent; }
.sv-row { display: flex; flex-wrap: wrap; align-items: center; gap: .2em; margin: .2em 0 .6em 0; }
.sv-label { font-weight: 600; margin-right: .6em; min-width: 9em; }
.sv-grey { color: #777; text-decoration: line-through; }
.sv-big { font-size: 1.25rem; }
[data-testid="stTable"] table { font-size: 1.0rem; }
</style>
"""


# Presentation mode: larger text everywhere (the step player enlarges its own caption).
PRESENT_CSS = """<style>
html, body, [data-testid="stAppViewContainer"] { font-size: 24px; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 1.1rem; }
h1 { font-size: 2.2rem !important; padding-top: 0 !important; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] { display: none; }
</style>"""


def presenting() -> bool:
    """True in presentation mode (sidebar toggle, or ``present`` in a shared link's extras)."""
    return bool(st.session_state.get("sv_present", False))


def editing_area(title: str):
    """A container for a page's editing controls: folded into a closed expander in presentation
    mode (the key picture stays on screen), a plain container otherwise."""
    return st.expander(title, expanded=False, icon=":material/edit:") if presenting() else st.container()


def route_through_app() -> None:
    """Send a deep link (e.g. /greedy opened in a fresh server) through app.py's router.

    Streamlit runs a file of ``pages/`` on its own (its old multipage mode) while no script has
    called ``st.navigation`` yet in this server process, which happens when the very first
    request is a deep link: the page then has no router, no titles and no Triton set-up. Switching
    that mode off and rerunning runs app.py, whose st.navigation resolves the same URL path.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def page_setup(page: str, slot: str | None = "tree") -> None:
    """Per page: CSS, and the sidebar with the language toggle, backend selector and scenario I/O."""
    route_through_app()
    from specviz.ui import markup

    markup.fixed_markup(CSS)
    st.session_state["sv_page"] = page
    st.session_state["sv_playing_keys"] = set()
    widget(st.sidebar.radio, "Language / 语言", "sv_lang", "en", options=list(LANGS), format_func=LANGS.get, horizontal=True)
    widget(st.sidebar.toggle, tr("Presentation mode", "演示模式"), "sv_present", False,
           help=tr("Large text, editing controls folded away, ← → and space step the walk.",
                   "大字号，收起编辑控件，← → 和空格键单步或播放。"))
    if presenting():
        markup.fixed_markup(PRESENT_CSS)
    backend_selector()
    if slot is not None:
        scenario_io(slot)


# -------------------------------------------------------------------------------------------
# Small HTML pieces (chips: a value with a state colour and an exact-value hover)
# -------------------------------------------------------------------------------------------

def chip(text, state: str = "pending", title: str = "") -> str:
    """A chip's HTML (text and title escaped): see specviz.ui.markup."""
    from specviz.ui import markup

    return markup.chip(text, state, title)


def chip_row(label: str, chips: list[str]) -> None:
    """A labelled row of chips (label and any non-chip item escaped): see specviz.ui.markup."""
    from specviz.ui import markup

    markup.row(label, chips)


STYLED_ROWS_LIMIT = 40  # beyond this a Styler costs more than a rerun may (~0.4 ms a cell); text marks carry the state


def state_table(df, states: dict) -> None:
    """A table whose rows are coloured by state (``{row position: state}``); every cell also
    carries its text mark. Up to STYLED_ROWS_LIMIT rows: a static coloured table; beyond: a plain
    scrollable dataframe (the ✓ / ✗ marks in the cells still say the state)."""
    from specviz.render.tables import highlight_rows

    if len(df) <= STYLED_ROWS_LIMIT:
        st.table(highlight_rows(df, states).hide(axis="index"))
    else:
        st.dataframe(df, hide_index=True, width="stretch", height=420)


def legend() -> None:
    """The colour legend (accepted / rejected / pending / bonus / discarded)."""
    chip_row(tr("Legend", "图例"), [chip(term(k), k) for k in ("accepted", "rejected", "pending")]
             + [chip(term("bonus"), "bonus"), chip(tr("current", "当前"), "current"), chip(term("discarded"), "discarded")])


def page_link(path: str, label: str, icon: str | None = None, help: str | None = None) -> bool:
    """st.page_link to ``path`` (relative to the repository root) when that page file exists.

    Returns False (and draws nothing) when the file is missing; outside the router (a page run on
    its own, e.g. by AppTest) the label is shown as plain text instead.
    """
    if not (ROOT / path).exists():
        return False
    try:
        st.page_link(str(ROOT / path), label=label, icon=icon, help=help)
    except Exception:  # noqa: BLE001  not registered with st.navigation: plain text
        st.markdown(f"{icon or '→'} **{label}**")
    return True
