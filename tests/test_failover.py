"""specviz.app.runtime.failover against the pinned Streamlit (the browser path is in tests/test_serve.py)."""
from streamlit.proto.BackMsg_pb2 import BackMsg

from specviz.app.runtime import failover


def test_install_patches_the_known_shape_once():
    from streamlit.runtime import app_session, runtime

    assert failover.install() and failover.install()  # idempotent
    assert app_session.AppSession._specviz_failover
    assert runtime.Runtime.connect_session.__wrapped__ is not None
    assert app_session.AppSession.handle_backmsg.__wrapped__ is not None


def test_the_first_run_is_the_page_from_its_link_alone():
    msg = BackMsg()
    r = msg.rerun_script
    r.query_string = "s=abc"
    r.page_script_hash = "h1"
    r.fragment_id = "frag"
    w = r.widget_states.widgets.add()
    w.id = "$$ID-x"
    w.string_value = "C"
    first = failover.without_widget_values(msg)
    assert first.rerun_script.query_string == "s=abc" and first.rerun_script.page_script_hash == "h1"
    assert len(first.rerun_script.widget_states.widgets) == 0 and first.rerun_script.fragment_id == ""
    assert msg.rerun_script.widget_states.widgets[0].string_value == "C"  # the request itself is kept whole
