"""Abuse limits for work that costs the server real CPU (Monte Carlo runs, audit pastes).

One tab must not starve a class sharing one server:

* ``cap_trials(requested, rows, vocab)``: Monte Carlo trials per click are bounded so that one
  click handles at most ``MAX_TRIAL_CELLS`` probability cells (trials x rows x vocabulary);
* ``heavy(what)``: a context manager around the computation. Each browser session has a budget
  of ``SESSION_BUDGET_S`` seconds of heavy work per ``WINDOW_S`` (a sliding-window token bucket),
  and at most ``HEAVY_SLOTS`` heavy computations run at once (``Slots``): the rest wait in a
  first-come-first-served line, see their place on the page, and get their answer when a slot frees;
* ``cached(what, fn, *args)``: the pages' entry point for a ``bounded_cache`` function. A cache hit
  returns at once, outside the slots and the budget (it is no work: it must never wait behind
  another tab's computation); a miss runs under ``heavy(what)``.

The limits, per worker process and per machine (one ``specviz serve``):

* slots: ``HEAVY_SLOTS = available_cpus() - 1`` (at least 1) for the whole machine. ``serve`` gives its
  workers one lock directory (SPECVIZ_HEAVY_DIR) and every slot is an flock there, so N workers
  together run at most HEAVY_SLOTS heavy computations, whichever worker their students sit on, and one
  core's worth stays free for everybody's light reruns. (A split of the slots by worker count was
  rejected: on 2 cores it leaves 1 slot for 2 workers, and it idles a core whenever the heavy
  students all sit on one worker.) A plain ``specviz app`` is one process: the same count, in-process.
* per tab: one slot at a time (a tab runs one script at a time) and ``SESSION_BUDGET_S`` s of heavy CPU
  per ``WINDOW_S`` s; past that its next heavy request is refused with a message saying how long to wait
  (the only refusal: waiting for a slot is never refused).

The budget refusal is a SpecvizError; pages show it with st.error (``ui.guard()``).
"""
from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import threading
import time

import streamlit as st

from specviz.base.errors import SpecvizError
from specviz.app.ui.i18n import tr

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
WAIT_NOTE_S = 0.5  # how often a queued request redraws its place (each redraw also lets a newer edit of that tab stop the wait)
SESSION_BUDGET_S = 20.0
WINDOW_S = 60.0
_LOG = "sv_heavy_log"  # (start time, seconds) of this session's recent heavy work: a rate limit, not a result


