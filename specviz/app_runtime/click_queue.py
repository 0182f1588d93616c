"""No click is lost: every edit's callback runs, once, in order, however fast they come and however busy the server.

Two ways Streamlit loses an edit, both seen in chromium (benchmarks/README.md, "No lost click"):

1. **Folding.** Every rerun request that arrives before the script reaches its next yield point is folded
   into the one pending request. For value widgets the newest value wins, which is right, but a button's
   trigger is a single boolean: two presses of "Add child" in one window became one press, one child
   (CI, stop 23).
2. **Preempted callbacks.** A request taken by the script runner runs its widgets' callbacks first. Any
   read or write of session state inside a callback is a yield point, and a request pending there
   interrupts the callback with a RerunException: the callback dies half done, and the edit it was
   applying is gone (the newer request carries the new widget values, which now equal the old ones, so
   no callback runs for them). Under a class's load on one server, where a callback waits for the
   interpreter lock, 23 of 25 bursts of 4 "Add child" clicks lost one or more
   (``bench_click_bursts.py --class-students 50``).

``install()`` changes both:

* A request that would fold a button's trigger into a pending request carrying the same button's trigger
  waits in a queue instead.
* From the moment the runner takes a request with widget input until that request's callbacks have run,
  the runner is *held*: every new request waits in the queue, so nothing can preempt the callbacks.
  After them (``SafeSessionState.on_script_will_rerun`` returns), the first queued request becomes the
  pending one and preempts the run at its next yield point, before the page is drawn; so each request
  runs its callbacks once, in order.

Requests that arrive while the queue is non-empty fold into its last entry with Streamlit's own rule
(values, different buttons, fragments), unless both carry the same button's trigger. A run that ends
without reaching its callbacks (the runner asks for the next request) releases the hold too.

This reaches into ``ScriptRequests`` and ``SafeSessionState``, private classes of the pinned Streamlit
(constraints.txt); ``tests/test_click_queue.py`` drives them directly and fails if their shape changes.

Upstream: a rerun request stops the running script at its next yield point, session-state writes
included, a deliberate trade for responsiveness (streamlit/streamlit#10578, open: a maintainer
confirms an interrupted session-state write is not protected); requests that arrive before the
script reaches a widget are folded into one, so a callback sees the folded state
(streamlit/streamlit#8365, the same folding; #8291 shows presses of two buttons folded into one run).
Checked on: Streamlit 1.67.0 (the pin; ``specviz.app_runtime.CHECKED_ON``).
Without it: a student's second quick press of "Add child" adds one child, not two, and under a class's
load an edit applied in a callback can vanish (the press is shown, the tree does not change).
To drop it: when a Streamlit release queues requests instead of folding and preempting them (or lets an
app mark callbacks as uninterruptible), delete this module and its name in ``app_runtime.PATCHES``; keep
``tests/test_browser_clicks.py``, which must then pass against Streamlit alone.
"""
from __future__ import annotations

import dataclasses
import functools
import logging

_log = logging.getLogger(__name__)
UPSTREAM = "streamlit/streamlit#10578 (a rerun interrupts callbacks), #8365 (requests folded)"  # what `specviz doctor` prints beside the patch
_QUEUE = "_specviz_click_queue"
_HOLD = "_specviz_hold"  # the request the runner took has widget input whose callbacks have not run yet
_TRIGGERS = ("trigger_value", "string_trigger_value", "json_trigger_value", "chat_input_value")


def _active_triggers(rerun_data) -> set[str]:
    """Ids of widgets whose trigger is set in ``rerun_data``."""
    states = getattr(rerun_data, "widget_states", None)
    out = set()
    for w in (states.widgets if states is not None else ()):
        kind = w.WhichOneof("value")
        if kind in _TRIGGERS:
            v = getattr(w, kind)
            if (v.ListFields() if hasattr(v, "ListFields") else v):
                out.add(w.id)
    return out


def _has_input(rerun_data) -> bool:
    """Whether the runner calls on_script_will_rerun (widget callbacks) for this request: its own test."""
    return (rerun_data.widget_states is not None or rerun_data.replay_trigger_states is not None
            or rerun_data.replay_trigger_values is not None)


_FOLD = None  # Streamlit's own ScriptRequests._request_rerun_locked (set by install)


def release(requests) -> None:
    """The callbacks of the request ``requests`` handed to the runner have run: let the next queued one in."""
    with requests._lock:
        requests.__dict__[_HOLD] = False
        _promote_locked(requests)


def _promote_locked(requests) -> None:
    """With the lock held and nothing pending: the first queued request becomes the pending one."""
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

    queue = requests.__dict__.get(_QUEUE)
    if queue and requests._state == ScriptRequestType.CONTINUE:
        _FOLD(requests, queue.pop(0))  # Streamlit's own fold from CONTINUE (fragment id, replay states)


