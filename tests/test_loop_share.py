"""The Decoding loop page's share link (issue 35 item 5): after an edit the page writes ?s= like
every other page, and opening that link in a fresh session restores the inputs, the language and
the round shown, with the same results; a link with an out-of-bounds input is refused naming it."""
from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path

from streamlit.testing.v1 import AppTest

from specviz.rooms.share import decode_state

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "decoding_loop.py")
TIMEOUT = 240


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.message for e in at.exception]
    return at


def _token(at: AppTest) -> str:
    token = at.query_params["s"]
    return token[0] if isinstance(token, list) else token


def _shown(at: AppTest) -> list:
    out = [(kind, e.value) for kind in ("title", "subheader", "success", "warning", "error", "caption")
           for e in at.main.get(kind)]
    out += [("markdown", m.value) for m in at.main.markdown]
    out += [("metric", m.label, m.value) for m in at.main.get("metric")]
    out += [("dataframe", d.value.to_json()) for d in at.main.dataframe]
    return out


def test_loop_link_round_trip():
    # A student's edits: the page keeps each input in its sv_loop:: key (ui.widget), set here directly
    # (AppTest cannot re-send a zh selectbox whose options it formats itself).
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    edits = {"sv_lang": "zh", "sv_backend": "torch", "sv_loop::rounds": 5, "sv_loop::depth": 2, "sv_loop::seed": 11,
             "sv_loop::cost": 0.2, "sv_loop::m::no_shift": True, "sv_step::decoding_loop": 2}
    for key, value in edits.items():
        at.session_state[key] = value
    _ok(at.run())
    token = _token(at)
    state = decode_state(token)
    assert state.page == "decoding_loop" and state.lang == "zh" and state.step_key == "decoding_loop" and state.step == 2
    loop = state.extra["loop"]
    assert (loop["rounds"], loop["depth"], loop["seed"], loop["cost"], loop["mistakes"]) == (5, 2, 11, 0.2, ["no_shift"])

    fresh = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    fresh.session_state["sv_backend"] = "torch"
    fresh.query_params["s"] = token
    _ok(fresh.run())
    assert not [e.value for e in fresh.error if "link" in e.value]
    for key in ("sv_loop::rounds", "sv_loop::depth", "sv_loop::seed", "sv_loop::cost", "sv_loop::m::no_shift", "sv_lang",
                "sv_step::decoding_loop"):
        assert fresh.session_state[key] == at.session_state[key], key
    assert _shown(fresh) == _shown(at)
    assert _token(fresh) == token


def test_a_loop_link_out_of_the_widgets_bounds_is_refused_naming_the_field():
    raw = json.dumps({"v": 1, "page": "decoding_loop", "extra": {"loop": {"rounds": 10_000}}}).encode()
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.session_state["sv_backend"] = "torch"
    at.query_params["s"] = base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")
    _ok(at.run())
    assert any("link.extra.loop.rounds" in e.value for e in at.error), [e.value for e in at.error]
    assert at.title


def test_a_loop_link_naming_an_unknown_mistake_is_refused():
    import pytest

    from specviz.base.errors import SpecvizError
    from specviz.rooms.share import check_extra
    from specviz.app.ui.share_ui import check_page_extras

    extra = check_extra({"loop": {"mistakes": ["no_shift", "skip_everything"], "temperature": 1}})
    assert extra["loop"]["temperature"] == 1.0 and isinstance(extra["loop"]["temperature"], float)
    with pytest.raises(SpecvizError) as exc:
        check_page_extras(extra)
    assert exc.value.field == "link.extra.loop.mistakes" and "skip_everything" in exc.value.detail
