"""Where the test suite's time goes, in CPU-seconds (a pytest plugin; works with and without -n 2).

Wall-clock durations (``--durations``) are disturbed by anything else on the machine; CPU-seconds are not
(much). For every test this plugin records the CPU time spent during its setup, call and teardown by the
pytest process itself and by every process below it: the Streamlit servers, chromium and its renderers,
HAProxy, ``specviz serve`` workers, subprocesses that have ended (``RUSAGE_CHILDREN``) and those still
running (``/proc/PID/stat``: utime + stime + cutime + cstime). A session fixture's start-up is charged to
the first test that uses it, which is what one wants when asking "what does this file cost".

Run (one command; the table is printed at the end and written as JSON lines)::

    TRITON_INTERPRET=1 .venv/bin/python -m pytest -q -n 2 -p benchmarks.pytest_cpu --cpu-out cpu.jsonl
    .venv/bin/python -m benchmarks.pytest_cpu cpu.jsonl            # per file, then the 40 costliest tests
    .venv/bin/python -m benchmarks.pytest_cpu before.jsonl after.jsonl   # files in both, side by side

Write ``--cpu-out=FILE`` (with ``=``) when FILE is outside the repository: as two words and no test path given,
pytest takes FILE for a
test path while it looks for its rootdir and pytest.ini, and then runs without the ini's options (the
exhaustive tests too, and no --dist worksteal).
Under -n 2 each worker writes its own file (``cpu.gw0.jsonl``, ``cpu.gw1.jsonl``); name ``cpu.jsonl`` to read both.
A test's figure can be off (even negative) when a long-lived process below the test process ends and is reaped
elsewhere (chromium's helpers at the session's end); per-file sums over a whole run are the robust figures.

Processes re-parented away from the test process (a daemon that double-forks) are not seen; nothing in
the suite does that.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def _kind(comm: str) -> str:
    """The kind of a process below the test process, from its command name: chromium (the browser and its
    helpers), python (Streamlit servers, `specviz serve` workers, subprocesses), or other (HAProxy, dot, ...)."""
    if "chrom" in comm or comm.startswith(("headless_shell", "cat")) or comm == "node":  # node: Playwright's driver
        return "chromium"
    return "python" if comm.startswith(("python", "streamlit", "specviz")) else "other"


def _descendants_by_kind(root: int) -> dict[str, float]:
    """CPU seconds of the live processes below ``root`` (each one's own plus its reaped children's), by kind."""
    parent: dict[int, int] = {}
    times: dict[int, float] = {}
    kinds: dict[int, str] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                raw = fh.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2:].split()
        pid = int(name)
        parent[pid] = int(fields[1])
        times[pid] = sum(int(x) for x in fields[11:15]) / _TICK
        kinds[pid] = _kind(raw[raw.find("(") + 1:raw.rfind(")")])
    total = {"chromium": 0.0, "python": 0.0, "other": 0.0}
    for pid, cpu in times.items():
        p, seen = parent.get(pid), 0
        while p and p != root and seen < 64:
            p, seen = parent.get(p), seen + 1
        if p == root and pid != root:
            total[kinds[pid]] += cpu
    return total


def _cpu_parts() -> dict[str, float]:
    """CPU seconds so far: this process ("self"), its reaped children ("reaped") and the live ones by kind."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"self": own.ru_utime + own.ru_stime, "reaped": reaped.ru_utime + reaped.ru_stime,
            **_descendants_by_kind(os.getpid())}


def pytest_addoption(parser):
    parser.addoption("--cpu-out", default=None, help="JSON-lines file for per-test CPU seconds (benchmarks.pytest_cpu)")


class _Recorder:
    def __init__(self, out: Path):
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        self.path = out.with_name(f"{out.stem}.{worker}{out.suffix}") if worker else out
        self.fh = open(self.path, "w")

    def pytest_runtest_protocol(self, item, nextitem):
        self._c0, self._w0 = _cpu_parts(), time.monotonic()

    def pytest_runtest_logfinish(self, nodeid, location):
        c1 = _cpu_parts()
        parts = {k: round(c1[k] - self._c0[k], 3) for k in c1}
        self.fh.write(json.dumps({"test": nodeid, "cpu": round(sum(parts.values()), 3), "parts": parts,
                                  "wall": round(time.monotonic() - self._w0, 3), "end": round(time.time(), 2),
                                  "worker": os.environ.get("PYTEST_XDIST_WORKER", "")}) + "\n")
        self.fh.flush()