def install() -> bool:
    """Patch Streamlit once per process; False (and a log line) if its shape is not the known one."""
    try:
        from streamlit.runtime.scriptrunner_utils import script_requests as sr
        from streamlit.runtime.state.safe_session_state import SafeSessionState
    except ImportError:  # pragma: no cover - Streamlit moved the modules
        _log.warning("click queue not installed: streamlit's script_requests / safe_session_state modules are gone")
        return False
    cls = sr.ScriptRequests
    if getattr(cls, "_specviz_click_queue", False):
        return True
    needed = ("_request_rerun_locked", "on_scriptrunner_yield", "on_scriptrunner_ready", "request_stop")
    fields = {f.name for f in dataclasses.fields(sr.RerunData)} if dataclasses.is_dataclass(sr.RerunData) else set()
    if (not all(hasattr(cls, n) for n in needed) or not hasattr(sr, "ScriptRequestType")
            or not hasattr(SafeSessionState, "on_script_will_rerun")
            or not {"widget_states", "replay_trigger_states", "replay_trigger_values"} <= fields):
        _log.warning("click queue not installed: ScriptRequests / SafeSessionState / RerunData lack %s", needed)
        return False
    global _FOLD
    RERUN, STOP = sr.ScriptRequestType.RERUN, sr.ScriptRequestType.STOP
    fold = _FOLD = cls._request_rerun_locked

    def _fold_into(data, new_data):
        """Streamlit's own folding of ``new_data`` into ``data`` (a queued request), on a scratch instance."""
        scratch = cls()
        scratch._state, scratch._rerun_data = RERUN, data
        fold(scratch, new_data)
        return scratch._rerun_data

    def _enqueue(queue, new_data):
        if queue and not (_active_triggers(queue[-1]) & _active_triggers(new_data)):
            queue[-1] = _fold_into(queue[-1], new_data)
        else:
            queue.append(new_data)

    @functools.wraps(fold)
    def request_rerun_locked(self, new_data):
        queue = self.__dict__.setdefault(_QUEUE, [])
        if self._state == STOP:
            return fold(self, new_data)
        if queue or self.__dict__.get(_HOLD):  # older requests, or callbacks still to run: wait behind them
            _enqueue(queue, new_data)
            return True
        if self._state == RERUN and _active_triggers(self._rerun_data) & _active_triggers(new_data):
            queue.append(new_data)  # folding would swallow the pending press of the same button
            return True
        return fold(self, new_data)

    def _taken(self, request):
        """The runner took ``request``: hold until its callbacks have run, or let the next one in now."""
        if request is None or request.type != RERUN:
            return request
        with self._lock:
            if self._state == RERUN:  # a request slipped in between the take and this lock: it waits in line
                self.__dict__.setdefault(_QUEUE, []).insert(0, self._rerun_data)
                self._state = sr.ScriptRequestType.CONTINUE
            self.__dict__[_HOLD] = _has_input(request.rerun_data)
            if not self.__dict__[_HOLD]:
                _promote_locked(self)
        return request

    on_yield, on_ready, stop = cls.on_scriptrunner_yield, cls.on_scriptrunner_ready, cls.request_stop

    @functools.wraps(on_yield)
    def on_scriptrunner_yield(self):
        if self.__dict__.get(_HOLD):  # callbacks running: nothing may preempt them (and nothing is pending)
            return None if self._state != STOP else on_yield(self)
        return _taken(self, on_yield(self))

    @functools.wraps(on_ready)
    def on_scriptrunner_ready(self):
        release(self)  # the run is over, its callbacks with it
        return _taken(self, on_ready(self))

    @functools.wraps(stop)
    def request_stop(self):
        stop(self)  # takes the (non-reentrant) lock itself; requests after it are refused
        self.__dict__.pop(_QUEUE, None)
        self.__dict__[_HOLD] = False

    will_rerun = SafeSessionState.on_script_will_rerun

    @functools.wraps(will_rerun)
    def on_script_will_rerun(self, *args, **kwargs):
        try:
            return will_rerun(self, *args, **kwargs)
        finally:
            from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

            ctx = get_script_run_ctx(suppress_warning=True)
            requests = getattr(ctx, "script_requests", None)
            if isinstance(requests, cls):
                release(requests)

    cls._request_rerun_locked = request_rerun_locked
    cls.on_scriptrunner_yield = on_scriptrunner_yield
    cls.on_scriptrunner_ready = on_scriptrunner_ready
    cls.request_stop = request_stop
    SafeSessionState.on_script_will_rerun = on_script_will_rerun
    cls._specviz_click_queue = True
    return True
