"""The chosen backend, cached runs, and the "all backends agree" badge (engine.compare_backends).
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from specviz.errors import BackendUnavailable, SpecvizError
from specviz.scenario import Scenario, scenario_from_json
from specviz.ui.guard import show_error
from specviz.ui.i18n import term, tr
from specviz.ui.state import widget
from specviz.ui.tensors import to_numpy

# -------------------------------------------------------------------------------------------
# Backends
# -------------------------------------------------------------------------------------------

@st.cache_resource(show_spinner=False)
def available_backends() -> dict:
    """Backend -> None when usable, else why not (cached for the server's life)."""
    from specviz.backends import available_backends as avail

    return avail()


def usable_backends() -> list[str]:
    return [b for b, why in available_backends().items() if why is None]


def backend_label(name: str) -> str:
    from specviz.backends import backend_label as label

    why = available_backends().get(name)
    return label(name) if why is None else f"{name} ({tr('unavailable', '不可用')})"


def backend() -> str:
    """The chosen backend (falls back to numpy when the chosen one cannot run here)."""
    name = st.session_state.get("sv_backend", "numpy")
    return name if available_backends().get(name) is None else "numpy"


def backend_selector() -> str:
    """Sidebar select box of every backend; an unavailable one says why and numpy is used."""
    names = list(available_backends())
    name = widget(st.sidebar.selectbox, term("backend"), "sv_backend", "numpy", options=names, format_func=backend_label)
    why = available_backends().get(name)
    if why is not None:
        st.sidebar.warning(tr("{b} cannot run here: {why}. Using numpy.", "{b} 无法在此运行：{why}。改用 numpy。", b=name, why=why))
    return backend()


@st.cache_data(show_spinner=False, max_entries=256)
def _run(text: str, backend_name: str):
    from specviz.engine import run_scenario

    return run_scenario(scenario_from_json(text), backend_name)


def run(s: Scenario, backend_name: str | None = None):
    """``engine.run_scenario`` on the chosen backend (cached on the scenario JSON), or None after st.error."""
    try:
        return _run(s.to_json(indent=None), backend_name or backend())
    except (SpecvizError, BackendUnavailable) as exc:
        show_error(exc)
        return None


@st.cache_data(show_spinner=False, max_entries=256)
def _compare(text: str, names: tuple) -> dict:
    from specviz.engine import compare_backends

    return compare_backends(scenario_from_json(text), list(names))


def compare(s: Scenario) -> dict:
    """Backend -> None when it matches the reference on these inputs, else what differs (cached)."""
    return _compare(s.to_json(indent=None), tuple(usable_backends()))


def backend_badge(s: Scenario) -> bool:
    """The "all backends agree" badge for the current inputs; returns True when they agree."""
    try:
        diffs = compare(s)
    except SpecvizError as exc:
        show_error(exc)
        return False
    return badge(diffs)


@st.cache_data(show_spinner=False, max_entries=256)
def _compare_call(fn_name: str, args: tuple, kwargs: dict, names: tuple) -> dict:
    import dataclasses

    from specviz.backends import get_backend

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
        from specviz.engine import result_difference

        diff = result_difference(want, got)
        out[name] = diff
    return out


def compare_call(fn_name: str, *args, **kwargs) -> dict:
    """Run one API function (spec/API.md) on every usable backend; backend -> None when it equals
    the numpy reference (integers exactly, floats within 1e-6), else what differs. Cached.

    Positional arguments are numpy arrays (converted to torch tensors for the other backends).
    """
    args = tuple(np.asarray(a) if isinstance(a, (list, np.ndarray)) else a for a in args)
    return _compare_call(fn_name, args, kwargs, tuple(usable_backends()))


def badge(diffs: dict, what: str = "") -> bool:
    """Show the "all backends agree" badge for a ``compare`` / ``compare_call`` result."""
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
