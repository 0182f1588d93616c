"""The step player in the app: a Streamlit Custom Components v2 component around the one player
module (``static/player.js``, hosted by ``static/player_streamlit.js``; data from ``specviz.replay.player``).

Every frame goes to the browser at once and stepping happens there, with no server round trip. A
rerun sends the frames only when this session's browser does not hold them yet (``{digest, start}``
otherwise, so the step on screen stays). When the viewer stops on a step, the component's state
``step`` makes the page's ``ui.step(key)`` follow (share link, language switch, figure export).
Components run in the app's page (no iframe): the module writes every text with ``textContent``.

    player.show(frames, key="greedy", start=ui.step("greedy"))
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import threading
from collections import OrderedDict

from specviz.app.ui.static_component import static_component
from specviz.replay.player import Frame, Row, labels, laid_out, layout_mode  # noqa: F401  (pages use player.Frame, player.Row)



def component():
    """The player component: ``static/player_streamlit.js`` loaded from the app's own server (fetched once a tab;
    a rerun carries only the component's data), with the module it imports and its stylesheet fetched at the
    same time, not one after another."""
    return static_component("specviz.player", "player_streamlit.js", also=("player.js", "player.css"))


def step_links(page: str, slot: str, step_key: str, count: int, extra: dict | None = None) -> list[str] | None:
    """The share link of this view at each step 0..count-1 (None when the view has no link or the
    walk is too long to carry one link per step)."""
    from specviz.base.errors import SpecvizError
    from specviz.rooms.share import QUERY_KEY, encode_steps
    from specviz.app.ui import share_ui

    if count > 512:
        return None
    state = share_ui.current_state(page, slot, step_key, extra)
    base = f"{share_ui.base_url()}/{page}?{QUERY_KEY}="
    # Every link is a pure function of the state without its step: a rerun that did not change the
    # scenario (a selection, the backend, a repeated edit) reuses them (encoding was 11% of a greedy rerun).
    import json

    key = (base, count, state.lang, state.slot, state.step_key, json.dumps(state.extra, sort_keys=True, default=str),
           state.scenario.to_json(indent=None) if state.scenario is not None else None)
    with _LINKS_LOCK:
        if key in _LINKS:
            _LINKS.move_to_end(key)
            hit = _LINKS[key]
            return list(hit) if hit is not None else None
    try:
        links = [base + token for token in encode_steps(state, count)]  # the state's dict built once
    except SpecvizError:
        links = None
    with _LINKS_LOCK:
        _LINKS[key] = tuple(links) if links is not None else None
        while len(_LINKS) > _LINKS_MAX:
            _LINKS.popitem(last=False)
    return links


_LINKS: "OrderedDict[tuple, tuple | None]" = OrderedDict()  # step_links' answers (a few KB each)
_LINKS_MAX = 256
_LINKS_LOCK = threading.Lock()


_PAYLOADS: "OrderedDict[object, tuple]" = OrderedDict()  # key of the inputs -> (digest, data)
_PAYLOADS_MAX = 64
_PAYLOADS_LOCK = threading.Lock()


def _payload(frames, content_key, kwargs: dict) -> tuple[str, str]:
    """(digest, data packed as gzip + base64) of the player for ``frames``: a class asks for the same few
    again and again, so they are kept by ``content_key`` (what the frames were made from) and the other inputs."""
    rest = (layout_mode(), kwargs["speed"], kwargs["present"], tuple(kwargs["links"] or ()), tuple(sorted(kwargs["labels"].items())))
    key = (content_key, *rest) if content_key is not None else None
    with _PAYLOADS_LOCK:
        hit = _PAYLOADS.get(key) if key is not None else None
        if hit is not None:
            _PAYLOADS.move_to_end(key)
            _PAYLOADS[hit[0]] = hit  # and its digest entry, which data_of reads: kept as fresh as its key's
            _PAYLOADS.move_to_end(hit[0])
            while len(_PAYLOADS) > _PAYLOADS_MAX:
                _PAYLOADS.popitem(last=False)
            return hit
    data = laid_out(frames, **kwargs)
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    digest = hashlib.sha256(raw).hexdigest()[:32]
    packed = base64.b64encode(gzip.compress(raw, 6, mtime=0)).decode("ascii")  # SVG and DOT texts repeat: ~15x smaller
    with _PAYLOADS_LOCK:
        if key is not None:
            _PAYLOADS[key] = (digest, packed)
        _PAYLOADS[digest] = (digest, packed)  # what data_of reads
        while len(_PAYLOADS) > _PAYLOADS_MAX:
            _PAYLOADS.popitem(last=False)
    return digest, packed


def data_of(sent: dict) -> dict | None:
    """The player's data as the browser holds it for the component data ``sent`` (``{digest, start[, z]}``):
    for tests and benchmarks, which read a rerun's elements; None when this process no longer has it."""
    packed = sent.get("z")
    if packed is None:
        with _PAYLOADS_LOCK:
            hit = _PAYLOADS.get(sent.get("digest"))
        if hit is None:
            return None
        packed = hit[1]
    return {**json.loads(gzip.decompress(base64.b64decode(packed))), "start": sent["start"]}


def show(frames: list[Frame], key: str, start: int = 0, links: list[str] | None = None, content_key=None) -> int:
    """Draw the player; returns the step it shows. ``start``: the step to show when the frames are new
    to the browser (or when the page moves the step itself); ``content_key``: a hashable key of what
    ``frames`` were computed from (e.g. ``ui.greedy_frames_key``)."""
    import streamlit as st

    from specviz.app.ui import common as ui

    last = max(0, len(frames) - 1)
    start = max(0, min(last, int(start)))
    kwargs = dict(labels=labels(ui.tr), present=ui.presenting(), speed=float(st.session_state.get(f"sv_speed::{key}", 1.0)),
                  links=links)
    digest, packed = _payload(frames, content_key, kwargs)
    comp_key, sent_key = f"sv_player::{key}", f"sv_player_sent::{key}"

    def on_step():  # the viewer stopped on a step: the page follows it
        state = st.session_state.get(comp_key) or {}
        if isinstance(state.get("step"), int):
            ui.set_step(key, state["step"])

    def on_missing():  # the browser does not hold these frames: send them with this rerun
        st.session_state[sent_key] = None

    send = {"digest": digest, "start": start}
    if st.session_state.get(sent_key) != digest:
        send["z"] = packed
        st.session_state[sent_key] = digest
    component()(key=comp_key, data=send, default={"step": start}, on_step_change=on_step, on_missing_change=on_missing)
    return start
