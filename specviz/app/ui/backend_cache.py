"""The chosen backend, cached runs, and the "all backends agree" badge (engine.compare_backends).
"""
from __future__ import annotations

import functools
import os
import threading
import time

import numpy as np
import streamlit as st
from specviz.app.ui.bounded_cache import bounded_cache

from specviz.base.errors import BackendUnavailable, SpecvizError
from specviz.inputs.scenario import Scenario, scenario_from_json
from specviz.app.ui.guard import show_error
from specviz.app.ui.i18n import lang, term, tr
from specviz.app.ui.state import widget
from specviz.app.ui.tensors import to_numpy

# -------------------------------------------------------------------------------------------
# Backends
# -------------------------------------------------------------------------------------------

# torch, Triton and the kernels take 1.5-2.5 s to import on this 2-core machine: more than a first
# visit may take. The numpy reference needs none of them, so they load in a background thread
# (starting 2 s after the first page has been drawn, or as soon as a page needs another backend), and
# the "all backends agree" badge waits for them: until then it says it is still comparing, and a
# small fragment redraws the page once they are in. SPECVIZ_BADGE_WAIT_S (seconds, default 0)
# lets a page wait that long for them instead (the tests set it, so AppTest sees the badge).
BADGE_WAIT_S = float(os.environ.get("SPECVIZ_BADGE_WAIT_S", "0") or 0)
_LOADED = threading.Event()
_LOADER_LOCK = threading.Lock()
_AVAILABLE: dict = {}


def _load_backends() -> None:
    from specviz.algorithms.backends import available_backends as avail

    try:
        # Imports torch, Triton and the kernels. An import racing another thread's import of the same
        # package can fail once on a partly initialised module; a later attempt sees the whole module.
        for attempt in range(3):
            found = avail()
            if not any(why and "import" in why for why in found.values()) or attempt == 2:
                break
            time.sleep(0.5)
        _AVAILABLE.update(found)
        freeze_import_heap()
    except Exception as exc:  # noqa: BLE001  never leave the pages waiting: numpy still works
        from specviz.algorithms.backends import BACKENDS

        _AVAILABLE.update({b: (None if b == "numpy" else f"failed to load ({type(exc).__name__}: {exc})") for b in BACKENDS})
    finally:
        _LOADED.set()  # whatever happened, no page waits forever


# After a page is drawn, the import waits this long: it holds the GIL for ~2 s, and the browser is
# still fetching the page's script chunks (plotly's is 4.7 MB) from this same Python process.
IDLE_DELAY_S = 2.0


def start_loading_backends(delay: float = 0.0) -> None:
    """Start importing torch / Triton / the kernels in the background (once per process), now or
    after ``delay`` seconds (a later call without delay starts it at once)."""
    if delay > 0:
        with _LOADER_LOCK:
            if getattr(start_loading_backends, "thread", None) is None and getattr(start_loading_backends, "timer", None) is None:
                timer = threading.Timer(delay, start_loading_backends)
                timer.daemon = True
                start_loading_backends.timer = timer
                timer.start()
        return
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


def _label(name: str, language: str) -> str:
    """specviz.algorithms.backends.backend_label in ``language``."""
    from specviz.algorithms.backends import backend_label as label, triton_mode

    zh = language == "zh"
    if name == "numpy":
        return "numpy（参考实现）" if zh else "numpy (reference)"
    if name == "triton" and triton_mode() != "gpu":
        return "triton（CPU 解释器）" if zh else "triton (CPU interpreter)"
    return label(name)


def interpreted(name: str) -> bool:
    """True when ``name`` runs its kernels under the Triton interpreter here (slow: a button, not a rerun)."""
    from specviz.algorithms.backends import backend_label as label

    return "interpreter" in label(name)


def backend_label(name: str, language: str | None = None) -> str:
    """How a page names a backend, in ``language`` (default: the chosen one)."""
    language = language or lang()
    if name == "numpy" or not backends_loaded():  # no availability known yet: the plain label
        return _label(name, language)
    why = available_backends().get(name)
    return _label(name, language) if why is None else f"{name} ({'不可用' if language == 'zh' else 'unavailable'})"


def backend() -> str:
    """The chosen backend (falls back to numpy when the chosen one cannot run here)."""
    name = st.session_state.get("sv_backend", "numpy")
    if name == "numpy":
        return name  # never waits for torch
    return name if available_backends().get(name) is None else "numpy"


def backend_selector() -> str:
    """Sidebar select box of every backend; an unavailable one says why and numpy is used."""
    from specviz.algorithms.backends import BACKENDS

    name = widget(st.sidebar.selectbox, term("backend"), "sv_backend", "numpy", options=list(BACKENDS),
                  format_func=functools.partial(backend_label, language=lang()))  # language bound when drawn
    why = available_backends().get(name) if name != "numpy" else None
    if why is not None:
        st.sidebar.warning(tr("{b} cannot run here: {why}. Using numpy.", "{b} 无法在此运行：{why}。改用 numpy。", b=name, why=why))
    return backend()


