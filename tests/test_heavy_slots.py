"""Heavy work (Monte Carlo, audit, decoding loop): a cache hit never waits, a queued request waits in
line and gets its answer (never "server is busy"), the line is first come first served, and the slots
are machine-wide across the worker processes of one ``specviz serve`` (issue 31 goal 4, issue 35 items 4, 8)."""
from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _hold_every_slot(heavy):
    """Threads that each enter heavy.heavy() and sit there until released: another tab's uncached work."""
    release, entered = threading.Event(), []

    def hold():
        with heavy.heavy("another tab"):
            entered.append(1)
            release.wait(60)
    threads = [threading.Thread(target=hold, daemon=True) for _ in range(heavy.HEAVY_SLOTS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while len(entered) < heavy.HEAVY_SLOTS and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(entered) == heavy.HEAVY_SLOTS
    return release, threads


@pytest.mark.parametrize("page,coin", [("chain_sampling", "w_chain_coin0")])
def test_a_cached_monte_carlo_never_waits_for_another_tabs_slot(page, coin):
    """Moving a coin keeps the Monte Carlo (coins are not in its key): that rerun is a cache hit and must
    not queue behind another tab's uncached Monte Carlo (it waited 8 s, then showed "server is busy")."""
    from streamlit.testing.v1 import AppTest

    from specviz.app.ui import heavy

    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=120)
    at.session_state["w_chain_mc_open"] = True  # the Monte Carlo's box open (closed, nothing is computed)
    at.run()  # computes + caches it
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    release, threads = _hold_every_slot(heavy)
    try:
        t0 = time.monotonic()
        at.slider(key=coin).set_value(0.7).run(timeout=60)
        took = time.monotonic() - t0
    finally:
        release.set()
        for t in threads:
            t.join(10)
    assert not at.exception, at.exception
    assert not [e.value for e in at.error], [e.value for e in at.error]
    assert took < 4.0, f"a cache hit waited {took:.1f} s for a slot"
    assert any("TV distance to p" in m.label for m in at.metric)  # the Monte Carlo is on the page


def _bare(monkeypatch):
    from specviz.app.ui import heavy

    monkeypatch.setattr(heavy, "st", SimpleNamespace(session_state={}, empty=lambda: SimpleNamespace(info=lambda *a, **k: None, empty=lambda: None)))
    return heavy


def test_a_queued_request_waits_and_gets_its_answer(monkeypatch):
    """No slot free: the request waits (no "busy" refusal), says its place, and runs once the slot frees."""
    heavy = _bare(monkeypatch)
    monkeypatch.setattr(heavy, "_SLOTS", heavy.Slots(1))
    monkeypatch.setattr(heavy, "WAIT_NOTE_S", 0.0)
    places = []
    monkeypatch.setattr(heavy, "_queue_note", lambda: (places.append, lambda: None))
    fd = heavy._SLOTS.acquire()  # another tab's computation holds the only slot
    threading.Timer(0.3, heavy._SLOTS.release, args=(fd,)).start()
    t0 = time.monotonic()
    with heavy.heavy("Your outputs"):
        ran = time.monotonic() - t0
    assert ran >= 0.25 and places and places[0] == 1


def test_the_line_is_first_come_first_served(monkeypatch):
    """One tab asking again and again goes to the back of the line: it cannot keep the slot from a waiting tab."""
    heavy = _bare(monkeypatch)
    slots = heavy.Slots(1)
    order, stop = [], threading.Event()

    def greedy_tab():
        while not stop.is_set():
            fd = slots.acquire()
            order.append("A")
            time.sleep(0.02)
            slots.release(fd)

    a = threading.Thread(target=greedy_tab, daemon=True)
    a.start()
    time.sleep(0.1)
    got, joined_at = [], []

    def tab_b():  # must get in right after A's current turn
        # Counted from the moment B stands in the line (its first wait), not from when its thread was started:
        # on a loaded machine a thread can start many of A's 20 ms turns late, which is no unfairness.
        got.append(slots.acquire(on_wait=lambda place: joined_at or joined_at.append(len(order))))
        order.append("B")
    b = threading.Thread(target=tab_b, daemon=True)
    b.start()
    b.join(5)
    stop.set()
    assert got, f"tab B never got the slot: A took it {order.count('A')} times"
    a_turns_while_b_waited = order.index("B") - joined_at[0] if joined_at else 0  # no wait: B got in at once
    slots.release(got[0])
    a.join(5)
    assert a_turns_while_b_waited <= 1, order  # at most the turn A already held when B joined the line


def test_a_tab_interrupted_while_queued_leaves_the_line(monkeypatch):
    """A newer edit stops a queued run (Streamlit raises from the page's next write): its ticket must not block the line."""
    heavy = _bare(monkeypatch)
    slots = heavy.Slots(1)
    fd = slots.acquire()

    def boom(place):
        raise KeyboardInterrupt  # stands in for Streamlit's StopException / RerunException
    with pytest.raises(KeyboardInterrupt):
        slots.acquire(on_wait=boom)
    assert slots.waiting() == 0
    slots.release(fd)
    slots.release(slots.acquire())


def _child_holds(lock_dir, n, ready, go):
    from specviz.app.ui import heavy

    slots = heavy.Slots(n, lock_dir)
    fds = [slots.acquire() for _ in range(n)]
    ready.set()
    go.wait(30)
    for fd in fds:
        slots.release(fd)


def test_slots_are_machine_wide_across_worker_processes(tmp_path):
    """Two workers of one serve share SPECVIZ_HEAVY_DIR: while another process holds every slot, this one waits."""
    from specviz.app.ui import heavy

    ctx = multiprocessing.get_context("fork")
    ready, go = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_child_holds, args=(str(tmp_path), 2, ready, go))
    p.start()
    try:
        assert ready.wait(30)
        slots = heavy.Slots(2, str(tmp_path))
        got = []
        t = threading.Thread(target=lambda: got.append(slots.acquire()), daemon=True)
        t.start()
        t.join(0.5)
        assert not got, "took a slot another worker holds"
        go.set()
        t.join(10)
        assert got and got[0] >= 0
        slots.release(got[0])
    finally:
        go.set()
        p.join(10)


