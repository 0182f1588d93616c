"""Shareable links: state -> URL -> fresh session -> same state and same results; bad links -> clear errors."""
import base64
import json
import zlib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from specviz.rooms.audit import expected_outputs
from specviz.base.errors import SpecvizError
from specviz.rooms.pitfalls import preset
from specviz.inputs.scenario import scenario_from_json
from specviz.rooms.share import MAX_TOKEN_CHARS, ShareState, decode_state, encode_state, share_url

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 60


def _edited():
    """The running example with the target predicting D after A: accept_index [0, 1, 4]."""
    data = json.loads(preset("running_example").to_json())
    data["name"] = "shared_edit"
    data["requests"][0]["target_predict"] = ["A", "D", "X", "X", "X"]
    return scenario_from_json(json.dumps(data))


def test_round_trip_library():
    state = ShareState(page="greedy", lang="zh", slot="batch", scenario=preset("batch_two_requests"), step_key="greedy",
                       step=7, extra={"pitfall": "q_zero"})
    token = encode_state(state)
    assert len(token) < 2000 and set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert decode_state(token) == state
    assert share_url("http://127.0.0.1:8501/", state).startswith("http://127.0.0.1:8501/greedy?s=")


def _pack(obj) -> str:
    raw = json.dumps(obj).encode() if not isinstance(obj, bytes) else obj
    return base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")


@pytest.mark.parametrize("token, match", [
    ("", "empty"),
    ("not base64!", "never contains"),
    ("abcd", "compressed data"),
    (_pack({"v": 1, "page": "greedy"})[:-6], "cut short|compressed|base64"),
    ("A" * (MAX_TOKEN_CHARS + 1), "too large"),
    (_pack(b" " * 10_000_000), "more than"),
    (_pack(b"\xff\xfe"), "not JSON"),
    (_pack([1, 2]), "state object"),
    (_pack({"v": 99, "page": "greedy"}), "version"),
    (_pack({"v": 1, "page": "../etc"}), "page"),
    (_pack({"v": 1, "page": "greedy", "lang": "fr"}), "lang"),
    (_pack({"v": 1, "page": "greedy", "step": -1}), "step"),
    (_pack({"v": 1, "page": "greedy", "evil": 1}), "not a share-link field"),
    (_pack({"v": 1, "page": "greedy", "scenario": {"name": "x"}}), "link.scenario"),
])
def test_malformed_links_are_refused(token, match):
    with pytest.raises(SpecvizError, match=match):
        decode_state(token)


def test_oversized_state_cannot_be_encoded():
    import random

    rng = random.Random(0)
    vocab = [f"{rng.getrandbits(128):032x}" for _ in range(1000)]  # random 32-character labels: incompressible
    data = json.loads(preset("running_example").to_json())
    data["vocab"] = vocab + data["vocab"]
    big = scenario_from_json(json.dumps(data))
    with pytest.raises(SpecvizError, match="at most"):
        encode_state(ShareState(page="greedy", scenario=big))


def test_link_to_fresh_session_same_state_and_results():
    """An edited scenario + pasted outputs in a link -> a fresh AppTest session shows the same inputs and verdict."""
    s = _edited()
    state = ShareState(page="audit", lang="zh", slot="audit", scenario=s, extra={"text": "accept_index = [0, 1, 4]"})
    at = AppTest.from_file(str(ROOT / "pages" / "audit.py"), default_timeout=TIMEOUT)
    at.query_params["s"] = encode_state(state)
    at.run()
    assert not at.exception
    assert at.session_state["sv_lang"] == "zh"
    assert scenario_from_json(at.session_state["sv_scn::audit"]) == s
    assert at.session_state["sv_audit_text"] == "accept_index = [0, 1, 4]"
    assert any("accept_index" in m.value for m in at.success), [e.value for e in at.error]


def test_session_to_link_to_fresh_session():
    """A session's own link (written into st.query_params) reproduces its scenario and results elsewhere."""
    at = AppTest.from_file(str(ROOT / "pages" / "quiz.py"), default_timeout=TIMEOUT)
    at.run()
    at.button(key="w_quiz_random").click().run()
    at.button(key="w_quiz_random").click().run()
    s1 = scenario_from_json(at.session_state["sv_scn::quiz"])
    token = at.query_params["s"]
    token = token[0] if isinstance(token, list) else token
    assert decode_state(token).scenario == s1

    fresh = AppTest.from_file(str(ROOT / "pages" / "quiz.py"), default_timeout=TIMEOUT)
    fresh.query_params["s"] = token
    fresh.run()
    assert not fresh.exception
    s2 = scenario_from_json(fresh.session_state["sv_scn::quiz"])
    assert s2 == s1 and expected_outputs(s2) == expected_outputs(s1)
    fresh.button(key="w_quiz_reveal").click().run()
    at.button(key="w_quiz_reveal").click().run()
    assert fresh.table[0].value.equals(at.table[0].value)


def test_link_carries_the_animation_step_to_another_page():
    """A link made for the greedy animation (scenario + step) lands in the tree slot and the greedy step."""
    s = _edited()
    state = ShareState(page="tour", lang="en", slot="tree", scenario=s, step_key="greedy", step=3, extra={"stop": 2})
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["s"] = encode_state(state)
    at.switch_page("pages/tour.py").run()
    assert not at.exception
    assert at.session_state["sv_step::greedy"] == 3
    assert at.session_state["sv_tour_step"] == 2
    assert scenario_from_json(at.session_state["sv_scn::tree"]) == s
    if (ROOT / "pages" / "greedy.py").exists():
        at.switch_page("pages/greedy.py").run()
        assert not at.exception
        assert at.session_state["sv_step::greedy"] == 3


@pytest.mark.parametrize("token", ["garbage!!", "A" * (MAX_TOKEN_CHARS + 10), _pack({"v": 1, "page": "greedy", "lang": "xx"})])
def test_bad_link_in_the_app_shows_an_error_not_a_traceback(token):
    at = AppTest.from_file(str(ROOT / "pages" / "pitfalls.py"), default_timeout=TIMEOUT)
    at.query_params["s"] = token
    at.run()
    assert not at.exception
    assert any("link could not be loaded" in e.value for e in at.error)
    assert at.session_state["sv_lang"] == "en"


def test_encode_steps_is_encode_state_at_each_step():
    """A step player's links: the state's dict is built once and only the step changes (encode_steps);
    each link is exactly the one encode_state writes for that step, and decodes to it."""
    import dataclasses

    from specviz.inputs.scenario import load_scenario
    from specviz.rooms.share import ShareState, decode_state, encode_state, encode_steps

    s = load_scenario(ROOT / "scenarios" / "pq_example.json")
    state = ShareState(page="chain_sampling", lang="zh", slot="chain", scenario=s, step_key="chain", step=5, extra={"req": 1})
    links = encode_steps(state, 7)
    assert links == [encode_state(dataclasses.replace(state, step=k)) for k in range(7)]
    assert [decode_state(t).step for t in links] == list(range(7))
    assert state.step == 5  # the caller's state is not changed