# Results are cached per process (every session shares them: a class editing the same scenario
# computes it once) under the scenario's canonical JSON (engine.scenario_key: no titles, sorted
# keys) plus the backend names. The cache (ui.bounded_cache) is bounded in bytes, not entries, and
# returns each caller its own unpickled copy, so no session can change what another one reads;
# nothing here depends on who asks.


@bounded_cache()
def _run(key: str, backend_name: str):
    from specviz.replay.engine import run_scenario

    return run_scenario(scenario_from_json(key), backend_name)


def run(s: Scenario, backend_name: str | None = None):
    """``engine.run_scenario`` on the chosen backend (cached on the scenario's canonical JSON), or None after st.error."""
    from specviz.replay.engine import scenario_key

    try:
        result = _run(scenario_key(s), backend_name or backend())
    except (SpecvizError, BackendUnavailable) as exc:
        show_error(exc)
        return None
    result.scenario = s  # the caller's own value (its title and description), on the caller's own copy
    return result


@bounded_cache()
def _compare(key: str, names: tuple) -> dict:
    from specviz.replay.engine import compare_backends

    return compare_backends(scenario_from_json(key), list(names))


# The badge compares every usable backend with the reference, except one that runs on this server's CPU:
# the Triton interpreter (0.015-0.03 s of CPU per new scenario, benchmarks/README, "The badge on
# request") and, on a server without a GPU, torch (~2 ms of CPU per new scenario: about a tenth of an
# edit's server CPU, paid by every student on every edit; benchmarks/README, "cpu9"). Such a backend is
# compared when the session asks for it (the badge's button, kept for the session) or runs it as its
# chosen backend; on a GPU server the compiled backends are cheap and compared by default. The badge
# names what it compared and what it did not: "all backends agree" only when every usable backend ran
# on these inputs, and no "agree" at all when only the reference ran.
ALL_KEY = "sv_badge_all"


@functools.cache
def _interpreted(name: str) -> bool:
    return interpreted(name)


@functools.cache
def on_request(name: str) -> bool:
    """True when the badge compares ``name`` only on request here: it runs on this server's CPU (the
    Triton interpreter; torch without a GPU). Call once the backends are loaded."""
    if name == "numpy":
        return False
    if _interpreted(name):
        return True
    if name == "torch":
        import torch

        return not torch.cuda.is_available()
    return False


def compared_backends(names=None) -> tuple:
    """The backends the badge compares for this session (``names``: the usable ones): see ALL_KEY."""
    names = tuple(usable_backends() if names is None else names)
    if st.session_state.get(ALL_KEY):
        return names
    chosen = st.session_state.get("sv_backend", "numpy")
    return tuple(b for b in names if b == chosen or not on_request(b))


def _only_the_reference(names: tuple) -> bool:
    """Nothing to compare the reference with (see ALL_KEY): the page has its result, so nothing runs again."""
    return tuple(names) == ("numpy",)


def compare(s: Scenario) -> dict:
    """Backend -> None when it matches the reference on these inputs, else what differs (cached);
    the backends of ``compared_backends``."""
    from specviz.replay.engine import scenario_key

    names = compared_backends()
    if _only_the_reference(names):
        return {"numpy": None}
    return _compare(scenario_key(s), names)


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
    start_loading_backends(IDLE_DELAY_S)  # (end_page has normally scheduled it already)
    if _LOADED.is_set():
        st.rerun(scope="app")  # now the page draws the real badge
    st.info(tr("Comparing with the torch and Triton backends: loading them (the numpy reference result is shown)…",
               "正在与 torch 和 Triton 后端比较：正在加载（先显示 numpy 参考实现的结果）…"), icon=":material/hourglass_top:")


def badge_pending() -> None:
    """The badge's place while the backends load: a note, redrawn every 0.5 s until they are in."""
    _await_backends()


@bounded_cache()
def _compare_call(fn_name: str, args: tuple, kwargs: dict, names: tuple) -> dict:
    import dataclasses

    from specviz.algorithms.backends import get_backend

    def arrays(result):
        if dataclasses.is_dataclass(result):
            result = dataclasses.asdict(result) if not hasattr(result, "as_dict") else result.as_dict()
        if isinstance(result, dict):
            return {k: to_numpy(v) for k, v in result.items()}
        if isinstance(result, tuple):
            return {f"out[{k}]": to_numpy(v) for k, v in enumerate(result)}
        return {"out": to_numpy(result)}

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
        from specviz.replay.engine import result_difference

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
    names = compared_backends()
    if _only_the_reference(names):
        return {"numpy": None}
    args = tuple(np.asarray(a) if isinstance(a, (list, np.ndarray)) else a for a in args)
    return _compare_call(fn_name, args, kwargs, names)


