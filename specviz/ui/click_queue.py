"""No press of a button is swallowed: a second press that arrives while the first one's rerun waits is queued.

Streamlit folds every rerun request that arrives before the script reaches its next yield point into the
one pending request. For value widgets that is right (the newest value wins), but a button's trigger is a
single boolean: two presses of "Add child" in one window became one press, one child, and a lecturer's
burst of four clicks added three (CI, stop 23; issue 20, "no lost click, ever").

``install()`` changes that one case only. When a request would fold a button trigger into a pending
request that already carries the same button's trigger, the request waits in a queue instead; when the
script runner takes the pending request, the next queued one becomes pending, so the run it starts is
preempted at its first yield point and every press runs its callback once, in order. Everything else
(values, different buttons, fragments, stops) folds exactly as Streamlit does: requests that arrive while
the queue is non-empty fold into its last entry with Streamlit's own rule.

This reaches into ``ScriptRequests``, a private class of the pinned Streamlit (constraints.txt);
``tests/test_click_queue.py`` drives it directly and fails if its shape changes.
"""
from __future__ import annotations

import functools
import logging

_log = logging.getLogger(__name__)
_QUEUE = "_specviz_click_queue"
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


def install() -> bool:
    """Patch Streamlit's ScriptRequests once per process; False (and a log line) if its shape is not the known one."""
    try:
        from streamlit.runtime.scriptrunner_utils import script_requests as sr
    except ImportError:  # pragma: no cover - Streamlit moved the module
        _log.warning("click queue not installed: streamlit's script_requests module is gone")
        return False
    cls = sr.ScriptRequests
    if getattr(cls, "_specviz_click_queue", False):
        return True
    needed = ("_request_rerun_locked", "on_scriptrunner_yield", "on_scriptrunner_ready", "request_stop")
    if not all(hasattr(cls, n) for n in needed) or not hasattr(sr, "ScriptRequestType"):
        _log.warning("click queue not installed: ScriptRequests lacks %s", needed)
        return False
    RERUN, STOP = sr.ScriptRequestType.RERUN, sr.ScriptRequestType.STOP
    fold = cls._request_rerun_locked

    def _fold_into(data, new_data):
        """Streamlit's own folding of ``new_data`` into ``data`` (a pending request), on a scratch instance."""
        scratch = cls()
        scratch._state, scratch._rerun_data = RERUN, data
        fold(scratch, new_data)
        return scratch._rerun_data

    @functools.wraps(fold)
    def request_rerun_locked(self, new_data):
        queue = self.__dict__.setdefault(_QUEUE, [])
        if self._state == STOP:
            return fold(self, new_data)
        if queue:  # older presses wait: the new request goes behind them
            if _active_triggers(queue[-1]) & _active_triggers(new_data):
                queue.append(new_data)
            else:
                queue[-1] = _fold_into(queue[-1], new_data)
            return True
        if self._state == RERUN and _active_triggers(self._rerun_data) & _active_triggers(new_data):
            queue.append(new_data)  # folding would swallow the pending press of the same button
            return True
        return fold(self, new_data)

    def _promote(self, request):
        """After the runner took a RERUN, the next queued request becomes the pending one."""
        if request is None or request.type != RERUN:
            return request
        with self._lock:
            queue = self.__dict__.get(_QUEUE)
            if queue and self._state != STOP:
                nxt = queue.pop(0)
                if self._state == RERUN:  # cannot happen while the queue is non-empty; fold to be safe
                    nxt = _fold_into(nxt, self._rerun_data)
                self._state, self._rerun_data = RERUN, nxt
        return request

    on_yield, on_ready, stop = cls.on_scriptrunner_yield, cls.on_scriptrunner_ready, cls.request_stop

    @functools.wraps(on_yield)
    def on_scriptrunner_yield(self):
        return _promote(self, on_yield(self))

    @functools.wraps(on_ready)
    def on_scriptrunner_ready(self):
        return _promote(self, on_ready(self))

    @functools.wraps(stop)
    def request_stop(self):
        stop(self)  # takes the (non-reentrant) lock itself; requests after it are refused
        self.__dict__.pop(_QUEUE, None)

    cls._request_rerun_locked = request_rerun_locked
    cls.on_scriptrunner_yield = on_scriptrunner_yield
    cls.on_scriptrunner_ready = on_scriptrunner_ready
    cls.request_stop = request_stop
    cls._specviz_click_queue = True
    return True
