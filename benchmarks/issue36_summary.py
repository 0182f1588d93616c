"""Issue 36's summary tables from a bench_kernels.py results JSON (run with --before): per op and size,
the Python call before / after, the graph time, the goal-1 bound (graph + 2 empty Python launches),
SGLang's Python call, and TB/s; then the checks against the earlier kernels.

    python benchmarks/issue36_summary.py benchmarks/results_h200.json
"""
import json
import sys

OPS = ["build_tree", "verify_tree_greedy", "tree_sampling_target_only", "chain_rejection_sampling",
       "target_probs_from_logits", "target_probs_top_k_top_p", "dspark_accept_greedy", "fill_bonus_tokens"]


def main(path):
    rows = json.load(open(path))
    empty = next(r for r in rows if r["op"] == "empty_triton_kernel" and r["impl"] == "triton")
    fast = next((r for r in rows if r["op"] == "empty_triton_kernel" and r["impl"] == "triton_fast_launch"), None)
    print(f"empty Triton kernel, Python call: {empty['python_us']} us through the JIT"
          + (f", {fast['python_us']} us through FastLaunch" if fast else "") + f"; graph {empty['graph_us']} us\n")
    key = lambda r: (r["op"], r.get("topk"), r.get("depth"), r.get("n"), r.get("bs"), r.get("V"))  # noqa: E731
    by = {}
    for r in rows:
        if "python_us" in r and r["op"] in OPS:
            by.setdefault(key(r), {})[r["impl"]] = r
    print("| op | topk,depth,n | bs | V | before python us | python us | graph us | graph + 2 empty | goal 1 "
          "| SGLang python us | x SGLang | TB/s graph (before) | torch user python us |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in sorted(by, key=lambda k: (OPS.index(k[0]), k[1:3], k[4] or 0, k[5] or 0)):
        d = by[k]
        t = d.get("triton")
        if t is None:
            continue
        b, s, u = d.get("before", {}), d.get("sglang", {}), d.get("torch_user", {})
        # the two empty launches timed in the same rounds as this op when the run has them (bench_kernels
        # after 2026-12-03 14:10 UTC), else twice the empty kernel's figure from the run's start
        pair = d.get("two_empty_launches", {}).get("python_us", 2 * empty["python_us"])
        bound = t["graph_us"] + pair if t.get("graph_us") is not None else None
        ok = "-" if bound is None else ("yes" if t["python_us"] <= bound else f"**no** ({t['python_us'] / bound:.2f}x)")
        xs = f"{t['python_us'] / s['python_us']:.2f}" if s.get("python_us") else "-"
        bw = f"{t.get('graph_TBps', '-')} ({b.get('graph_TBps', '-')})" if t.get("graph_TBps") else "-"
        print(f"| {k[0]} | {k[1]},{k[2]},{k[3]} | {k[4]} | {k[5] or '-'} | {b.get('python_us', '-')} | {t['python_us']} "
              f"| {t.get('graph_us')} | {bound and round(bound, 1)} | {ok} | {s.get('python_us', '-')} | {xs} | {bw} "
              f"| {u.get('python_us', '-')} |")
    print()
    for r in rows:
        if r.get("impl") in ("check_vs_before", "check_vs_torch_backend") or r["op"] == "chain_bits":
            print(json.dumps(r))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results_h200.json")