def badge(diffs: dict | None, what: str = "") -> bool:
    """Show the "all backends agree" badge for a ``compare`` / ``compare_call`` result (None: the
    backends are still loading; a note that says so, redrawn until they are in)."""
    if diffs is None:
        badge_pending()
        return False
    names = tr(", ", "、").join(backend_label(b) for b in diffs)
    bad = {b: d for b, d in diffs.items() if d is not None}
    suffix = f" · {what}" if what else ""
    left = [b for b in usable_backends() if b not in diffs]  # usable, not compared (see ALL_KEY)
    if not bad and not left:
        # (zh: a colon, not brackets around labels that carry their own: no nested （…（…）…）)
        st.success(tr("All backends agree ({names}){suffix}", "所有后端结果一致：{names}{suffix}", names=names, suffix=suffix),
                   icon=":material/check_circle:")
        return True
    if not bad and len(diffs) <= 1:  # only the reference ran: nothing was compared, so nothing "agrees"
        _offer_the_rest(left, what)
        return True
    if not bad:
        st.success(tr("The compared backends agree ({names}){suffix}", "参与比较的后端结果一致：{names}{suffix}",
                      names=names, suffix=suffix), icon=":material/check_circle:")
        _offer_the_rest(left, what)
        return True
    for b, d in bad.items():
        if d.startswith("failed: "):  # it raised (engine.compare_backends): it did not compute another answer
            st.error(tr("{b} failed to run these inputs{suffix}: {d}", "{b} 无法运行这些输入{suffix}：{d}", b=b,
                        d=d[len("failed: "):], suffix=suffix), icon=":material/cancel:")
            continue
        st.error(tr("{b} disagrees with the reference{suffix}: {d}", "{b} 与参考实现不一致{suffix}：{d}", b=b, d=d, suffix=suffix),
                 icon=":material/cancel:")
    if left:
        _offer_the_rest(left, what)
    return False


def _compare_all() -> None:
    st.session_state[ALL_KEY] = True


def _offer_the_rest(left: list, what: str) -> None:
    """Say which usable backends the badge did not compare, and a button that compares them too (for
    the rest of the session). The button sits in the page's fragment: pressing it reruns that only."""
    label = tr(", ", "、").join(backend_label(b) for b in left)
    row = st.container(horizontal=True, vertical_alignment="center", wrap=False)  # one block, not 2 columns (3; issue 31)
    if all(_interpreted(b) for b in left):
        row.caption(tr("Not compared yet: {b}. On this server it runs its kernels under the Triton interpreter (slow), so it is "
                        "compared on request.",
                        "尚未比较：{b}。本服务器上它的 kernel 在 Triton 解释器中运行（较慢），因此按需比较。", b=label))
    else:
        row.caption(tr("Not compared yet: {b}. This server has no GPU: {these} on its CPU, so {it_is} compared on request.",
                        "尚未比较：{b}。本服务器没有 GPU：{zh_it}在 CPU 上运行，因此按需比较。", b=label,
                        these="it runs" if len(left) == 1 else "they run", it_is="it is" if len(left) == 1 else "they are",
                        zh_it="它" if len(left) == 1 else "它们"))
    row.button(tr("Compare it too", "也比较它") if len(left) == 1 else tr("Compare them too", "也比较它们"),
               key=f"w_badge_all::{what}", on_click=_compare_all, width="content", icon=":material/compare_arrows:")


@bounded_cache(share=0.1, copies=False)  # the page and the player only read the frames
def _greedy_frames(key: str, backend_name: str, lang: str, b: int) -> list:
    from specviz.replay import playframes

    result = _run(key, backend_name)
    return playframes.greedy_frames(scenario_from_json(key), result, lang, b)


def greedy_frames(s: Scenario, lang: str, b: int = 0, backend_name: str | None = None) -> list:
    """``playframes.greedy_frames`` of ``run(s)``, cached like the run itself (on the scenario's canonical
    JSON, the backend, the language and the request): every frame is a pure function of those, and a
    class editing back and forth between a few scenarios asks for the same frames again and again.
    Call after ``run(s)`` has succeeded."""
    return _greedy_frames(*greedy_frames_key(s, lang, b, backend_name)[1:])


def frames_key(kind, s: Scenario, lang: str, *extra, backend_name: str | None = None) -> tuple:
    """What a page's step-player frames are made from, as a hashable key (the player keeps its packed
    document by it): the frame builder ``kind``, the scenario's canonical JSON, the backend it ran on, the
    language, then anything else the builder reads (``extra``)."""
    from specviz.replay.engine import scenario_key

    return (kind, scenario_key(s), backend_name or backend(), lang, *extra)


def greedy_frames_key(s: Scenario, lang: str, b: int = 0, backend_name: str | None = None) -> tuple:
    """What ``greedy_frames`` depends on: ("greedy", then the arguments of the cached ``_greedy_frames``)."""
    return frames_key("greedy", s, lang, b, backend_name=backend_name)
