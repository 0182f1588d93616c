"""One sitting of the real class (issue 31): before / after, interleaved, several runs each; one JSON and a table.

    benchmarks/real_class_sitting.sh BEFORE_COMMIT [--rounds 3] [--json FILE]

BEFORE_COMMIT is any git revision of this repository (e.g. the main of the morning); its tree is
exported with ``git archive`` into a temporary folder and served from there (``--app-dir``); "after" is
this checkout. Both are measured by this checkout's ``bench_real_class.py`` (the same client). Each
round runs, in this order (before and after interleaved, so the machine's load falls on both alike):

1. before, ``specviz serve --workers 2``: solo CPU per edit kind (``--solo``), 50 students without think
   time, 50 students thinking 0..6 s;
2. after, the same server kind: the same, and 100 students thinking 0..6 s;
3. after, one ``specviz app`` (no HAProxy): 50 students thinking 0..6 s.

Every run records the load average at its start and end (and around the solo phase); the table gives
min / median / max over the rounds. About 7 minutes a round on a quiet 2-core machine (server starts,
warm-up and a 10 s settle included): 3 rounds take ~21-25 minutes.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "bench_real_class.py"

# (label, tree, bench_real_class arguments); "before" / "after" are filled in per round.
RUNS = [
    ("serve", "before", ["--server", "serve", "--workers", "2", "--classes", "50:0", "50:6"]),
    ("serve", "after", ["--server", "serve", "--workers", "2", "--classes", "50:0", "50:6", "100:6"]),
    ("app", "after", ["--server", "app", "--solo", "0", "--classes", "50:6"]),
]


def _cpu_model() -> str:
    try:
        return next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        return "?"


def _run(tree: Path, args: list, common: list, out: Path) -> dict:
    cmd = [sys.executable, str(BENCH), "--app-dir", str(tree), *common, *args, "--json", str(out)]
    env = dict(os.environ, PYTHONPATH=str(tree))
    out.unlink(missing_ok=True)
    t0, load0 = time.time(), os.getloadavg()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    row = json.loads(out.read_text()) if out.exists() else {}
    row.update({"cmd": " ".join(cmd), "rc": proc.returncode, "wall_s": round(time.time() - t0, 1),
                "load_at_start": load0, "load_at_end": os.getloadavg()})
    if proc.returncode:
        row["stderr_tail"] = proc.stderr[-2000:]
        print(proc.stderr[-2000:], file=sys.stderr)
    return row


def _mmm(xs) -> str:
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return f"{min(xs):.3f} / {statistics.median(xs):.3f} / {max(xs):.3f}"


def summary(doc: dict) -> str:
    runs = doc["runs"]
    lines = [f"CPU: {doc['cpu']}; before = {doc['before']} ({doc['before_sha'][:10]}), after = {doc['after_sha'][:10]}"
             f"{' + uncommitted changes' if doc['after_dirty'] else ''}; {doc['rounds']} rounds, "
             f"{doc['started']} - {doc['ended']} UTC", ""]
    lines += ["| run | round | load avg (1 min) start -> end | wall s |", "|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['tree']} {r['label']} | {r['round']} | {r['load_at_start'][0]:.2f} -> {r['load_at_end'][0]:.2f} | {r['wall_s']} |")
    # solo CPU per kind: before / after, min / median / max over the rounds
    kinds = sorted({k for r in runs for k in (r.get("solo") or {})})
    lines += ["", "Server CPU s per edit, alone on the server (solo), min / median / max over rounds:", "",
              "| edit kind | before | after |", "|---|---|---|"]
    for tree_kind in kinds + ["**mean over kinds**"]:
        cells = []
        for tree in ("before", "after"):
            vals = []
            for r in runs:
                if r["tree"] != tree or not r.get("solo"):
                    continue
                solo = r["solo"]
                vals.append(statistics.mean(v["cpu_s"] for v in solo.values()) if tree_kind.startswith("**")
                            else solo.get(tree_kind, {}).get("cpu_s"))
            cells.append(_mmm(vals))
        lines.append(f"| {tree_kind} | {cells[0]} | {cells[1]} |")
    # classes
    lines += ["", "Classes, min / median / max over rounds (latency click -> verified view, seconds):", "",
              "| class | tree | edits | lost / errors / leaks / busy (sum) | p50 | p95 | max | server CPU s / edit | RSS MB |",
              "|---|---|---|---|---|---|---|---|---|"]
    seen = []
    for r in runs:
        for c in r.get("classes", []):
            key = (r["label"], r["tree"], c["students"], c["think"])
            if key not in seen:
                seen.append(key)
    for label, tree, n, think in seen:
        cs = [c for r in runs if r["label"] == label and r["tree"] == tree
              for c in r.get("classes", []) if c["students"] == n and c["think"] == think]
        bad = "/".join(str(sum(c[k] for c in cs)) for k in ("lost", "errors", "leaks", "busy"))
        lines.append(f"| {n} students, think 0..{think:g} s, {label} | {tree} | {sum(c['edits'] for c in cs)} | {bad} | "
                     f"{_mmm(c['p50'] for c in cs)} | {_mmm(c['p95'] for c in cs)} | {_mmm(c['max'] for c in cs)} | "
                     f"{_mmm(c['server_cpu_s_per_edit'] for c in cs)} | {_mmm(c['rss_mb'] for c in cs)} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", help="git revision of the 'before' tree (exported with git archive)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--edits", type=int, default=2, help="rounds of every edit kind per student in a class")
    ap.add_argument("--solo", type=int, default=2, help="rounds of every edit kind in the solo phase")
    ap.add_argument("--settle", type=float, default=10.0)
    ap.add_argument("--json", type=Path, default=Path("/tmp/real_class_sitting.json"))
    args = ap.parse_args()

    git = lambda *a: subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()  # noqa: E731
    doc = {"cpu": _cpu_model(), "before": args.before, "before_sha": git("rev-parse", args.before),
           "after_sha": git("rev-parse", "HEAD"), "after_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
           "rounds": args.rounds, "started": time.strftime("%H:%M:%S", time.gmtime()), "runs": []}
    common = ["--edits", str(args.edits), "--solo", str(args.solo), "--settle", str(args.settle)]
    with tempfile.TemporaryDirectory(prefix="specviz_before_") as tmp:
        before = Path(tmp)
        archive = subprocess.run(["git", "archive", args.before], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        trees = {"before": before, "after": ROOT}
        for rnd in range(1, args.rounds + 1):
            for label, tree, extra in RUNS:
                # bench_real_class takes the last --solo it is given: the app run's "--solo 0" wins over common's.
                print(f"round {rnd}: {tree} {label} ...", flush=True)
                row = _run(trees[tree], extra, common, before.parent / f"real_class_sitting_{os.getpid()}.json")
                row.update({"round": rnd, "tree": tree, "label": label})
                doc["runs"].append(row)
                args.json.write_text(json.dumps(doc, indent=1))  # what has run so far, should a later run fail
    doc["ended"] = time.strftime("%H:%M:%S", time.gmtime())
    args.json.write_text(json.dumps(doc, indent=1))
    text = summary(doc)
    print(text)
    print(f"\n(JSON: {args.json})")


if __name__ == "__main__":
    main()
