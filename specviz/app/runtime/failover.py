"""The first edit after a failover is applied, not dropped.

Behind ``specviz serve`` (HAProxy, N workers), a tab whose worker died reconnects to another worker. The
browser asks to resume its old session (its id in the websocket handshake); the new worker has never seen
it and opens a fresh one, and the browser, believing it resumed, sends nothing until the student acts.
So the fresh session's first rerun request is the student's edit, carrying every widget's value. A
widget's on_change fires only for a widget the session has drawn before, and this session has drawn
none: the page rebuilt the scenario from the share link in the address bar and the edit was lost
(tests/test_serve.py, 3 runs of 3 before this module).

``install()`` makes such a session's first rerun request two runs: first the page from the link alone
(the request without its widget values, as a fresh page load), then, once that run has finished, the
request itself, whose changed widgets now fire their callbacks. A session resumed on the same worker,
and every later request, are untouched.

This reaches into ``Runtime.connect_session`` and ``AppSession`` of the pinned Streamlit
(constraints.txt); ``tests/test_failover.py`` checks their shape and ``tests/test_serve.py`` the whole
path through HAProxy and a browser.

Upstream: a browser that asks to resume a session the server does not know gets a fresh one
(streamlit/streamlit#8901, open: "reconnect to existing sessions instead of creating new"); Streamlit
expects session affinity across replicas (streamlit/docs#1320), which HAProxy gives until a worker dies.
Checked on: Streamlit 1.67.0 (the pin; ``specviz.app.runtime.CHECKED_ON``).
Without it: only behind ``specviz serve`` with 2+ workers, after a worker restarts: the student's first
edit on the new worker is ignored (the page shows the scenario from the link, the edit is gone); later
edits work.
To drop it: when Streamlit applies the widget values of a fresh session's first rerun request as changes
(or restores sessions across servers), delete this module and its name in ``app_runtime.PATCHES``; the
failover phase of ``tests/test_serve.py`` must still pass.
"""
from __future__ import annotations

import functools
import logging

from specviz.app.runtime.shape_guard import install_once

_log = logging.getLogger(__name__)
UPSTREAM = "streamlit/streamlit#8901 (a resume on another server opens a fresh session)"  # what `specviz doctor` prints beside the patch
_REPLAY = "_specviz_failover_replay"
_fresh_after_failover: set[str] = set()  # ids of sessions opened for a resume the worker could not serve
_LIMIT = 256


def without_widget_values(msg):
    """A copy of a rerun_script BackMsg that reruns the whole page with no widget values (a fresh load)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    first = BackMsg()
    first.CopyFrom(msg)
    first.rerun_script.ClearField("widget_states")
    first.rerun_script.fragment_id = ""
    return first


def install() -> bool:
    """Patch Streamlit once per process; False (and a log line) if its shape is not the known one."""
    return install_once("failover replay", "_specviz_failover", _shape, _patch, _log)


def _shape() -> tuple:
    from streamlit.runtime import app_session, runtime
    from streamlit.runtime.scriptrunner import ScriptRunnerEvent

    Runtime, AppSession = runtime.Runtime, app_session.AppSession
    needed = ((Runtime, "connect_session"), (AppSession, "handle_backmsg"),
              (AppSession, "_handle_scriptrunner_event_on_event_loop"))
    known = all(hasattr(c, n) for c, n in needed) and hasattr(ScriptRunnerEvent, "SCRIPT_STOPPED_WITH_SUCCESS")
    return AppSession, None if known else f"Runtime / AppSession lack {needed}", (Runtime, AppSession, ScriptRunnerEvent)


def _patch(Runtime, AppSession, ScriptRunnerEvent) -> None:
    connect, handle, on_event = Runtime.connect_session, AppSession.handle_backmsg, \
        AppSession._handle_scriptrunner_event_on_event_loop
    finished = {ScriptRunnerEvent.SCRIPT_STOPPED_WITH_SUCCESS, ScriptRunnerEvent.SCRIPT_STOPPED_WITH_COMPILE_ERROR}

    @functools.wraps(connect)
    def connect_session(self, *args, **kwargs):
        resume = kwargs.get("existing_session_id")
        unknown = bool(resume) and self._session_mgr.get_session_info(resume) is None
        session_id = connect(self, *args, **kwargs)
        if unknown:
            if len(_fresh_after_failover) >= _LIMIT:  # sessions that closed before sending anything
                _fresh_after_failover.intersection_update(
                    sid for sid in list(_fresh_after_failover) if self._session_mgr.get_session_info(sid) is not None)
            _fresh_after_failover.add(session_id)
        return session_id

    @functools.wraps(handle)
    def handle_backmsg(self, msg):
        if self.id in _fresh_after_failover and msg.WhichOneof("type") == "rerun_script":
            _fresh_after_failover.discard(self.id)
            setattr(self, _REPLAY, msg)
            return handle(self, without_widget_values(msg))
        if msg.WhichOneof("type") == "rerun_script":
            self.__dict__.pop(_REPLAY, None)  # a newer request carries newer values: the replay is stale
        return handle(self, msg)

    @functools.wraps(on_event)
    def handle_event(self, sender, event, *args, **kwargs):
        out = on_event(self, sender, event, *args, **kwargs)
        if event in finished and _REPLAY in self.__dict__:
            handle(self, self.__dict__.pop(_REPLAY))  # the page is drawn: now the edit's callbacks fire
        return out

    Runtime.connect_session = connect_session
    AppSession.handle_backmsg = handle_backmsg
    AppSession._handle_scriptrunner_event_on_event_loop = handle_event
