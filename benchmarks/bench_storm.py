"""A crash storm of one worker behind `specviz serve --workers 2` (issue 35 item 1): is the class served throughout?

    PYTHONPATH=$PWD /work/main/.venv/bin/python benchmarks/bench_storm.py [--kills 10] [--backoff 1,60]

Starts ``specviz serve --workers 2`` (HAProxy + 2 workers) and kills w1 (SIGKILL) ``--kills`` times, each time
0.3 s after serve started it again; meanwhile w2's own /_stcore/health and HAProxy's are polled every 0.1 s.
``--backoff BASE,CAP`` sets $SPECVIZ_SERVE_BACKOFF (default: serve's own, 1 s doubling to 60 s).
Reported (one JSON line): the health answers by status (w2, HAProxy), the back-off waits serve announced,
the seconds from the last kill until w1 answered its health check again, w1's answer while it backed off,
and whether serve stayed up. Before issue 35, serve stopped HAProxy and w2 at the 5th kill.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_serve import Served, _health  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--backoff", default=None)
    args = ap.parse_args()
    served = Served(Path(tempfile.mkdtemp()), env={"SPECVIZ_SERVE_BACKOFF": args.backoff} if args.backoff else None)
    stop = threading.Event()
    tally = {"w2": collections.Counter(), "haproxy": collections.Counter()}
    out: dict = {"kills": args.kills, "backoff": args.backoff or "1,60 (serve's default)"}
    try:
        served.wait_for(r"serving http://", timeout=300)
        ports = {m.group(1): int(m.group(2)) for m in
                 (re.search(r"worker (w\d+): pid \d+ on 127\.0\.0\.1:(\d+)", ln) for ln in served.lines) if m}

        def poll():
            while not stop.is_set():
                tally["w2"][_health(f"http://127.0.0.1:{ports['w2']}/_stcore/health")[0]] += 1
                tally["haproxy"][_health(served.base + "/_stcore/health")[0]] += 1
                time.sleep(0.1)

        threading.Thread(target=poll, daemon=True).start()
        killed: set[int] = set()
        waits, backing_off = [], collections.Counter()
        t_start = time.monotonic()
        for _ in range(args.kills):
            n = len(served.lines)
            while served.pids()["w1"] in killed:
                if served.proc.poll() is not None:
                    raise SystemExit("serve exited:\n" + "\n".join(served.lines))
                time.sleep(0.05)
            pid = served.pids()["w1"]
            time.sleep(0.3)
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
            line = served.wait_for(r"worker w1 (exited|is backing off).*", timeout=60, start=n).group(0)
            m = re.search(r"next start in ([0-9.]+) s", line)
            if m:
                waits.append(float(m.group(1)))
                status, body = _health(f"http://127.0.0.1:{ports['w1']}/_stcore/health")
                backing_off[f"{status} {'backing off' if 'backing off' in body else ''}".strip()] += 1
        t_last = time.monotonic()
        while _health(f"http://127.0.0.1:{ports['w1']}/_stcore/health")[0] != 200:
            if time.monotonic() - t_last > 600 or served.proc.poll() is not None:
                break
            time.sleep(0.2)
        out.update(w1_back_after_last_kill_s=round(time.monotonic() - t_last, 1),
                   storm_s=round(t_last - t_start, 1), announced_waits_s=waits, w1_while_backing_off=dict(backing_off))
        time.sleep(3)
        stop.set()
        time.sleep(0.5)
        out.update(w2_health={str(k): v for k, v in tally["w2"].items()},
                   haproxy_health={str(k): v for k, v in tally["haproxy"].items()},
                   serve_still_running=served.proc.poll() is None, loadavg=os.getloadavg())
        print(json.dumps(out), flush=True)
    finally:
        stop.set()
        served.stop()


if __name__ == "__main__":
    main()
