"""Bytes the server sends a browser per edit of the greedy page, read from a websocket client, and the
step player's time per step in chromium.

    /work/main/.venv/bin/python benchmarks/bench_player_bytes.py [--edits 8] [--steps 3] [--app-dir DIR]

One ``streamlit run app.py`` (``--app-dir``: another checkout, e.g. ``git archive`` of an older
commit, for a before/after); one client speaking Streamlit's protocol opens the greedy page, then
sets Target(A) to each vocabulary token in turn (every edit a new target prediction: new frames,
never a message the client already holds), then reruns once with nothing changed. Reported:
bytes of every websocket message from the server per edit (min / median / max), the bytes of a
rerun that changed nothing, and how many bytes of them were the step player's element. Then
(``--steps`` passes, 0 to skip) chromium opens the greedy page and clicks "next" through the walk:
per step, from the click until the new figure is decoded, timed with the page's own clock
(min / median / max; no server round trip is involved). SPECVIZ_LAYOUT=browser|server chooses where
the figures are laid out, as for the app.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import websockets  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from tests.conftest import _free_port, _wait_health  # noqa: E402

PLAYER_KINDS = ("iframe", "bidi_component")


async def _rerun(ws, widgets: dict, fragment_id: str = "", held: set | None = None) -> dict:
    """One rerun; ``held``: the hashes of cacheable messages this client holds (a browser names them
    in each rerun request, and the server then sends a reference instead of a message it holds)."""
    held = set() if held is None else held
    bm = BackMsg()
    cs = bm.rerun_script
    cs.page_name = "greedy"
    cs.fragment_id = fragment_id
    cs.cached_message_hashes.extend(sorted(held))
    for wid, (kind, value) in widgets.items():
        w = cs.widget_states.widgets.add()
        w.id = wid
        setattr(w, kind, value)
    await ws.send(bm.SerializeToString())
    out = {"bytes": 0, "player": 0, "target": None, "options": [], "fragment": ""}
    while True:
        raw = await asyncio.wait_for(ws.recv(), timeout=60)
        out["bytes"] += len(raw)
        fm = ForwardMsg()
        fm.ParseFromString(raw)
        if fm.metadata.cacheable and fm.hash:
            held.add(fm.hash)
        kind = fm.WhichOneof("type")
        if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
            el = fm.delta.new_element
            if el.WhichOneof("type") in PLAYER_KINDS:
                out["player"] += len(raw)
                if os.environ.get("DEBUG_BYTES"):
                    print("player", fm.hash, fm.metadata.cacheable, len(held))
            if el.WhichOneof("type") == "selectbox" and el.selectbox.label.startswith("Target(A)"):
                out["target"], out["options"], out["fragment"] = el.selectbox.id, list(el.selectbox.options), fm.delta.fragment_id
        elif kind == "script_finished" and fm.script_finished != fm.FINISHED_EARLY_FOR_RERUN:
            return out


async def measure(url: str, edits: int) -> dict:
    uri = url.replace("http://", "ws://") + "/_stcore/stream"
    async with websockets.connect(uri, max_size=None, subprotocols=["streamlit"]) as ws:
        held: set = set()
        first = await _rerun(ws, {}, "", held)
        target, options, fragment = first["target"], first["options"], first["fragment"]
        widgets, sizes, player = {}, [], []
        for k in range(edits):
            widgets[target] = ("string_value", options[(k + 2) % len(options)])
            got = await _rerun(ws, widgets, fragment, held)
            sizes.append(got["bytes"])
            player.append(got["player"])
        same = await _rerun(ws, widgets, fragment, held)
    return {"first": first["bytes"], "edits": sizes, "player": player, "unchanged": same["bytes"],
            "unchanged_player": same["player"]}


# One step in the page's own clock: click "next" and wait until the figure shown is decoded. Finds the
# player inside the component's shadow root (or the iframe document of an older checkout).
STEP_JS = """async () => {
  let root = null;
  for (const el of document.querySelectorAll('*')) {
    if (el.shadowRoot && el.shadowRoot.querySelector('.sv-player')) { root = el.shadowRoot.querySelector('.sv-player'); break; }
  }
  if (!root) { const f = document.querySelector('iframe'); root = f && f.contentDocument && f.contentDocument.body; }
  const img = root.querySelector('[data-sv-img]');
  const t0 = performance.now();
  root.querySelector('[data-sv-btn="next"]').click();
  try { await img.decode(); } catch (e) {}
  return performance.now() - t0;
}"""


def step_times(url: str, passes: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    from tests.conftest import CHROMIUM, CHROMIUM_ARGS, wait_for_app

    out = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url + "/greedy", wait_until="domcontentloaded")
        wait_for_app(page)
        page.wait_for_timeout(1500)
        for _ in range(passes):
            page.keyboard.press("Home")
            for _ in range(10):
                out.append(page.evaluate(STEP_JS))
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edits", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3, help="passes of 10 steps through the greedy walk in chromium (0: none)")
    ap.add_argument("--app-dir", type=Path, default=ROOT)
    args = ap.parse_args()
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(args.app_dir), TRITON_INTERPRET="1")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
                             "--server.fileWatcherType", "none"], cwd=args.app_dir, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_health(url, proc)
        r = asyncio.run(measure(url, args.edits))
        steps = step_times(url, args.steps) if args.steps else []
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    kb = [b / 1000 for b in r["edits"]]
    print(f"app: {args.app_dir}  layout: {os.environ.get('SPECVIZ_LAYOUT', 'auto')}  load average {os.getloadavg()[0]:.2f}")
    print(f"first visit of the greedy page: {r['first'] / 1000:.1f} KB")
    print(f"per greedy edit (new target prediction, {len(kb)} edits): min {min(kb):.1f} / median {statistics.median(kb):.1f} / "
          f"max {max(kb):.1f} KB; the player's element: median {statistics.median(r['player']) / 1000:.1f} KB")
    print(f"a rerun that changed nothing: {r['unchanged'] / 1000:.1f} KB (the player's element {r['unchanged_player'] / 1000:.1f} KB)")
    if steps:
        print(f"a step in chromium ({len(steps)} steps, click -> figure decoded): min {min(steps):.1f} / "
              f"median {statistics.median(steps):.1f} / max {max(steps):.1f} ms (load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
