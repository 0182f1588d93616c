"""Run on an NVIDIA GPU (TRITON_INTERPRET=0, sglang 0.5.23 kernels in .sglang/ or installed).
On the GPU: which per-thread vector width (spt) makes the numpy GPU-order emulation draw exactly
SGLang's and specviz-Triton's tokens, per V (boundary coins, where orders disagree)."""
import importlib.util, json, os, sys, time
import numpy as np
sys.path.insert(0, ".")
from specviz.reference import cdf
from specviz.algorithms.backends import get_backend
spec = importlib.util.spec_from_file_location("bf", "benchmarks/bench_fidelity.py"); bf = importlib.util.module_from_spec(spec); spec.loader.exec_module(bf)
cases = bf._cases_module()
from tests.support import sglang_oracle
bf._STATE["sgl"] = sglang_oracle.load(); bf._STATE["chain_draw"] = sglang_oracle.chain_draw
tri, npb = get_backend("triton"), get_backend("numpy")
orig = cdf.gpu_vector_width
R = int(os.environ.get("ROWS", "400"))
out = []
for V in [int(v) for v in os.environ.get("VS", "50000 1000 50257 50258 50260 4096 7 151936").split()]:
    for fi, fam in enumerate(["chain_plain", "chain_residual", "target_plain"]):
        t0 = time.time()
        case = cases.make_case(np.random.default_rng([V, fi]), fam, R, V, "boundary")
        t = cases.draw(tri, case)
        # SGLang with one slot (NUM_SLOTS=1) does not compile on triton 3.6 (TritonGPUCoalesce): chain_residual only
        s = bf._sglang_draw(case["args"]) if fam == "chain_residual" else None
        with cdf.summation_order("interpreter"):
            i = cases.draw(npb, case)
        row = dict(V=V, fam=fam, rows=R, interp_vs_triton=int((i != t).sum()),
                   interp_vs_sglang=None if s is None else int((i != s).sum()),
                   triton_vs_sglang=None if s is None else int((t != s).sum()))
        for spt in (1, 2, 4):
            cdf.gpu_vector_width = lambda V, spt=spt: spt
            with cdf.summation_order("gpu"):
                g = cases.draw(npb, case)
            row[f"spt{spt}_vs_triton"] = int((g != t).sum())
            row[f"spt{spt}_vs_sglang"] = None if s is None else int((g != s).sum())
        cdf.gpu_vector_width = orig
        with cdf.summation_order("gpu"):
            g = cases.draw(npb, case)
        row["auto_vs_triton"] = int((g != t).sum()); row["auto_vs_sglang"] = None if s is None else int((g != s).sum())
        row["sec"] = round(time.time() - t0, 1)
        print(json.dumps(row), flush=True)
        out.append(row)
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "spt_probe.json"), "w"), indent=1)
