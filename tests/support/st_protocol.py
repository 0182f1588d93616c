"""One client of Streamlit's websocket protocol for the tests: a tab that speaks to a live server as a browser does.

A browser tab is one websocket on ``/_stcore/stream``. A rerun is a ``BackMsg`` (``rerun_script``: page, query
string, fragment id, the widget states); the server answers with ``ForwardMsg``s (deltas, page info, ...) until
``script_finished``. A run cut short by a newer rerun (``FINISHED_EARLY_FOR_RERUN``) is counted and read on.

    async with tab(app_server) as t:
        first = await t.rerun(page="target_only")
        (slider, frag), = [(s, f) for s, f in first.elements("slider") if s.label == "threshold_acc"]
        edit = await t.rerun(page="target_only", fragment=frag, widgets={slider.id: ("double_array_value", [0.7])})

An ``Answer`` keeps every message of the run; each test reads the fields it needs (``elements``, ``blocks``,
``errors``, ``query``, ``early``), so no test's shape is imposed on another. ``run_in_thread`` runs a test's
coroutine on an event loop of its own. Test code: nothing in the product imports it (README's layering)."""
from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

STREAM_PATH = "/_stcore/stream"
# The widget-state fields that are repeated messages ({"data": [...]}) rather than scalars.
_ARRAY_FIELDS = ("double_array_value", "int_array_value", "string_array_value")


def stream_uri(base: str) -> str:
    """The websocket address of a server's base URL ("http://127.0.0.1:PORT")."""
    return base.replace("https://", "wss://").replace("http://", "ws://") + STREAM_PATH


def connect(base: str, headers: Mapping[str, str] | None = None):
    """``websockets.connect`` to the server's stream as Streamlit's frontend does (its subprotocol, no size cap)."""
    import websockets

    kw: dict = {"subprotocols": ["streamlit"], "max_size": None}
    if headers:
        kw["additional_headers"] = dict(headers)
    return websockets.connect(stream_uri(base), **kw)


def widget_states(widgets: Mapping[str, Any] | Iterable[tuple[str, str, Any]] = ()) -> list[tuple[str, str, Any]]:
    """(id, field, value) triples from either a mapping id -> value (a str is a ``string_value``) or
    id -> (field, value), or from triples already."""
    if isinstance(widgets, Mapping):
        return [(wid, *(v if isinstance(v, tuple) else ("string_value", v))) for wid, v in widgets.items()]
    return [tuple(w) for w in widgets]


def rerun_message(page: str = "", query: str = "", fragment: str = "",
                  widgets: Mapping[str, Any] | Iterable[tuple[str, str, Any]] = ()) -> bytes:
    """The serialised ``BackMsg`` of a rerun request (see ``widget_states`` for ``widgets``)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    bm = BackMsg()
    bm.rerun_script.page_name = page
    bm.rerun_script.query_string = query
    bm.rerun_script.fragment_id = fragment
    for wid, kind, value in widget_states(widgets):
        w = bm.rerun_script.widget_states.widgets.add()
        w.id = wid
        if kind in _ARRAY_FIELDS:
            getattr(w, kind).data.extend(value)
        else:
            setattr(w, kind, value)
    return bm.SerializeToString()


def back_msg(raw: bytes):
    """A ``BackMsg`` parsed from a frame a browser sent."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    bm = BackMsg()
    bm.ParseFromString(bytes(raw))
    return bm


def forward_msg(raw: bytes):
    """A ``ForwardMsg`` parsed from a frame a server sent."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    fm = ForwardMsg()
    fm.ParseFromString(bytes(raw))
    return fm


@dataclass
class Answer:
    """What one rerun sent back, in arrival order (cached messages resolved), and a few readings of it."""

    query: str            # the query string after the run: the last page_info_changed, else the one sent
    messages: list = field(default_factory=list)  # ForwardMsg, up to and without script_finished
    early: int = 0        # runs that finished early for a rerun before this one finished

    def _deltas(self, delta: str, kind: str | None) -> list[tuple[Any, str]]:
        out = []
        for fm in self.messages:
            if fm.WhichOneof("type") == "delta" and fm.delta.WhichOneof("type") == delta:
                proto = getattr(fm.delta, delta)
                if kind is None:
                    out.append((proto, fm.delta.fragment_id))
                elif proto.WhichOneof("type") == kind:
                    out.append((getattr(proto, kind), fm.delta.fragment_id))
        return out

    def elements(self, kind: str | None = None) -> list[tuple[Any, str]]:
        """(element, fragment id) per new element; with ``kind`` ("slider", "alert", ...) only those, as that proto."""
        return self._deltas("new_element", kind)

    def blocks(self, kind: str | None = None) -> list[tuple[Any, str]]:
        """(block, fragment id) per added block; with ``kind`` ("tab_container", ...) only those, as that proto."""
        return self._deltas("add_block", kind)

    @property
    def errors(self) -> list[str]:
        """The bodies of the error alerts (st.error) drawn."""
        return [a.body for a, _ in self.elements("alert") if a.format == a.ERROR]

    @property
    def exceptions(self) -> list[Any]:
        """The exception elements drawn (an uncaught error in the page)."""
        return [e for e, _ in self.elements("exception")]


class Tab:
    """One websocket session: reruns go out, answers come back. ``ws`` is the open websocket (its response
    headers, or a raw ``send`` / ``recv``); the cache holds the messages the server may later send by hash."""

    def __init__(self, ws):
        self.ws = ws
        self._cache: dict = {}

    async def send(self, page: str = "", query: str = "", fragment: str = "", widgets=()) -> None:
        """Send a rerun request without waiting for its answer."""
        await self.ws.send(rerun_message(page, query, fragment, widgets))

    async def answer(self, query: str = "", timeout: float = 60) -> Answer:
        """Read messages until a run finishes (not cut short for a rerun); each recv waits ``timeout`` s."""
        out = Answer(query=query)
        while True:
            fm = forward_msg(await asyncio.wait_for(self.ws.recv(), timeout))
            if fm.WhichOneof("type") == "ref_hash":  # sent before: the browser reads it from its cache
                fm = self._cache.get(fm.ref_hash, fm)
            elif fm.hash:
                self._cache[fm.hash] = fm
            kind = fm.WhichOneof("type")
            if kind == "page_info_changed":
                out.query = fm.page_info_changed.query_string
            elif kind == "script_finished":
                if fm.script_finished != fm.FINISHED_EARLY_FOR_RERUN:
                    return out
                out.early += 1
                continue
            out.messages.append(fm)

    async def rerun(self, page: str = "", query: str = "", fragment: str = "", widgets=(), timeout: float = 60) -> Answer:
        """Send a rerun and read its answer."""
        await self.send(page, query, fragment, widgets)
        return await self.answer(query, timeout)


@contextlib.asynccontextmanager
async def tab(base: str, headers: Mapping[str, str] | None = None):
    """A new tab (websocket session) on the server at ``base``."""
    async with connect(base, headers) as ws:
        yield Tab(ws)


def run_in_thread(coro, timeout: float = 180):
    """``asyncio.run(coro)`` in a thread of its own: a Playwright test earlier in this process may hold this
    thread's event loop. Waits at most ``timeout`` s, and on a timeout does not wait for the thread (the caller
    stops the server, which ends it)."""
    ex = ThreadPoolExecutor(1)
    try:
        return ex.submit(asyncio.run, coro).result(timeout)
    finally:
        ex.shutdown(wait=False)
