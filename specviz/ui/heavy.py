"""Abuse limits for work that costs the server real CPU (Monte Carlo runs, audit pastes).

One tab must not starve a class sharing one server:

* ``cap_trials(requested, rows, vocab)``: Monte Carlo trials per click are bounded so that one
  click handles at most ``MAX_TRIAL_CELLS`` probability cells (trials x rows x vocabulary);
* ``heavy(what)``: a context manager around the computation. Each browser session has a budget
  of ``SESSION_BUDGET_S`` seconds of heavy work per ``WINDOW_S`` (a sliding-window token bucket),
  and at most ``HEAVY_SLOTS`` heavy computations run at once on the server (the rest wait up to
  ``WAIT_S`` and are then refused), so light reruns of other students always find a free core.

Each refusal is a SpecvizError whose message says what to do; pages show it with st.error
(``ui.guard()``). Cache hits cost nothing and are not counted.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time

import streamlit as st

from specviz.errors import SpecvizError

MAX_TRIAL_CELLS = 12_000_000  # trials x rows x vocabulary per click (48 MB per float32 table; benchmarks/bench_worst_scenario.py --mc)


def available_cpus(cgroup_root: str = "/sys/fs/cgroup") -> int:
    """CPUs this process may use: the cgroup CPU quota (a container's limit) when there is one, else
    the CPUs it is scheduled on. ``os.cpu_count()`` reports the host's CPUs inside a container: a
    2-CPU pod on a 64-core node would run 63 heavy computations at once on its 2 CPUs."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = None
    try:  # cgroup v2: "max 100000" or "200000 100000"
        with open(os.path.join(cgroup_root, "cpu.max")) as fh:
            q, period = fh.read().split()[:2]
        if q != "max":
            quota = int(q) / int(period)
    except (OSError, ValueError):
        try:  # cgroup v1
            with open(os.path.join(cgroup_root, "cpu", "cpu.cfs_quota_us")) as fh:
                q = int(fh.read())
            with open(os.path.join(cgroup_root, "cpu", "cpu.cfs_period_us")) as fh:
                period = int(fh.read())
            if q > 0 and period > 0:
                quota = q / period
        except (OSError, ValueError):
            pass
    if quota is not None:
        cpus = min(cpus, max(1, int(quota)))  # a fraction of a CPU still runs one computation at a time
    return max(1, cpus)


CPUS = available_cpus()
HEAVY_SLOTS = max(1, CPUS - 1)  # one CPU stays free for the light reruns of everyone else
WAIT_S = 8.0
SESSION_BUDGET_S = 20.0
WINDOW_S = 60.0
_LOG = "sv_heavy_log"  # (start time, seconds) of this session's recent heavy work: a rate limit, not a result
_SLOTS = threading.BoundedSemaphore(HEAVY_SLOTS)


def cap_trials(requested: int, rows: int, vocab: int) -> int:
    """The trial count one click may run: ``requested``, lowered so trials x rows x vocab <= MAX_TRIAL_CELLS."""
    per_trial = max(1, int(rows) * int(vocab))
    return max(1, min(int(requested), MAX_TRIAL_CELLS // per_trial))


def _recent(now: float) -> list:
    return [(t, d) for t, d in st.session_state.get(_LOG, ()) if now - t < WINDOW_S]


@contextlib.contextmanager
def heavy(what: str):
    """Run a heavy computation under the per-session budget and the server-wide slot limit."""
    now = time.monotonic()
    log = _recent(now)
    used = sum(d for _, d in log)
    if used >= SESSION_BUDGET_S:
        wait = max(1, int(WINDOW_S - (now - log[0][0]) + 0.999)) if log else 1
        raise SpecvizError(what, f"this tab used {used:.0f} s of server time in the last minute (the limit is "
                                 f"{SESSION_BUDGET_S:.0f} s, so a class can share the server): wait {wait} s and try again")
    if not _SLOTS.acquire(timeout=WAIT_S):
        raise SpecvizError(what, f"the server is busy with {HEAVY_SLOTS} other heavy computation(s): try again in a few seconds")
    t0 = time.monotonic()
    try:
        yield
    finally:
        _SLOTS.release()
        log.append((now, time.monotonic() - t0))
        try:
            st.session_state[_LOG] = tuple(log[-64:])
        except Exception:  # noqa: BLE001  outside a session (a bare script): nothing to record
            pass