class Slots:
    """At most ``n`` heavy computations at once, served first come, first served.

    Within a process a FIFO queue of tickets: only the oldest waiter may take a free slot, so a tab that
    asks again and again goes to the back each time and cannot keep the slots from the others (a tab runs
    one script at a time, so it holds at most one slot). With ``lock_dir`` the ``n`` slots are also
    machine-wide: slot i is an ``fcntl.flock`` on ``lock_dir/heavy-i.lock``, shared by every worker process
    of one ``specviz serve`` (it passes SPECVIZ_HEAVY_DIR), and released by the kernel if a worker dies.
    """

    def __init__(self, n: int, lock_dir: str | None = None):
        self.n = max(1, int(n))
        self.lock_dir = lock_dir
        self._cv = threading.Condition()
        self._queue: collections.deque = collections.deque()
        self._held = 0

    def _take_file(self):
        """An open, exclusively locked slot file; None when every slot file is locked (by any worker)."""
        if not self.lock_dir:
            return -1
        for i in range(self.n):
            fd = os.open(os.path.join(self.lock_dir, f"heavy-{i}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except OSError:
                os.close(fd)
        return None

    def acquire(self, on_wait=None, poll: float = 0.05):
        """Wait for a slot (no time limit: a queued request gets its answer); ``on_wait(place)`` is called
        while waiting, place 1 = next. An exception from on_wait (a newer edit stops this run) leaves the queue."""
        ticket = object()
        with self._cv:
            self._queue.append(ticket)
        try:
            while True:
                with self._cv:
                    if self._queue[0] is ticket and self._held < self.n:
                        fd = self._take_file()
                        if fd is not None:
                            self._queue.popleft()
                            self._held += 1
                            self._cv.notify_all()
                            return fd
                    place = self._queue.index(ticket) + 1
                if on_wait is not None:
                    on_wait(place)
                with self._cv:
                    self._cv.wait(poll)
        except BaseException:
            with self._cv:
                if ticket in self._queue:
                    self._queue.remove(ticket)
                self._cv.notify_all()
            raise

    def release(self, fd) -> None:
        if fd is not None and fd >= 0:
            os.close(fd)  # closing the descriptor drops its flock
        with self._cv:
            self._held -= 1
            self._cv.notify_all()

    def waiting(self) -> int:
        with self._cv:
            return len(self._queue)


_SLOTS = Slots(HEAVY_SLOTS, os.environ.get("SPECVIZ_HEAVY_DIR") or None)


def cap_trials(requested: int, rows: int, vocab: int) -> int:
    """The trial count one click may run: ``requested``, lowered so trials x rows x vocab <= MAX_TRIAL_CELLS."""
    per_trial = max(1, int(rows) * int(vocab))
    return max(1, min(int(requested), MAX_TRIAL_CELLS // per_trial))


def _recent(now: float) -> list:
    return [(t, d) for t, d in st.session_state.get(_LOG, ()) if now - t < WINDOW_S]


def _queue_note():
    """(on_wait for Slots.acquire, close): while queued, a line on the page says so, with the place in line;
    close() removes it. The line is drawn only when the request has to wait."""
    t0 = time.monotonic()
    shown = {"at": -1.0, "box": None}

    def note(place: int) -> None:
        waited = time.monotonic() - t0
        if waited - shown["at"] < WAIT_NOTE_S:
            return
        shown["at"] = waited
        if shown["box"] is None:
            shown["box"] = st.empty()
        shown["box"].info(tr("Queued for a free CPU: place {k} (waiting {s:.0f} s). Your result comes when it is done.",
                             "正在排队等待空闲 CPU：第 {k} 位（已等待 {s:.0f} 秒）。轮到时自动给出结果。", k=place, s=waited),
                          icon=":material/hourglass_top:")

    def close() -> None:
        if shown["box"] is not None:
            shown["box"].empty()
    return note, close


@contextlib.contextmanager
def heavy(what: str):
    """Run a heavy computation under the per-session budget and the machine-wide slots. A request that
    finds every slot busy waits in line (and says so on the page); it is never refused for that."""
    now = time.monotonic()
    log = _recent(now)
    used = sum(d for _, d in log)
    if used >= SESSION_BUDGET_S:
        wait = max(1, int(WINDOW_S - (now - log[0][0]) + 0.999)) if log else 1
        raise SpecvizError(what, tr("this tab used {u:.0f} s of server time in the last minute (the limit is {b:.0f} s, so a "
                                    "class can share the server): wait {w} s and try again",
                                    "此标签页在最近一分钟内已使用 {u:.0f} 秒服务器时间（上限 {b:.0f} 秒，以便全班共享服务器）："
                                    "请等待 {w} 秒后重试", u=used, b=SESSION_BUDGET_S, w=wait))
    note, close = _queue_note()
    try:
        fd = _SLOTS.acquire(on_wait=note)
    finally:
        close()
    t0 = time.monotonic()
    try:
        yield
    finally:
        _SLOTS.release(fd)
        log.append((now, time.monotonic() - t0))
        try:
            st.session_state[_LOG] = tuple(log[-64:])
        except Exception:  # noqa: BLE001  outside a session (a bare script): nothing to record
            pass


def cached(what: str, fn, *args):
    """``fn(*args)`` for a ``bounded_cache`` function: a cache hit returns at once (no slot, no budget: it is
    no work, and must never wait behind another tab's computation); a miss runs under ``heavy(what)``."""
    if fn.contains(*args):
        return fn(*args)  # (evicted in between: recomputed outside a slot, once; rare and bounded by the cap)
    with heavy(what):
        return fn(*args)
