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

**Bounded** (issue 35 item 2: one tab flooding its websocket with presses, each padded with 1 MB under
a widget id the page never drew, grew a worker by 1.4 GB, and held it):

* a request's widget states for ids this session's page never drew are dropped as it arrives, once the
  session has drawn its page (before that, e.g. the first request after a failover, every state is kept:
  ``specviz.app.runtime.failover`` replays it after the first run); the request is copied out of the websocket
  message, so a dropped state frees its bytes at once;
* at most ``MAX_QUEUED`` requests and ``MAX_QUEUED_BYTES`` of widget states wait per session, and a session
  sends at most ``RATE_PER_S`` requests a second after a burst of ``BURST``: a request beyond any of these is
  refused (dropped, and logged once per flood), and the tab's next run says so (``take_refused``). Only
  that session is bounded: every other tab is untouched.

This reaches into ``ScriptRequests`` and ``SafeSessionState``, private classes of the pinned Streamlit
(constraints.txt); ``tests/test_click_queue.py`` drives them directly and fails if their shape changes.

Upstream: a rerun request stops the running script at its next yield point, session-state writes
included, a deliberate trade for responsiveness (streamlit/streamlit#10578, open: a maintainer
confirms an interrupted session-state write is not protected); requests that arrive before the
script reaches a widget are folded into one, so a callback sees the folded state
(streamlit/streamlit#8365, the same folding; #8291 shows presses of two buttons folded into one run).
Checked on: Streamlit 1.67.0 (the pin; ``specviz.app.runtime.CHECKED_ON``).
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
import time

from specviz.app.runtime.shape_guard import install_once

_log = logging.getLogger(__name__)
UPSTREAM = "streamlit/streamlit#10578 (a rerun interrupts callbacks), #8365 (requests folded)"  # what `specviz doctor` prints beside the patch
_QUEUE = "_specviz_click_queue"
_HOLD = "_specviz_hold"  # the request the runner took has widget input whose callbacks have not run yet
_TRIGGERS = ("trigger_value", "string_trigger_value", "json_trigger_value", "chat_input_value")
_REFUSED = "_specviz_refused"  # requests refused since the tab was last told
# Per session. 64 requests: a burst of 40 presses of one button (a student's fastest) is still applied press
# by press; 4 MB: a page's widget states are a few KB (the largest, a pasted scenario, is bounded by the
# text areas' max_chars), so 64 of the largest real requests fit.
MAX_QUEUED = 64
MAX_QUEUED_BYTES = 4 << 20
# And at most RATE_PER_S requests a second per session, after a burst of BURST (a token bucket): a student's
# fastest is a burst of 40 presses, then a few a second; a script sending 60 a second for a minute kept a
# worker's interpreter busy enough to slow every other tab's rerun ~10x (benchmarks/bench_flood.py).
RATE_PER_S = 10.0
BURST = 2 * MAX_QUEUED
_BUCKET = "_specviz_bucket"  # (tokens, time.monotonic() of the last refill)


def _size(rerun_data) -> int:
    states = getattr(rerun_data, "widget_states", None)
    return states.ByteSize() if states is not None else 0


_RATE_REFUSED: dict = {}  # session id -> requests refused by its rate, not yet told to the tab
_RATE_LOGGED: set = set()  # session ids whose current flood was logged


def _over_rate(session) -> bool:
    """Take one token of this session's bucket (kept on the AppSession: a script runner, with its requests and
    queue, lives for one run only); True, counted for the tab, when there is none."""
    now = time.monotonic()
    tokens, last = session.__dict__.get(_BUCKET, (float(BURST), now))
    tokens = min(float(BURST), tokens + (now - last) * RATE_PER_S)
    if tokens >= 1.0:
        session.__dict__[_BUCKET] = (tokens - 1.0, now)
        return False
    session.__dict__[_BUCKET] = (tokens, now)
    sid = getattr(session, "id", None)
    if len(_RATE_REFUSED) >= 4096 and sid not in _RATE_REFUSED:  # sessions gone before being told
        _RATE_REFUSED.clear()
        _RATE_LOGGED.clear()
    _RATE_REFUSED[sid] = _RATE_REFUSED.get(sid, 0) + 1
    if sid not in _RATE_LOGGED:
        _RATE_LOGGED.add(sid)
        _log.warning("a tab sends more than %g requests a second (after a burst of %d): refusing the excess",
                     RATE_PER_S, BURST)
    return True


_LOGGED = "_specviz_refusals_logged"  # which kinds of refusal were logged since the tab was last told


def _refuse(requests, message: str, *args) -> None:
    """Count a refused request for the tab; log each kind once per flood (until the tab is told)."""
    requests.__dict__[_REFUSED] = requests.__dict__.get(_REFUSED, 0) + 1
    logged = requests.__dict__.setdefault(_LOGGED, set())
    if message not in logged:
        logged.add(message)
        _log.warning(message, *args)


def take_refused() -> int:
    """In a script run: how many of this tab's requests were refused (queue full) since the last call."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    sid = getattr(ctx, "session_id", None)
    by_rate = _RATE_REFUSED.pop(sid, 0) if sid is not None else 0
    if by_rate:
        _RATE_LOGGED.discard(sid)
    requests = getattr(ctx, "script_requests", None)
    if requests is None or not requests.__dict__.get(_REFUSED):
        return by_rate
    with requests._lock:
        requests.__dict__.pop(_LOGGED, None)
        return by_rate + requests.__dict__.pop(_REFUSED, 0)


def tell_refused() -> int:
    """In a script run (app.py, every page): tell this tab, in its language, how many of its requests were
    refused since it was last told (a flood of presses); returns that number."""
    n = take_refused()
    if n:
        import streamlit as st

        from specviz.app.runtime.i18n import tr

        st.warning(tr("{n} of this tab's clicks or edits were refused: too many arrived at once (at most {m} "
                      "wait per tab). Wait until the page has finished running, then try again.",
                      "此标签页有 {n} 次点击或编辑被拒绝：同时到达的太多（每个标签页最多排队 {m} 个）。"
                      "请等页面运行完毕后再试。", n=n, m=MAX_QUEUED), icon=":material/block:")
    return n


def drawn_only(client_state, known) -> object:
    """A copy of ``client_state`` (a ClientState proto) keeping only the widget states whose id is in
    ``known`` (the widgets this session has drawn), or all of them when ``known`` is empty (nothing drawn
    yet). A copy, never an edit in place: the queued request must not keep the websocket message alive."""
    from streamlit.proto.ClientState_pb2 import ClientState

    states = client_state.widget_states
    kept = [w for w in states.widgets if not known or w.id in known]
    client_state.ClearField("widget_states")  # (the message is this request's alone; failover copies its own)
    out = ClientState()
    out.CopyFrom(client_state)
    out.widget_states.widgets.extend(kept)
    return out


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
    return install_once("click queue", "_specviz_click_queue", _shape, _patch, _log)


def _shape() -> tuple:
    from streamlit.runtime.scriptrunner_utils import script_requests as sr
    from streamlit.runtime.state.safe_session_state import SafeSessionState

    cls = sr.ScriptRequests
    needed = ("_request_rerun_locked", "on_scriptrunner_yield", "on_scriptrunner_ready", "request_stop")
    fields = {f.name for f in dataclasses.fields(sr.RerunData)} if dataclasses.is_dataclass(sr.RerunData) else set()
    known = (all(hasattr(cls, n) for n in needed) and hasattr(sr, "ScriptRequestType")
             and hasattr(SafeSessionState, "on_script_will_rerun")
             and {"widget_states", "replay_trigger_states", "replay_trigger_values"} <= fields)
    return cls, None if known else f"ScriptRequests / SafeSessionState / RerunData lack {needed}", (sr, SafeSessionState)


def _patch(sr, SafeSessionState) -> None:
    cls = sr.ScriptRequests
    global _FOLD
    RERUN, STOP = sr.ScriptRequestType.RERUN, sr.ScriptRequestType.STOP
    fold = _FOLD = cls._request_rerun_locked

    def _fold_into(data, new_data):
        """Streamlit's own folding of ``new_data`` into ``data`` (a queued request), on a scratch instance."""
        scratch = cls()
        scratch._state, scratch._rerun_data = RERUN, data
        fold(scratch, new_data)
        return scratch._rerun_data

    def _full(self, queue, new_data) -> bool:
        """Whether ``new_data`` would make this session's queue longer or larger than its bound; if so it
        is refused: counted for the tab (``take_refused``) and logged at the start of each flood."""
        if len(queue) < MAX_QUEUED and sum(map(_size, queue)) + _size(new_data) <= MAX_QUEUED_BYTES:
            return False
        _refuse(self, "a tab's click queue is full (%d requests, %d bytes at most): refusing its requests "
                "until it drains", MAX_QUEUED, MAX_QUEUED_BYTES)
        return True

    @functools.wraps(fold)
    def request_rerun_locked(self, new_data):
        queue = self.__dict__.setdefault(_QUEUE, [])
        if self._state == STOP:
            return fold(self, new_data)
        if queue or self.__dict__.get(_HOLD):  # older requests, or callbacks still to run: wait behind them
            if queue and not (_active_triggers(queue[-1]) & _active_triggers(new_data)):
                if not _full(self, queue[:-1], new_data):  # (the fold takes the newer values: about its size)
                    queue[-1] = _fold_into(queue[-1], new_data)
            elif not _full(self, queue, new_data):
                queue.append(new_data)
            return True  # (False would make Streamlit start a second script runner for this session)
        if self._state == RERUN and _active_triggers(self._rerun_data) & _active_triggers(new_data):
            if not _full(self, queue, new_data):
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

    from streamlit.runtime.app_session import AppSession

    app_rerun = AppSession.request_rerun

    @functools.wraps(app_rerun)
    def request_rerun(self, client_state):
        if client_state is not None and _over_rate(self):
            return None  # refused: this tab only (a script runner lives one run; the session keeps the bucket)
        if client_state is not None:
            widgets = getattr(getattr(getattr(self, "_session_state", None), "_new_widget_state", None),
                              "widget_metadata", None)
            client_state = drawn_only(client_state, widgets if widgets is not None else ())
        return app_rerun(self, client_state)

    AppSession.request_rerun = request_rerun
    cls._request_rerun_locked = request_rerun_locked
    cls.on_scriptrunner_yield = on_scriptrunner_yield
    cls.on_scriptrunner_ready = on_scriptrunner_ready
    cls.request_stop = request_stop
    SafeSessionState.on_script_will_rerun = on_script_will_rerun
