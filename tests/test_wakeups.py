"""specviz.app.runtime.wakeups: a session's script events reach the event loop in order, none is lost, and a
burst costs one wake-up, not one per element."""
from __future__ import annotations

import asyncio
import threading

import pytest

from specviz.app.runtime import wakeups


@pytest.fixture
def loop():
    lp = asyncio.new_event_loop()
    th = threading.Thread(target=lp.run_forever, daemon=True)
    th.start()
    yield lp
    lp.call_soon_threadsafe(lp.stop)
    th.join(5)
    lp.close()


def _counting(lp):
    """Count the loop's thread-safe wake-ups."""
    calls = []
    real = lp.call_soon_threadsafe

    def counted(cb, *args):
        calls.append(cb)
        return real(cb, *args)
    lp.call_soon_threadsafe = counted
    return calls


def test_install_patches_the_pinned_streamlit():
    from streamlit.runtime import app_session, runtime

    assert wakeups.install() and wakeups.install()  # idempotent
    assert app_session.AppSession._specviz_wakeups
    assert app_session.AppSession._call_soon_on_event_loop.__module__ == wakeups.__name__
    assert runtime.Runtime._enqueued_some_message.__module__ == wakeups.__name__


def test_a_burst_is_one_wake_up_and_keeps_its_order(loop):
    drain = wakeups._Drain(loop)
    wakes = _counting(loop)
    gate, seen, done = threading.Event(), [], threading.Event()
    loop.call_soon_threadsafe(gate.wait)  # the loop is busy (a long callback) while the script sends 100 events
    wakes.clear()
    for i in range(100):
        drain.push(lambda i=i: seen.append(i))
    drain.push(done.set)
    gate.set()
    assert done.wait(5)
    assert seen == list(range(100))
    assert len(wakes) == 1


def test_threads_pushing_at_once_lose_nothing(loop):
    drain = wakeups._Drain(loop)
    seen = {t: [] for t in range(4)}
    lock = threading.Lock()

    def sender(t):
        for i in range(2000):
            def cb(t=t, i=i):
                with lock:
                    seen[t].append(i)
            drain.push(cb)
    threads = [threading.Thread(target=sender, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    finished = threading.Event()
    drain.push(finished.set)
    assert finished.wait(10)
    assert all(seen[t] == list(range(2000)) for t in seen)  # each thread's events, all of them, in order


def test_a_failing_callback_does_not_stop_the_others(loop):
    drain = wakeups._Drain(loop)
    seen, done = [], threading.Event()
    drain.push(lambda: 1 / 0)
    drain.push(lambda: seen.append("after"))
    drain.push(done.set)
    assert done.wait(5) and seen == ["after"]


def test_a_closed_loop_drops_events_quietly():
    lp = asyncio.new_event_loop()
    lp.close()
    drain = wakeups._Drain(lp)
    drain.push(lambda: None)  # no RuntimeError: ScriptRunner events may outlive the loop at shutdown
    assert not drain.scheduled and not drain.pending


def test_data_to_send_is_flagged_directly_on_the_loop_thread(loop):
    from streamlit.runtime import runtime

    wakeups.install()

    class Objs:
        eventloop = loop
        need_send_data = asyncio.Event()

    class FakeRuntime:
        _get_async_objs = staticmethod(lambda: Objs)

    wakes = _counting(loop)
    done = threading.Event()

    def on_loop():
        runtime.Runtime._enqueued_some_message(FakeRuntime())
        done.set()
    loop.call_soon_threadsafe(on_loop)
    assert done.wait(5) and Objs.need_send_data.is_set()
    assert len(wakes) == 1  # only the test's own call: none for the flag
    Objs.need_send_data.clear()
    runtime.Runtime._enqueued_some_message(FakeRuntime())  # from another thread: through the loop, as before
    for _ in range(100):
        if Objs.need_send_data.is_set():
            break
        threading.Event().wait(0.02)
    assert Objs.need_send_data.is_set() and len(wakes) == 2


def test_a_running_server_gets_the_patched_data_to_send_callback(monkeypatch):
    """Runtime.__init__ hands its session manager a bound ``_enqueued_some_message`` before app.py's first
    run installs the patch: install() must rebind the manager's copy and its sessions' (it did not: on a
    real server every element drawn still cost a self-pipe write from the loop's own thread)."""
    import types

    from streamlit.runtime import runtime

    wakeups.install()
    patched = runtime.Runtime._enqueued_some_message
    rt = object.__new__(runtime.Runtime)

    def original(self):  # Streamlit's own method, as bound when the server started
        raise AssertionError("not reached")

    stale = types.MethodType(original, rt)
    session = types.SimpleNamespace(_message_enqueued_callback=stale)
    rt._session_mgr = types.SimpleNamespace(_message_enqueued_callback=stale,
                                            _active_session_info_by_id={"s1": types.SimpleNamespace(session=session)})
    monkeypatch.setattr(runtime.Runtime, "_instance", rt)
    assert wakeups.install()
    for holder in (rt._session_mgr, session):
        assert holder._message_enqueued_callback.__func__ is patched
        assert holder._message_enqueued_callback.__self__ is rt


def test_a_lone_callback_runs_after_the_linger_not_later(loop):
    """The drain waits ``LINGER_S`` for the rest of a burst, and no longer (slack for a loaded machine)."""
    import time

    drain, ran, done = wakeups._Drain(loop), [], threading.Event()
    t0 = time.perf_counter()
    drain.push(lambda: (ran.append(time.perf_counter() - t0), done.set()))
    assert done.wait(5)
    assert wakeups.LINGER_S * 0.9 <= ran[0] < wakeups.LINGER_S + 0.1, ran


def test_an_idle_loop_takes_a_paced_burst_in_few_wake_ups(loop):
    """Elements drawn some microseconds apart while the loop is idle: without the linger the loop drained
    each one as it came and the next scheduled its own drain (~one wake-up per element,
    benchmarks/wakeup_linger.py); with it, at most one per ``LINGER_S`` of the burst's length."""
    import time

    assert wakeups.LINGER_S > 0
    drain, seen, done = wakeups._Drain(loop), [], threading.Event()
    wakes = _counting(loop)
    t0 = time.perf_counter()
    for i in range(200):
        end = time.perf_counter() + 20e-6
        while time.perf_counter() < end:
            pass
        drain.push(lambda i=i: seen.append(i))
    elapsed = time.perf_counter() - t0
    drain.push(done.set)
    assert done.wait(5) and seen == list(range(200))
    assert len(wakes) <= 2 + elapsed / wakeups.LINGER_S and len(wakes) < 50, (len(wakes), elapsed)