def test_serve_gives_its_workers_one_heavy_lock_dir():
    from specviz.app import serve

    from specviz.app.cli import app_command

    s = serve.Serve(2, "127.0.0.1", 0, "haproxy", [], command=app_command)
    try:
        env = s.worker_env()
        assert env["SPECVIZ_HEAVY_DIR"] == str(s.dir) and os.path.isdir(env["SPECVIZ_HEAVY_DIR"])
    finally:
        import shutil
        shutil.rmtree(s.dir, ignore_errors=True)


def test_the_engines_monte_carlo_counts_against_the_tabs_budget(monkeypatch):
    """Issue 35 item 4: one tab pressing "Run the Monte Carlo" with a new seed each time ran 55 times in 31 s
    (30 s of CPU) with no refusal. It now goes through ui.heavy: past the tab's budget the next new run is
    refused with the wait, the same inputs again are a cache hit (no charge, no refusal)."""
    from streamlit.testing.v1 import AppTest

    from specviz.app.ui import heavy

    monkeypatch.setattr(heavy, "SESSION_BUDGET_S", 0.001)  # one run spends it
    at = AppTest.from_file(str(ROOT / "pages" / "engines.py"), default_timeout=120).run()
    at.select_slider(key="w_engines_trials").set_value(100)
    at.button(key="w_engines_mc").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.dataframe, "the first run is within the budget"
    at.button(key="w_engines_mc").click().run()  # same inputs: a cache hit, not charged
    assert not at.error, [e.value for e in at.error]
    seed = at.text_input(key="w_engines_seed")  # a text box: a crafted number cannot break the tab (issue 35 item 6)
    seed.set_value(str(int(seed.value) + 1)).run()
    at.button(key="w_engines_mc").click().run()
    assert not at.exception, at.exception
    assert any("last minute" in e.value and "wait" in e.value for e in at.error), [e.value for e in at.error]


def test_a_chain_edit_is_one_fragment_run_not_a_second_whole_app_run(app_server):
    """Issue 31: "+ slot", a slot's token and the p/q text called st.rerun() inside the editing fragment, so
    every such edit ran the fragment and then the whole app again. Now the second run is the fragment alone:
    the answer to "+ slot" redraws nothing outside the fragment (no element without a fragment id)."""
    import random
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from tests.support.st_protocol import connect, run_in_thread
    from bench_real_class import Student

    async def go():
        s = Student(app_server, 1, "chain_sampling", False, 0.0, random.Random(1))
        async with connect(app_server) as ws:
            s.ws = ws
            await s.rerun()
            before = len(s.view.labels("selectbox", "slot "))
            btn, frag = s.view.find("button", "+ slot")
            assert frag, "the chain editor is drawn in a fragment"
            view = await s.rerun(frag, (btn.id, "trigger_value", True))
            return before, view, s
    before, view, s = run_in_thread(go(), 120)
    assert view.finished and not view.errors, view.errors
    assert len(view.labels("selectbox", "slot ")) == before + 1  # the edit happened
    assert len(view.scenario["requests"][0]["chain"]) == before + 2
    assert not view.outside_fragment, f"{view.outside_fragment} elements outside the fragment were redrawn (a whole-app rerun)"


@pytest.mark.parametrize("page,coin,table_text", [("chain_sampling", "u[0]", "p = target_probs"),
                                                  ("target_only", "u[0]", "p = target_probs")])
def test_a_coin_edit_reruns_only_what_the_coins_change(app_server, page, coin, table_text):
    """Issue 31: a coin moved reran the page's whole scenario view (slot boxes, p/q tables, mass check). The
    coins and everything drawn from them are an inner fragment now: a coin's answer redraws the outcome and
    the link, not the tables. An edit of the outer part ("+ slot", a threshold) still redraws everything,
    and a coin edit after it still works (the inner fragment keeps its place and its sidebar boxes)."""
    import random
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from tests.support.st_protocol import connect, run_in_thread
    from bench_real_class import Student, _req

    async def coin_edit(s, value):
        sl, frag = s.view.find("slider", coin)
        s.states[sl.id] = ("double_array_value", [value])
        return await s.rerun(frag)

    async def go():
        s = Student(app_server, 2, page, False, 0.0, random.Random(2))
        async with connect(app_server) as ws:
            s.ws = ws
            await s.rerun()
            answers = [await coin_edit(s, 0.37)]
            if page == "chain_sampling":
                btn, frag = s.view.find("button", "+ slot")
                outer = await s.rerun(frag, (btn.id, "trigger_value", True))
            else:
                sl, frag = s.view.find("slider", "threshold_acc")
                s.states[sl.id] = ("double_array_value", [0.8])
                outer = await s.rerun(frag)
            answers.append(await coin_edit(s, 0.63))
            return answers, outer
    answers, outer = run_in_thread(go(), 120)
    assert outer.finished and not outer.errors, outer.errors
    assert any(table_text in x for x in outer.strings)  # an outer edit redraws the tables
    for view, value in zip(answers, (0.37, 0.63)):
        assert view.finished and not view.errors, view.errors
        assert _req(view)["coins"][0] == pytest.approx(value)  # the link follows the coin
        assert any("Output this round" in x for x in view.strings)  # the outcome is redrawn
        assert not any(table_text in x for x in view.strings), "a coin edit redrew the p tables"
