"""Event-loop wake-ups per burst of a session's elements, with and without the drain's linger
(specviz/app/runtime/wakeups.py, ``LINGER_S``).

A thread plays a script drawing N elements (each element's own work is a busy wait of W us, as a widget
call's Python costs) and hands each to the event loop through ``wakeups._Drain.push``, as Streamlit hands
every ForwardMsg; the loop runs in its own thread, idle otherwise. Counted: thread-safe wake-ups of the
loop (``call_soon_threadsafe``: one self-pipe write each), and the longest and median time from an
element's push to its callback on the loop.

    python benchmarks/wakeup_linger.py [--elements 200] [--work-us 0 20 100] [--repeat 5]
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from specviz.app.runtime import wakeups  # noqa: E402


def _burst(loop, n: int, work_s: float) -> tuple[int, list[float]]:
    wakes = 0
    real = loop.call_soon_threadsafe

    def counted(cb, *args):
        nonlocal wakes
        wakes += 1
        return real(cb, *args)

    loop.call_soon_threadsafe = counted
    drain, delays, done = wakeups._Drain(loop), [], threading.Event()
    try:
        for i in range(n):
            end = time.perf_counter() + work_s
            while time.perf_counter() < end:
                pass
            t0 = time.perf_counter()
            drain.push(lambda t0=t0: delays.append(time.perf_counter() - t0))
        drain.push(done.set)
        if not done.wait(10):
            raise SystemExit("the loop did not run the burst")
    finally:
        loop.call_soon_threadsafe = real
    return wakes, delays


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=200)
    ap.add_argument("--work-us", type=float, nargs="+", default=[0, 20, 100])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    loop = asyncio.new_event_loop()
    th = threading.Thread(target=loop.run_forever, daemon=True)
    th.start()
    linger = wakeups.LINGER_S
    print(f"{args.elements} elements per burst, median of {args.repeat} bursts")
    print("| element work | linger | wake-ups per burst | push -> run median / max ms |")
    print("|---|---|---|---|")
    try:
        for work in args.work_us:
            for value in (0.0, linger):
                wakeups.LINGER_S = value
                runs = [_burst(loop, args.elements, work / 1e6) for _ in range(args.repeat)]
                wakes = statistics.median(w for w, _ in runs)
                delays = [d for _, ds in runs for d in ds]
                print(f"| {work:g} us | {value * 1e3:g} ms | {wakes:g} | "
                      f"{statistics.median(delays) * 1e3:.2f} / {max(delays) * 1e3:.2f} |")
    finally:
        wakeups.LINGER_S = linger
        loop.call_soon_threadsafe(loop.stop)
        th.join(5)
        loop.close()


if __name__ == "__main__":
    main()
