"""What holds a worker's memory, measured (issue 35 item 3): tracemalloc on request, for benchmarks only.

With ``SPECVIZ_HEAPDUMP=/path/prefix`` in a worker's environment, ``install()`` starts tracemalloc (Python
allocations, 1 frame each) and a ``SIGUSR1`` writes ``/path/prefix.<n>.txt``: the 40 largest holders by
file and line, and the total. Off (and free) without the variable.
"""
from __future__ import annotations

import os
import signal

_count = [0]


def dump(prefix: str) -> str:
    import gc
    import tracemalloc

    gc.collect()
    snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    stats = snap.statistics("lineno")
    _count[0] += 1
    path = f"{prefix}.{_count[0]}.txt"
    total = sum(s.size for s in stats)
    with open(path, "w") as out:
        out.write(f"total traced {total / 2**20:.1f} MB in {sum(s.count for s in stats)} blocks\n")
        for s in stats[:40]:
            out.write(f"{s.size / 2**20:9.2f} MB {s.count:8d} {s.traceback[0].filename}:{s.traceback[0].lineno}\n")
        counts: dict = {}
        for o in gc.get_objects():
            name = type(o).__name__
            if name in ("AppSession", "ScriptRunner", "SessionState", "ForwardMsg", "BackMsg"):
                counts[name] = counts.get(name, 0) + 1
        out.write(f"live objects: {counts}\n")
        big = sorted((o for o in gc.get_referents(*gc.get_objects()) if isinstance(o, (str, bytes)) and len(o) > 100_000),
                     key=len, reverse=True)[:8]
        for o in big:
            chain = []
            ref = o
            for _ in range(4):
                refs = [r for r in gc.get_referrers(ref) if not isinstance(r, list) or len(r) < 1000][:1]
                if not refs:
                    break
                ref = refs[0]
                chain.append(type(ref).__name__ + (f"{sorted(ref)[:3]}" if isinstance(ref, dict) else ""))
            out.write(f"{len(o) / 2**20:6.2f} MB {type(o).__name__} {o[:40]!r} held by {' <- '.join(chain)}\n")
    return path


def install() -> bool:
    prefix = os.environ.get("SPECVIZ_HEAPDUMP")
    if not prefix:
        return False
    import tracemalloc

    if not tracemalloc.is_tracing():
        tracemalloc.start(1)
    signal.signal(signal.SIGUSR1, lambda *_: dump(prefix))
    return True
