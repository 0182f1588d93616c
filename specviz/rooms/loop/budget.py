"""What one run of the decoding-loop page costs, estimated from its inputs before any work starts.

One Enter on the page runs the loop (``decode.run_loop``) and two proofs. The tree proof
(``proofs.tree_pass_exact``) dominates: it recomputes every node of every round with a fresh
Target forward over the whole text so far, so its cost is about

    rounds x num_draft_tokens x (FORWARD_OVERHEAD + prompt + generated/2 + depth)   Target positions

where generated <= rounds x (depth + 1) (every draft accepted: the worst case, used here). The
loop and the greedy proof add about (prompt + generated) x (n + 2) positions. Measured on the
2-core dev machine (benchmarks/bench_loop_budget.py, CPU seconds): ~50 us per position plus ~2 ms
per forward call (FORWARD_OVERHEAD = 40 positions); the maximal sliders with a 340-character
prompt estimate 3.4 M positions (measured: 115 s of CPU). ``check_loop_budget`` refuses a run
above ``limits.LOOP_MAX_WORK`` positions with an error naming the field to lower.

Pure Python: no streamlit, numpy or torch.
"""
from __future__ import annotations

from specviz.base.errors import SpecvizError
from specviz.base.limits import LOOP_MAX_PROMPT_CHARS, LOOP_MAX_WORK

FORWARD_OVERHEAD = 40  # one forward call costs about as much as 40 positions of work
US_PER_POSITION = 50  # CPU microseconds per position on the 2-core dev machine (for the message only)


def loop_work(prompt_chars: int, rounds: int, num_draft_tokens: int, depth: int) -> int:
    """Worst-case Target positions of one page run (loop + tree proof + greedy proof)."""
    p, r, n, d = int(prompt_chars), int(rounds), int(num_draft_tokens), int(depth)
    generated = r * (d + 1)
    tree_proof = r * n * (FORWARD_OVERHEAD + p + generated // 2 + d)
    loop_and_greedy = (p + generated) * (n + 2) + r * FORWARD_OVERHEAD * 2
    return tree_proof + loop_and_greedy


def check_loop_budget(prompt: str, settings) -> int:
    """The estimated work of running ``settings`` on ``prompt``; a SpecvizError naming the field
    to lower (rounds, num_draft_tokens or the prompt) when it is above ``LOOP_MAX_WORK``."""
    if len(prompt) > LOOP_MAX_PROMPT_CHARS:
        raise SpecvizError("prompt", f"is {len(prompt)} characters long; at most {LOOP_MAX_PROMPT_CHARS} are accepted")
    n, r, d = settings.num_draft_tokens, settings.rounds, settings.depth
    work = loop_work(len(prompt), r, n, d)
    if work <= LOOP_MAX_WORK:
        return work
    seconds = work * US_PER_POSITION / 1e6
    fit_rounds = max((k for k in range(1, r) if loop_work(len(prompt), k, n, d) <= LOOP_MAX_WORK), default=0)
    fit_n = max((k for k in range(2, n) if loop_work(len(prompt), r, k, d) <= LOOP_MAX_WORK), default=0)
    what = (f"rounds {r} x num_draft_tokens {n} with a {len(prompt)}-character prompt is about {work:,} Target positions "
            f"(~{seconds:.0f} s of server CPU: the tree proof recomputes every node of every round); one run may do at most "
            f"{LOOP_MAX_WORK:,} so the server stays shared")
    if fit_rounds:
        raise SpecvizError("rounds", f"{what}: lower rounds to {fit_rounds} or less (or num_draft_tokens, or shorten the prompt)")
    if fit_n >= 2:
        raise SpecvizError("num_draft_tokens", f"{what}: lower num_draft_tokens to {fit_n} or less (or shorten the prompt)")
    raise SpecvizError("prompt", f"{what}: shorten the prompt, and lower rounds and num_draft_tokens")
