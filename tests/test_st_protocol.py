"""tests/support/st_protocol: the tests' one client of Streamlit's websocket protocol, against a scripted socket.

The live-server tests (test_chain_cell_edit, test_tree_table_edit, test_sampling_rerun_work, test_flood,
test_widget_guard, test_serve, ...) trust this client to send what a browser sends and to read an answer up to
the end of its run; here that is checked message by message, without a server. Coroutines run through
``run_in_thread``: after a Playwright test in the same worker, asyncio.run in the test's thread fails."""
from __future__ import annotations

import asyncio

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.support import st_protocol
from tests.support.st_protocol import Tab, back_msg, rerun_message, run_in_thread, widget_states


class _Socket:
    """Replays ``frames`` on recv and keeps what was sent."""

    def __init__(self, frames):
        self.frames, self.sent = list(frames), []

    async def send(self, raw):
        self.sent.append(raw)

    async def recv(self):
        return self.frames.pop(0)


def _element(kind: str, fragment: str = "", **fields) -> ForwardMsg:
    fm = ForwardMsg()
    fm.delta.fragment_id = fragment
    proto = getattr(fm.delta.new_element, kind)
    for k, v in fields.items():
        setattr(proto, k, v)
    return fm


def _finished(status) -> bytes:
    fm = ForwardMsg()
    fm.script_finished = status
    return fm.SerializeToString()


def test_widget_states_take_a_mapping_of_values_or_fields_and_triples():
    assert widget_states({"a": "tab label", "b": ("int_value", 7)}) == [("a", "string_value", "tab label"),
                                                                        ("b", "int_value", 7)]
    assert widget_states([("c", "trigger_value", True)]) == [("c", "trigger_value", True)]
    assert widget_states() == []


def test_a_rerun_message_carries_page_query_fragment_and_every_kind_of_state():
    raw = rerun_message("chain_sampling", "s=abc", "frag1",
                        {"t": "Table", "j": ("json_value", '{"edit": 1}'), "s": ("double_array_value", [0.25, 0.75])})
    bm = back_msg(raw)
    r = bm.rerun_script
    assert bm.WhichOneof("type") == "rerun_script"
    assert (r.page_name, r.query_string, r.fragment_id) == ("chain_sampling", "s=abc", "frag1")
    got = {w.id: (w.WhichOneof("value"), w) for w in r.widget_states.widgets}
    assert got["t"][0] == "string_value" and got["t"][1].string_value == "Table"
    assert got["j"][0] == "json_value" and got["j"][1].json_value == '{"edit": 1}'
    assert got["s"][0] == "double_array_value" and list(got["s"][1].double_array_value.data) == [0.25, 0.75]


def test_an_answer_reads_to_the_end_of_its_run_counts_early_ones_and_resolves_cached_messages():
    slider = _element("slider", "f1", id="sid", label="threshold_acc")
    slider.hash = "h-slider"
    alert = _element("alert", "f1", body="target_probs row 0 sums to 0.9")
    alert.delta.new_element.alert.format = alert.delta.new_element.alert.ERROR
    info = _element("alert", body="just so you know")
    info.delta.new_element.alert.format = info.delta.new_element.alert.INFO
    boom = _element("exception", type="ValueError")
    tabs = ForwardMsg()
    tabs.delta.fragment_id = "f0"
    tabs.delta.add_block.tab_container.id = "tabs-id"
    page = ForwardMsg()
    page.page_info_changed.query_string = "s=new"
    ref = ForwardMsg()
    ref.ref_hash = "h-slider"  # the slider again, sent by its hash
    after = _element("markdown", body="the next run's")
    frames = [slider.SerializeToString(), _finished(ForwardMsg.FINISHED_EARLY_FOR_RERUN), tabs.SerializeToString(),
              alert.SerializeToString(), info.SerializeToString(), boom.SerializeToString(), page.SerializeToString(),
              ref.SerializeToString(), _finished(ForwardMsg.FINISHED_SUCCESSFULLY), after.SerializeToString()]
    sock = _Socket(frames)
    t = Tab(sock)
    a = run_in_thread(t.rerun("target_only", "s=old", "f1", {"sid": ("double_array_value", [0.7])}), 10)
    assert back_msg(sock.sent[0]).rerun_script.fragment_id == "f1"
    assert a.early == 1 and a.query == "s=new"
    assert [(s.label, f) for s, f in a.elements("slider")] == [("threshold_acc", "f1"), ("threshold_acc", "f1")]
    assert [b.id for b, f in a.blocks("tab_container")] == ["tabs-id"] and a.blocks()[0][1] == "f0"
    assert a.errors == ["target_probs row 0 sums to 0.9"]  # not the info alert
    assert [e.type for e in a.exceptions] == ["ValueError"]
    assert len(a.elements()) == 5
    assert len(sock.frames) == 1, "read past the end of the run"


def test_an_answer_without_page_info_keeps_the_query_sent():
    sock = _Socket([_finished(ForwardMsg.FINISHED_SUCCESSFULLY)])
    a = run_in_thread(Tab(sock).rerun(query="s=kept"), 10)
    assert a.query == "s=kept" and a.messages == [] and a.early == 0


def test_the_stream_address_follows_the_base_url():
    assert st_protocol.stream_uri("http://127.0.0.1:8501") == "ws://127.0.0.1:8501/_stcore/stream"
    assert st_protocol.stream_uri("https://class.example") == "wss://class.example/_stcore/stream"


def test_run_in_thread_works_where_an_event_loop_already_runs():
    """A Playwright test earlier in the worker leaves a loop running in the test's thread: asyncio.run fails there."""
    async def inner():
        return asyncio.get_running_loop()

    async def outer():  # a loop runs in this thread, as it does after a Playwright test
        return st_protocol.run_in_thread(inner(), 10) is not asyncio.get_running_loop()

    assert run_in_thread(outer(), 10)
