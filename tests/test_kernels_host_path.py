"""The host work of a Triton op's Python call (issue 36, goal 1), on the compiled-launch path with the launch
stubbed (benchmarks/host_stub_profile.py, in a subprocess: its stubs replace the kernels' launchers and must
not leak into other tests). No timing here: what a call does, counted."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# aten operators a call dispatches (allocations and views), at most; every op launches one kernel.
ATEN_BUDGET = {"build_tree": 4, "verify_tree_greedy": 3, "tree_sampling_target_only": 4, "chain_rejection_sampling": 3,
               "target_probs_from_logits": 1, "target_probs_top_k_top_p": 1, "dspark_accept_greedy": 2,
               "fill_bonus_tokens": 2}


@pytest.fixture(scope="module")
def host_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("host") / "rows.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    subprocess.run([sys.executable, str(ROOT / "benchmarks/host_stub_profile.py"), "--calls", "2", "--rounds", "1",
                    "--bs", "3", "--json", str(out)], check=True, env=env, cwd=ROOT, capture_output=True, timeout=300)
    return {row["op"]: row for row in json.loads(out.read_text())}


def test_every_op_is_measured(host_rows):
    assert set(host_rows) == set(ATEN_BUDGET)


@pytest.mark.parametrize("op", sorted(ATEN_BUDGET))
def test_a_call_runs_no_triton_python_after_its_first(host_rows, op):
    """After the first call, a call goes from our code straight to the compiled kernel: no Python function of
    Triton's package runs (``triton.next_power_of_2`` on every call cost more host time than the rest of a
    sampler's call together)."""
    assert host_rows[op]["triton_python_calls"] == []


@pytest.mark.parametrize("op", sorted(ATEN_BUDGET))
def test_a_call_allocates_little_and_launches_once(host_rows, op):
    row = host_rows[op]
    assert sum(row["aten_ops"].values()) <= ATEN_BUDGET[op], row["aten_ops"]
    assert len(row["launches"]) == 1, row["launches"]
