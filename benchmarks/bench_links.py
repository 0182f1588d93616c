"""Memory a worker holds after a stream of share links (issue 35 item 3), and what holds it.

    PYTHONPATH=$PWD /work/main/.venv/bin/python benchmarks/bench_links.py [--links 340] [--ttl 120] [--heap]
                                                                          [--app-dir DIR]

Starts one worker as ``specviz serve`` does (``python -m specviz.app.ui.worker run app.py``, warmed up), then opens
``--links`` different share links one after the other, each in a new websocket session that runs the page once
and closes (a student following a link): a mix of the tree builder, greedy and batch pages (a random edit of the
running example / the two-request batch each) and chain links with a 1024-token vocabulary (random p and q).
It then waits until the disconnected sessions have expired (``--ttl``: Streamlit's
server.disconnectedSessionTTL, default 120 s, +10 s), opens one more page and reads the worker's RSS.
``--heap``: the worker runs under tracemalloc (slower) and writes what holds Python memory before the links,
after them, and after expiry (specviz/app/ui/heapdump.py); the files' paths are printed.

One JSON line: RSS before (warm, one page seen), peak, held after the links, held after expiry (MB), the
worker's CPU seconds for the links, and the load average.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_flood import _parse, _seen, cpu_seconds, proc_status  # noqa: E402


def links(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """(page, share token) for ``n`` different links: 3 of 4 tree pages, 1 of 4 a 1024-token chain."""
    from specviz.inputs.scenario import load_scenario, scenario_from_json
    from specviz.rooms.share import ShareState, encode_state

    rng = random.Random(seed)
    tree = json.loads(load_scenario(ROOT / "scenarios" / "running_example.json").to_json())
    batch = json.loads(load_scenario(ROOT / "scenarios" / "batch_two_requests.json").to_json())
    out = []
    for k in range(n):
        kind = ("tree_builder", "greedy", "batch_kv", "chain_sampling")[k % 4]
        if kind == "chain_sampling":
            v = 1024
            vocab = [f"t{i}" for i in range(v - 1)] + ["R"]

            def dist():
                w = [rng.randint(0, 99) for _ in range(v - 1)] + [0]
                s = sum(w)
                out = [round(x / s, 6) for x in w]
                top = max(range(v), key=out.__getitem__)
                out[top] = round(1.0 - (sum(out) - out[top]), 9)  # sums to 1 (6-digit rounding drifted 1e-4)
                return out

            d = {"format": "specviz.scenario", "version": 1, "name": f"chain{k}", "algorithm": "chain_rejection",
                 "vocab": vocab, "requests": [{"chain": ["R", "t1"], "seq_len": 10, "target_probs": [dist(), dist()],
                                               "draft_probs": [dist()], "coins": [round(rng.random(), 3)],
                                               "coin_final": round(rng.random(), 3)}]}
            slot = "chain"
        else:
            d = json.loads(json.dumps(batch if kind == "batch_kv" else tree))
            d["name"] = f"link{k}"
            for r in d["requests"]:
                r["target_predict"] = [rng.choice(d["vocab"]) for _ in r["target_predict"]]
                r["seq_len"] = rng.randint(5, 5000)
            slot = "batch" if kind == "batch_kv" else "tree"
        token = encode_state(ShareState(page=kind, slot=slot, scenario=scenario_from_json(json.dumps(d))))
        out.append((kind, token))
    return out


async def open_link(uri: str, page: str, token: str) -> dict:
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg

    seen = _seen()
    async with websockets.connect(uri, subprotocols=["streamlit"], max_size=None) as ws:
        bm = BackMsg()
        bm.rerun_script.query_string = f"s={token}"
        bm.rerun_script.page_name = page
        await ws.send(bm.SerializeToString())
        while _parse(await asyncio.wait_for(ws.recv(), timeout=300), seen) != "finished":
            pass
    return seen


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--links", type=int, default=340)
    ap.add_argument("--ttl", type=int, default=120, help="server.disconnectedSessionTTL (s)")
    ap.add_argument("--heap", action="store_true")
    ap.add_argument("--app-dir", default=str(ROOT))
    args = ap.parse_args()
    from tests.conftest import _free_port, _wait_health

    tmp = Path(tempfile.mkdtemp(prefix="bench-links-"))
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=args.app_dir, TRITON_INTERPRET="1", STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    try:  # as `specviz serve` starts its workers (a checkout from before issue 35 has no such module)
        env.update(json.loads(subprocess.run([sys.executable, "-c", "import json; from specviz.app.ui.memory import "
                                              "MALLOC_ENV as e; print(json.dumps(e))"], env=env, cwd=args.app_dir,
                                             capture_output=True, text=True, check=True).stdout))
    except subprocess.CalledProcessError:
        pass
    if args.heap:
        env["SPECVIZ_HEAPDUMP"] = str(tmp / "heap")
    code = ("import sys; from specviz.app.cli import app_command; "
            f"print(' '.join(app_command(['--server.port', '{port}', '--server.disconnectedSessionTTL', '{args.ttl}'])))")
    cmd = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=args.app_dir).stdout.split()
    log = open(tmp / "worker.log", "w")
    proc = subprocess.Popen(cmd, env=env, cwd=args.app_dir, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    uri = f"ws://127.0.0.1:{port}/_stcore/stream"
    dumps = []

    def heap(label):
        if args.heap:
            n = len(list(tmp.glob("heap.*.txt")))
            os.kill(proc.pid, signal.SIGUSR1)
            for _ in range(240):
                time.sleep(0.5)
                if len(list(tmp.glob("heap.*.txt"))) > n:
                    break
            time.sleep(1)
            dumps.append((label, str(tmp / f"heap.{n + 1}.txt")))

    try:
        _wait_health(url, proc, timeout=300)
        the_links = links(args.links)
        asyncio.run(open_link(uri, "greedy", the_links[1][1]))
        time.sleep(2)
        before = proc_status(proc.pid)
        heap("before")
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        errors, first_error = 0, None
        for page, token in the_links:
            seen = asyncio.run(open_link(uri, page, token))
            errors += bool(seen["errors"])
            first_error = first_error or (seen["errors"] and f"{page}: {seen['errors'][0][:200]}")
        cpu1, wall = cpu_seconds(proc.pid), time.monotonic() - t0
        after = proc_status(proc.pid)
        heap("after_links")
        time.sleep(args.ttl + 10)
        asyncio.run(open_link(uri, "greedy", the_links[1][1]))  # (Streamlit drops expired sessions on access)
        time.sleep(2)
        expired = proc_status(proc.pid)
        heap("after_expiry")
        print(json.dumps({"links": args.links, "ttl_s": args.ttl, "rss_before_MB": before["VmRSS"],
                          "peak_MB": expired["VmHWM"], "held_after_links_MB": after["VmRSS"],
                          "held_after_expiry_MB": expired["VmRSS"],
                          "held_above_before_MB": expired["VmRSS"] - before["VmRSS"], "pages_with_errors": errors, "first_error": first_error,
                          "worker_cpu_s": round(cpu1 - cpu0, 1), "wall_s": round(wall, 1),
                          "loadavg": os.getloadavg(), "heap_dumps": dumps}), flush=True)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
