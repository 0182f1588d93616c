"""The target-only rows of a bench_kernels log, short: check_vs_before's verdicts (and any row that differs),
then one line a timed row. Used by the gpu_issue36_stop44/45.sh device scripts:

    python3 benchmarks/target_only_rows.py "$OUT/bench.log"
"""
import json
import sys


def main(path: str) -> None:
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    checks = [r for r in rows if r.get("impl") == "check_vs_before"]
    print("check_vs_before: %d of %d same" % (sum(r["same"] for r in checks), len(checks)))
    for r in checks:
        if not r["same"]:
            print("DIFFERS", r)
    for r in rows:
        if r.get("graph_us") and "bs" in r and r.get("op") == "tree_sampling_target_only":
            print(r["impl"], "shape", r.get("topk"), r.get("depth"), r.get("n"), "bs", r["bs"], "V", r["V"],
                  "graph us", r["graph_us"], r.get("graph_us_rounds"), "TB/s", r.get("graph_TBps"),
                  "py us", r.get("python_us"))


if __name__ == "__main__":
    main(sys.argv[1])
