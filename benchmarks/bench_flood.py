"""One tab floods its websocket with presses of one button (issue 35 item 2): a worker's memory and the other tabs.

    PYTHONPATH=$PWD /work/main/.venv/bin/python benchmarks/bench_flood.py [--messages 2500] [--pad-mb 1]
                                                                          [--app-dir DIR]

Starts one ``streamlit run app.py`` (``--app-dir``: another checkout, e.g. ``git archive`` of main, for a
before/after), opens two tabs on the greedy page as websocket clients speaking Streamlit's protocol, then:

* tab A sends ``--messages`` rerun requests as fast as the socket takes them, each a press of the page's
  first button plus a widget state of ``--pad-mb`` MB under an id the page never drew (the issue's hostile
  student), reading (and dropping) whatever the server answers;
* meanwhile tab B edits Target(A) (B / C alternately) and times each rerun, as before the flood.

Reported (one JSON line): the server's RSS before, its peak (VmHWM) and after the flood has drained (held),
in MB; the server's CPU seconds (user + system, /proc) during the flood and its drain; tab B's rerun
times before and during the flood (min / median / max, s); how many of A's requests the page says were
refused, and whether B ever saw that warning (it must not).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFUSED_RE = re.compile(r"(\d+) of this tab's clicks or edits were refused")
NCD_RE = re.compile(r"num_correct_drafts = (\d+)`")


def proc_status(pid: int) -> dict:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmHWM", "VmRSS")):
            k, v = line.split(":")
            out[k] = int(v.split()[0]) // 1024  # MB
    return out


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rerun_msg(widgets: list[tuple[str, str, object]], page: str = "greedy") -> bytes:
    from streamlit.proto.BackMsg_pb2 import BackMsg

    bm = BackMsg()
    bm.rerun_script.query_string = ""
    bm.rerun_script.page_name = page
    for wid, kind, value in widgets:
        w = bm.rerun_script.widget_states.widgets.add()
        w.id = wid
        setattr(w, kind, value)
    return bm.SerializeToString()


def _parse(raw: bytes, seen: dict) -> str | None:
    """Note what a ForwardMsg shows in ``seen``; returns 'finished' at the end of a full run."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    fm = ForwardMsg()
    fm.ParseFromString(raw)
    kind = fm.WhichOneof("type")
    if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
        el = fm.delta.new_element
        which = el.WhichOneof("type")
        if which == "exception":
            seen["errors"].append(str(el)[:300])
        elif which == "alert":
            m = REFUSED_RE.search(el.alert.body)
            if m:
                seen["refused"] += int(m.group(1))
            elif el.alert.format == el.alert.ERROR:
                seen["errors"].append(el.alert.body[:300])
        elif which == "selectbox" and el.selectbox.label.startswith("Target(A)"):
            seen["target_a"] = el.selectbox.id
        elif which == "button" and seen.get("button") is None:
            seen["button"], seen["button_label"] = el.button.id, el.button.label
        elif which == "markdown":
            m = NCD_RE.search(el.markdown.body)
            if m:
                seen["ncd"] = int(m.group(1))
    elif kind == "script_finished":
        seen["runs"] += 1  # every run, those cut short by the next queued press too
        if fm.script_finished != fm.FINISHED_EARLY_FOR_RERUN:
            return "finished"
    return None


def _seen() -> dict:
    return {"errors": [], "refused": 0, "target_a": None, "button": None, "ncd": None, "runs": 0}


async def _rerun(ws, seen: dict, widgets=()) -> float:
    t0 = time.perf_counter()
    await ws.send(_rerun_msg(list(widgets)))
    while _parse(await asyncio.wait_for(ws.recv(), timeout=120), seen) != "finished":
        pass
    return time.perf_counter() - t0


