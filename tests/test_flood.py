"""One tab floods its websocket (issue 35 item 2): the worker's memory stays bounded, only that tab is refused.

A live Streamlit server runs tests/apps/slow_callback_app.py (a button whose callback takes 0.25 s, as every
callback does on a server busy with a class). Tab A presses the button 200 times as fast as its socket
takes it, each press padded with 1 MB under a widget id the page never drew (the issue's hostile student);
meanwhile tab B edits its number input. Before the bound, every press waited in the click queue holding its
whole websocket message (+1 MB each, 200 MB here, and 1.4 GB for the issue's 2500). Now the padding is
dropped as the request arrives, at most ``click_queue.MAX_QUEUED`` presses wait, the rest are refused
(logged; the tab's next run says so), and tab B is answered meanwhile. The full-size figure (2500 presses
on the greedy page): benchmarks/bench_flood.py.
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from benchmarks.bench_flood import proc_status, start_server
from tests.support.st_protocol import Tab, connect, rerun_message, run_in_thread

ROOT = Path(__file__).resolve().parents[1]
N, PAD = 200, 1 << 20


async def _run_until_finished(t: Tab, widgets=()) -> list:
    """Send one rerun; the new elements of its answer, until the run has finished (not cut short)."""
    return [el for el, _ in (await t.rerun(widgets=widgets)).elements()]


async def _scenario(url: str, pid: int) -> dict:
    import websockets

    async with connect(url) as ws_a, connect(url) as ws_b:
        a, b = Tab(ws_a), Tab(ws_b)
        (button,) = [e.button.id for e in await _run_until_finished(a) if e.WhichOneof("type") == "button"]
        (step,) = [e.number_input.id for e in await _run_until_finished(b) if e.WhichOneof("type") == "number_input"]
        await asyncio.sleep(1.0)
        before = proc_status(pid)["VmRSS"]

        async def drain():  # A reads its answers (a client that never reads is another test's)
            try:
                while True:
                    await a.ws.recv()
            except (websockets.ConnectionClosed, asyncio.CancelledError):
                pass

        reader = asyncio.create_task(drain())
        pad = "x" * PAD
        for k in range(N):
            await a.ws.send(rerun_message(widgets=[(button, "trigger_value", True),
                                                   (f"$$ID-never-drawn-{k}", "string_value", pad)]))
        await asyncio.sleep(2.0)
        held = proc_status(pid)
        t0 = time.monotonic()
        shown = [e.markdown.body for e in await _run_until_finished(b, [(step, "int_value", 7)])
                 if e.WhichOneof("type") == "markdown"]
        b_seconds = time.monotonic() - t0
        reader.cancel()
        await reader
    return {"before": before, "after": held["VmRSS"], "peak": held["VmHWM"], "b_shown": shown, "b_seconds": b_seconds}


def test_a_flooding_tab_is_bounded_and_only_it_is_refused(tmp_path):
    log = tmp_path / "server.log"
    proc, url = start_server(ROOT, log, script="tests/apps/slow_callback_app.py")
    try:
        out = run_in_thread(_scenario(url, proc.pid), 240)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    text = log.read_text(errors="replace")
    # The other tab is answered (while A's queue still drains) with its own value.
    assert any("step = 7" in body for body in out["b_shown"]), out
    # Bounded: 200 MB of padding arrived; the worker holds a few MB of it at most (before: +200 MB).
    assert out["peak"] - out["before"] <= 60 and out["after"] - out["before"] <= 40, out
    # Refused, and said so in the server's log, once for the flood.
    assert text.count("click queue is full") == 1, text[-2000:]
    assert "Traceback" not in text, text[-3000:]
