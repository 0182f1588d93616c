"""Run on an NVIDIA GPU (TRITON_INTERPRET=0, sglang 0.5.23 kernels in .sglang/ or installed).
On the GPU: the tokens SGLang's chain kernel and specviz's compiled Triton kernels draw on boundary
coins (cases from tests/support/fidelity_cases.make_case, seeded), saved for a CPU test of the GPU order."""
import importlib.util, json, os, sys
import numpy as np
sys.path.insert(0, ".")
from specviz.algorithms.backends import get_backend
spec = importlib.util.spec_from_file_location("bf", "benchmarks/bench_fidelity.py"); bf = importlib.util.module_from_spec(spec); spec.loader.exec_module(bf)
cases = bf._cases_module()
from tests.support import sglang_oracle
import torch, triton
bf._STATE["sgl"] = sglang_oracle.load(); bf._STATE["chain_draw"] = sglang_oracle.chain_draw
tri = get_backend("triton")
out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__, "rows": 48, "cases": []}
for V in (7, 1000, 4096, 5000, 50257):
    for fam in ("chain_plain", "chain_residual", "target_plain"):
        seed = [V, ("chain_plain", "chain_residual", "target_plain").index(fam), 2026]
        case = cases.make_case(np.random.default_rng(seed), fam, 48, V, "boundary")
        row = dict(V=V, family=fam, seed=seed, coins="boundary", triton=cases.draw(tri, case).tolist())
        if fam == "chain_residual":
            row["sglang"] = bf._sglang_draw(case["args"]).tolist()
        out["cases"].append(row)
json.dump(out, open(os.path.join(os.environ["OUT"], "gpu_tokens.json"), "w"))
print("ok", len(out["cases"]))