def pytest_configure(config):
    out = config.getoption("--cpu-out")
    # The xdist controller runs no tests (each worker records its own) but sees the workers' logfinish calls.
    # Its "dsession" plugin may not be registered yet when this hook runs (plugin order), so ask the option.
    if out and not hasattr(config, "workerinput") and (getattr(config.option, "numprocesses", None)
                                                       or config.pluginmanager.hasplugin("dsession")):
        return
    # A pytest that a test starts in a folder of its own (test_export's exported files) inherits PYTEST_ADDOPTS and
    # PYTEST_XDIST_WORKER: it must not open (and truncate) the worker's file, so only this project's runs record.
    if out and (config.rootpath / "benchmarks" / "pytest_cpu.py").is_file():
        config.pluginmanager.register(_Recorder(Path(out).resolve()), "specviz-cpu-recorder")


def _load(path: Path) -> list[dict]:
    files = [f for f in [path] if f.exists()] + sorted(path.parent.glob(f"{path.stem}.gw*{path.suffix}"))
    rows = []
    for f in files:
        rows += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return rows


_PARTS = ("self", "reaped", "python", "chromium", "other")


def _per_file(rows):
    agg = defaultdict(lambda: [0.0, 0.0, 0, defaultdict(float)])
    for r in rows:
        a = agg[r["test"].split("::")[0]]
        a[0] += r["cpu"]
        a[1] += r["wall"]
        a[2] += 1
        for k, v in r.get("parts", {}).items():
            a[3][k] += v
    return agg


def main(argv: list[str]) -> None:
    runs = [_load(Path(a)) for a in argv]
    if len(runs) == 1:
        rows = runs[0]
        agg = _per_file(rows)
        # The parts (when recorded): the test process itself, its reaped subprocesses, and the live processes
        # below it by kind (python: Streamlit servers and workers; chromium: the browser and Playwright's driver).
        print(f"{'file':58} {'tests':>5} {'cpu s':>8} {'wall s':>8}  " + " ".join(f"{k:>8}" for k in _PARTS))
        for f, (cpu, wall, n, parts) in sorted(agg.items(), key=lambda kv: -kv[1][0]):
            print(f"{f:58} {n:5d} {cpu:8.1f} {wall:8.1f}  " + " ".join(f"{parts.get(k, 0):8.1f}" for k in _PARTS))
        print(f"{'total':58} {len(rows):5d} {sum(r['cpu'] for r in rows):8.1f} {sum(r['wall'] for r in rows):8.1f}")
        timed = [r for r in rows if "end" in r]
        if timed:  # how the workers finish: a long last test leaves the other worker idle at the end
            t0 = min(r["end"] - r["wall"] for r in timed)
            print("\nworker  tests    cpu s  last end s  last test")
            for w in sorted({r.get("worker", "") for r in timed}):
                mine = sorted((r for r in timed if r.get("worker", "") == w), key=lambda r: r["end"])
                print(f"{w or '-':6} {len(mine):6d} {sum(r['cpu'] for r in mine):8.1f} {mine[-1]['end'] - t0:11.1f}"
                      f"  {mine[-1]['test']}")
        print("\ncostliest tests (cpu s, wall s):")
        for r in sorted(rows, key=lambda r: -r["cpu"])[:40]:
            parts = r.get("parts", {})
            print(f"{r['cpu']:7.1f} {r['wall']:7.1f}  " + (" ".join(f"{k} {parts[k]:.1f}" for k in _PARTS if parts.get(k))
                                                           + "  " if parts else "") + r["test"])
        return
    a, b = (_per_file(r) for r in runs[:2])
    common = sorted(set(a) & set(b), key=lambda f: -a[f][0])
    print("files in both runs; cpu s and wall s, before -> after")
    print(f"{'file':58} {'cpu before':>10} {'after':>8} {'wall before':>11} {'after':>8}")
    for f in common:
        print(f"{f:58} {a[f][0]:10.1f} {b[f][0]:8.1f} {a[f][1]:11.1f} {b[f][1]:8.1f}")
    print(f"{'total':58} {sum(a[f][0] for f in common):10.1f} {sum(b[f][0] for f in common):8.1f} "
          f"{sum(a[f][1] for f in common):11.1f} {sum(b[f][1] for f in common):8.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
