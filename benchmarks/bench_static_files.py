"""What serving Streamlit's frontend files costs the app's own process, alone and beside a script run:

    PYTHONPATH=$PWD /work/main/.venv/bin/python benchmarks/bench_static_files.py [--files 120] [--rounds 4]

Serves the same ``--files`` files of Streamlit's static/js (a first visit fetches ~120) through Streamlit's
static handler, 6 at a time (a browser's connections to one host), straight through ASGI (no sockets, no
browser), with and without ``specviz.app.runtime.static_files``; first on an idle process, then with a thread
that keeps the GIL busy in pure Python, as a script run does. Prints min / median / max ms per round of files,
the rounds alternated.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamlit import file_util  # noqa: E402
from streamlit.web.server.starlette import starlette_static_routes as routes  # noqa: E402

from specviz.app.runtime import static_files  # noqa: E402

STATIC = file_util.get_static_dir()


def handler(patched: bool):
    create = getattr(routes.create_streamlit_static_handler, "__wrapped__", routes.create_streamlit_static_handler)
    h = create(directory=STATIC, base_url=None)
    if patched:
        static_files.wrap_handler(h, STATIC)
    return h


async def get(app, path: str) -> int:
    scope = {"type": "http", "method": "GET", "path": path, "root_path": "", "query_string": b"", "headers": [],
             "scheme": "http", "server": ("bench", 80), "asgi": {"version": "3.0", "spec_version": "2.4"},
             "extensions": {}}
    sent, asked = [], []

    async def receive():
        if not asked:
            asked.append(1)
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()

    async def send(message):
        sent.append(message)
    await app(scope, receive, send)
    if sent[0]["status"] != 200:
        raise RuntimeError(f"{path}: HTTP {sent[0]['status']}")
    return sum(len(m.get("body", b"")) for m in sent[1:])


async def one_round(app, paths) -> float:
    gate = asyncio.Semaphore(6)

    async def one(p):
        async with gate:
            return await get(app, p)
    t0 = time.perf_counter()
    await asyncio.gather(*(one(p) for p in paths))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=120)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    table = static_files.file_table(STATIC)
    paths = ["/" + k.replace(os.sep, "/") for k in sorted(table) if k.startswith(os.path.join("static", "js"))][:args.files]
    stop = threading.Event()

    def script_run():  # pure Python, as a page's script: it holds the GIL for a switch interval at a time
        while not stop.is_set():
            sum(i * i for i in range(1000))
    print(f"{len(paths)} files, {sum(table[p[1:].replace('/', os.sep)][1].st_size for p in paths) / 1e6:.1f} MB; "
          f"load average {os.getloadavg()[0]:.2f}")
    for busy in (False, True):
        if busy:
            threading.Thread(target=script_run, daemon=True).start()
        res = {False: [], True: []}
        for _ in range(args.rounds):
            for patched in (False, True):
                res[patched].append(asyncio.run(one_round(handler(patched), paths)) * 1000)
        for patched in (False, True):
            xs = res[patched]
            print(f"  {'beside a script run' if busy else 'idle':20s} {'static_files' if patched else 'Streamlit alone':16s}"
                  f" {min(xs):6.0f} / {statistics.median(xs):6.0f} / {max(xs):6.0f} ms")
    stop.set()


if __name__ == "__main__":
    main()
