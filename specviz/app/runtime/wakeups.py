"""One event-loop wake-up for a burst of a session's script events, not one per element.

Streamlit hands every ForwardMsg a page script draws to the server's event loop with
``loop.call_soon_threadsafe``: a write to the loop's wake-up socket per element, and then another
one per element for "there is data to send" (``Runtime._enqueued_some_message``), made from the
loop's own thread. Under a class (50 sessions rerunning at once on 2 cores) those writes were a
quarter of the server's CPU samples (py-spy over ``benchmarks/bench_class.py``; figures in
benchmarks/README.md, "A class of 50: the wake-ups").

``install()`` changes two methods:
- ``AppSession._call_soon_on_event_loop``: the callbacks go into the session's own FIFO; only the
  first callback of a burst schedules a drain on the loop, ``LINGER_S`` (4 ms) later, and the drain
  runs every callback queued by then, in order. Without the linger an idle loop drained each element
  as soon as it came, so the next one scheduled a drain of its own: ~one wake-up per element all the
  same (179 of 200 elements, ``benchmarks/wakeup_linger.py``); with it, a script's burst of elements
  goes in one. A callback runs at most ``LINGER_S`` after it was queued (plus the loop's own delay);
  callbacks of one session keep their order.
- ``Runtime._enqueued_some_message``: on the loop's thread it sets the "data to send" event
  directly (an ``asyncio.Event.set`` is only legal there, and that is where it is), elsewhere as before.

It reaches into the pinned Streamlit (constraints.txt); ``tests/test_wakeups.py`` checks the shape
and the order of callbacks from threads.

Upstream: no Streamlit issue reports this cost (searched streamlit/streamlit for event-loop wake-ups
and call_soon_threadsafe; none found; one is yet to be filed). The per-event hand-over itself is
Streamlit's design since streamlit/streamlit#4467 (AppSession handles every ScriptRunner event on the
event loop's thread); it is correct, only its cost per element is what this batches.
Checked on: Streamlit 1.67.0 (the pin; ``specviz.app.runtime.CHECKED_ON``).
Without it: nothing visible to one user; a class of 50 on one server waits longer for each redraw
(these wake-up writes were a quarter of the server's CPU samples: benchmarks/README.md).
To drop it: delete this module and its name in ``app_runtime.PATCHES`` when a Streamlit release
batches loop callbacks itself, or whenever ``bench_class.py`` shows no difference without it.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import threading

from specviz.app.runtime.shape_guard import install_once

_log = logging.getLogger(__name__)
UPSTREAM = "none filed (cost of streamlit/streamlit#4467's per-event loop hand-over)"  # what `specviz doctor` prints beside the patch
_CREATE = threading.Lock()  # one drain per session, even when two threads send its first event at once
# How long the first callback of a burst waits for the rest before the drain runs: a rerun draws its
# elements a few per millisecond, and 4 ms is below what a person notices in a redraw (0: drain at once,
# the behaviour before the linger, which benchmarks/wakeup_linger.py compares).
LINGER_S = 0.004


class _Drain:
    """A session's queue of loop callbacks, drained by one scheduled call at a time."""

    __slots__ = ("loop", "pending", "lock", "scheduled")

    def __init__(self, loop):
        self.loop = loop
        self.pending = collections.deque()
        self.lock = threading.Lock()
        self.scheduled = False

    def push(self, callback) -> None:
        linger = LINGER_S
        with self.lock:
            self.pending.append(callback)
            if self.scheduled:
                return
            self.scheduled = True
        try:  # call_later is for the loop's own thread: the one wake-up asks the loop to set the timer
            if linger > 0:
                self.loop.call_soon_threadsafe(self.loop.call_later, linger, self.run)
            else:
                self.loop.call_soon_threadsafe(self.run)
        except RuntimeError:
            with self.lock:
                self.scheduled = False
                self.pending.clear()
            if not self.loop.is_closed():
                raise
            _log.debug("dropped event-loop callbacks: the loop is closed")

    def run(self) -> None:
        while True:
            with self.lock:
                if not self.pending:
                    self.scheduled = False
                    return
                callback = self.pending.popleft()
            try:
                callback()
            except Exception:  # noqa: BLE001  as asyncio would: log it, keep draining the others
                _log.exception("event-loop callback failed")


def install() -> bool:
    """Patch Streamlit once per process; False (and a log line) if its shape is not the known one."""
    ok = install_once("wake-up batching", "_specviz_wakeups", _shape, _patch, _log)
    if ok:
        _rebind_running_runtime()
    return ok


def _rebind_running_runtime() -> None:
    """Hand the running Runtime's session manager (and its sessions) the patched "data to send" callback.

    ``Runtime.__init__`` gives its session manager the *bound* method ``self._enqueued_some_message``,
    and the manager gives that object to every session it creates: it was bound when the server
    started, before app.py's first run installs this patch, so patching the class alone never reached
    a real server (py-spy, chain page: one ``_write_to_self`` per element drawn, ~1/5 of the event
    loop's samples; benchmarks/README.md, "chain5"). Cheap and idempotent: app.py calls ``install()``
    on every run."""
    from streamlit.runtime import runtime

    rt = runtime.Runtime._instance  # None outside a server (AppTest, the CLI)
    mgr = getattr(rt, "_session_mgr", None)
    current = getattr(mgr, "_message_enqueued_callback", None)
    if current is None or getattr(current, "__func__", None) is runtime.Runtime._enqueued_some_message:
        return
    patched = rt._enqueued_some_message
    mgr._message_enqueued_callback = patched
    for info in list(getattr(mgr, "_active_session_info_by_id", {}).values()):  # sessions made before the patch
        session = getattr(info, "session", None)
        if getattr(session, "_message_enqueued_callback", None) is not None:
            session._message_enqueued_callback = patched


def _shape() -> tuple:
    from streamlit.runtime import app_session, runtime

    AppSession, Runtime = app_session.AppSession, runtime.Runtime
    known = (hasattr(AppSession, "_call_soon_on_event_loop") and hasattr(Runtime, "_enqueued_some_message")
             and hasattr(Runtime, "_get_async_objs"))
    return AppSession, None if known else "AppSession / Runtime lack the known methods", (AppSession, Runtime)


def _patch(AppSession, Runtime) -> None:
    def call_soon_on_event_loop(self, callback) -> None:
        drain = self.__dict__.get("_specviz_drain")
        if drain is None:
            with _CREATE:
                drain = self.__dict__.setdefault("_specviz_drain", _Drain(self._event_loop))
        drain.push(callback)

    enqueued = Runtime._enqueued_some_message

    def enqueued_some_message(self) -> None:
        objs = self._get_async_objs()
        try:
            on_loop = asyncio.get_running_loop() is objs.eventloop
        except RuntimeError:  # no loop running in this thread
            on_loop = False
        if on_loop:
            objs.need_send_data.set()
        else:
            enqueued(self)

    AppSession._call_soon_on_event_loop = call_soon_on_event_loop
    Runtime._enqueued_some_message = enqueued_some_message