async def flood(base: str, pid: int, messages: int, pad_bytes: int, drain_timeout: float = 300.0) -> dict:
    import websockets

    uri = base.replace("http://", "ws://") + "/_stcore/stream"
    connect = dict(subprotocols=["streamlit"], max_size=None)
    async with websockets.connect(uri, **connect) as a, websockets.connect(uri, **connect) as b:
        sa, sb = _seen(), _seen()
        await _rerun(a, sa)
        await _rerun(b, sb)
        assert sa["button"] and sb["target_a"], (sa, sb)
        before = [await _rerun(b, sb, [(sb["target_a"], "string_value", "BC"[k % 2])]) for k in range(5)]
        # Warm: the backends load in the background after the first page; wait until RSS is steady for 3 s.
        steady_from, last = time.monotonic(), proc_status(pid)["VmRSS"]
        for _ in range(120):
            await asyncio.sleep(0.5)
            now = proc_status(pid)["VmRSS"]
            if abs(now - last) > 3:
                steady_from, last = time.monotonic(), now
            elif time.monotonic() - steady_from >= 3:
                break
        await _rerun(b, sb, [(sb["target_a"], "string_value", "B")])
        rss0, cpu0 = proc_status(pid), cpu_seconds(pid)
        last_rx = [time.monotonic()]

        async def read_a():
            try:
                while True:
                    _parse(await a.recv(), sa)
                    last_rx[0] = time.monotonic()
            except (websockets.ConnectionClosed, asyncio.CancelledError):
                pass

        reader = asyncio.create_task(read_a())
        sb_during = _seen()
        sb_during["target_a"] = sb["target_a"]
        during: list[float] = []
        sending = [True]

        async def edits_b():
            k = 0
            while sending[0] or len(during) < 5:
                during.append(await _rerun(b, sb_during, [(sb["target_a"], "string_value", "BC"[k % 2])]))
                k += 1

        editor = asyncio.create_task(edits_b())
        pad = "x" * pad_bytes
        t0 = time.monotonic()
        for k in range(messages):
            await a.send(_rerun_msg([(sa["button"], "trigger_value", True), (f"$$ID-never-drawn-{k}", "string_value", pad)]))
        sent_s = time.monotonic() - t0
        sending[0] = False
        # Drained: tab A has received nothing for 3 s (its queue is empty and its last run is over).
        deadline = time.monotonic() + drain_timeout
        while time.monotonic() - last_rx[0] < 3.0 and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        drained = time.monotonic() < deadline
        await editor
        # One more plain rerun of A: it reports the refusals it has not reported yet.
        reader.cancel()
        await reader
        await _rerun(a, sa)
        time.sleep(2.0)
        rss1, cpu1 = proc_status(pid), cpu_seconds(pid)

    def stats(xs):
        return {"min": round(min(xs), 3), "median": round(statistics.median(xs), 3), "max": round(max(xs), 3),
                "n": len(xs)}

    return {"messages": messages, "pad_MB": pad_bytes / 2**20, "send_s": round(sent_s, 1), "drained": drained,
            "rss_before_MB": rss0["VmRSS"], "peak_MB": rss1["VmHWM"], "held_MB": rss1["VmRSS"],
            "peak_above_before_MB": rss1["VmHWM"] - rss0["VmRSS"], "held_above_before_MB": rss1["VmRSS"] - rss0["VmRSS"],
            "server_cpu_s": round(cpu1 - cpu0, 1), "button": sa.get("button_label"), "tab_a_runs": sa["runs"], "tab_a_refused_reported": sa["refused"],
            "tab_b_refused_reported": sb["refused"] + sb_during["refused"],
            "tab_b_rerun_before_s": stats(before), "tab_b_rerun_during_s": stats(during),
            "tab_b_errors": sb["errors"] + sb_during["errors"], "tab_a_errors": sa["errors"][:3],
            "loadavg": os.getloadavg()}


def start_server(app_dir: Path, log: Path, script: str = "app.py") -> tuple[subprocess.Popen, str]:
    sys.path.insert(0, str(ROOT))
    from tests.conftest import _free_port, _wait_health

    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(app_dir), TRITON_INTERPRET=os.environ.get("TRITON_INTERPRET", "1"),
               STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", script, "--server.headless", "true",
                                 "--server.address", "127.0.0.1", "--server.port", str(port),
                                 "--server.fileWatcherType", "none", "--runner.postScriptGC", "false",
                                 "--runner.fastReruns", "false", "--global.minCachedMessageSize", "1e18"],
                                cwd=app_dir, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    _wait_health(url, proc, timeout=120)
    return proc, url


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=2500)
    ap.add_argument("--pad-mb", type=float, default=1.0)
    ap.add_argument("--app-dir", default=str(ROOT))
    args = ap.parse_args()
    import tempfile

    log = Path(tempfile.mkdtemp(prefix="bench-flood-")) / "server.log"
    proc, url = start_server(Path(args.app_dir), log)
    try:
        print(json.dumps(asyncio.run(flood(url, proc.pid, args.messages, int(args.pad_mb * 2**20)))), flush=True)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
