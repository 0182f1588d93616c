"""The decoding loop's settings and what a run records: ``LoopSettings`` (everything a run depends on
besides the prompt), the Draft's tree of a round (``DraftTree``), one round (``Round``) and the whole
run (``LoopRun``). ``specviz.rooms.loop.decode`` runs the loop; ``specviz.rooms.loop.draft`` builds each round's tree.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import torch

from specviz.base.errors import SpecvizError

ALGORITHMS = ("greedy", "target_only", "chain")
MISTAKES = ("kv_by_outputs", "no_shift", "q_as_buffer", "mask_drop_ancestor")
MASK_MODES = ("full_mask", "qlen_only")


@dataclass(frozen=True)
class LoopSettings:
    """Everything a run depends on besides the prompt (one value, so it can be cached and shared)."""
    algorithm: str = "greedy"          # greedy | target_only | chain
    topk: int = 2
    depth: int = 4                     # draft steps S; accept_index width W = S + 1
    num_draft_tokens: int = 8          # n, verify rows including the root
    temperature: float = 1.0           # target (and, for chain, draft) sampling temperature
    seed: int = 0
    rounds: int = 16
    backend: str = "torch"
    tree_mask_mode: str = "full_mask"  # full_mask | qlen_only
    threshold_single: float = 1.0
    threshold_acc: float = 1.0
    mistakes: tuple = ()

    def checked(self) -> "LoopSettings":
        """The settings with n forced as the server forces it, or a SpecvizError naming the field."""
        if self.algorithm not in ALGORITHMS:
            raise SpecvizError("algorithm", f"is {self.algorithm!r}: choose one of {', '.join(ALGORITHMS)}")
        for name, lo, hi in (("topk", 1, 8), ("depth", 1, 8), ("rounds", 1, 512)):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise SpecvizError(name, f"is {v!r}: it must be an integer in [{lo}, {hi}]")
        if self.tree_mask_mode not in MASK_MODES:
            raise SpecvizError("tree_mask_mode", f"is {self.tree_mask_mode!r}: the loop reads {' or '.join(MASK_MODES)}")
        bad = [m for m in self.mistakes if m not in MISTAKES]
        if bad:
            raise SpecvizError("mistakes", f"{bad} unknown: choose from {', '.join(MISTAKES)}")
        s = self
        if self.algorithm == "chain" and self.topk != 1:
            raise SpecvizError("topk", f"is {self.topk}: chain rejection sampling verifies chains only; set topk = 1")
        if self.topk == 1:
            s = replace(s, num_draft_tokens=self.depth + 1)   # the server forces n = S + 1 for chains (§1)
        most = s.topk + (s.depth - 1) * s.topk ** 2 + 1
        if not 2 <= s.num_draft_tokens <= most:
            raise SpecvizError("num_draft_tokens", f"is {s.num_draft_tokens}: with topk {s.topk} and depth {s.depth} "
                                                   f"it must lie in [2, {most}] (root + scored candidates)")
        if s.algorithm != "greedy" and not (0.05 <= float(s.temperature) <= 5):
            raise SpecvizError("temperature", f"is {s.temperature}: sampling needs a temperature in [0.05, 5]")
        for name in ("threshold_single", "threshold_acc"):
            v = float(getattr(s, name))
            if not 0 <= v <= 1:
                raise SpecvizError(name, f"is {v}: thresholds lie in [0, 1] (1 = exact sampling)")
        return s


@dataclass
class DraftTree:
    """One Draft rollout (§2). Node i >= 1 is candidate ``selected_index[i-1]``."""
    candidates: list          # [n] root + draft tokens
    parents: list             # [n] parent node (-1 for the root)
    parent_list: list         # [topk*(depth-1)+1]
    selected_index: list      # [n-1] ascending
    scores: list              # [n] cumulative path probability of each node (root 1.0)
    node_q: np.ndarray        # [n, V] the Draft's distribution *at* each node (zeros where never computed)
    proposal_q: np.ndarray    # [n, V] row i = the distribution node i was drawn/ranked from (row 0 unused)
    draft_forwards: int       # Draft forward calls in this rollout


@dataclass
class Round:
    """Everything one round computed, for the page and the proofs."""
    index: int
    root: int
    seq_len: int                    # tokens in the Target's KV before the round (the root's position)
    tree: DraftTree
    positions: list                 # [n] from build_tree
    tree_mask: np.ndarray           # [n, n] bool, as build_tree wrote it (tree columns)
    mask_used: np.ndarray           # [n, n] bool, what the forward used (differs under mask_drop_ancestor)
    logits: np.ndarray              # [n, V] Target logits of the one verify forward
    target_probs: np.ndarray | None # [n, V] (sampling paths)
    coins: list                     # [n] per-level coins (sampling paths)
    coin_final: float | None
    draft_coins: list               # [depth] coins the chain Draft sampled with
    predicts: list                  # [n] token emitted after each row (0 where never written)
    accept_index: list              # [W] rows of root + accepted nodes, -1 padded
    accept_nodes: list              # [k+1] the valid prefix of accept_index
    emitted: list                   # tokens this round adds to the text
    bonus: int                      # the next root
    kv_before: list                 # [(token, position)] last <= 4 prefix rows, then the n tree rows the verify forward wrote
    kv_kept: list                   # tree rows kept (in commit order)
    kv_after: list                  # [(token, position)] the same prefix rows, then the rows kept by the commit
    buffer_final: np.ndarray | None = None   # target-only work buffer after the run

    @property
    def accept_len(self) -> int:
        """Tokens this round emits per Target pass: accepted drafts + bonus (τ counts these)."""
        return len(self.accept_nodes)


@dataclass
class LoopRun:
    prompt: str
    prompt_ids: list
    settings: LoopSettings          # as run: ``checked()``, so n is the one the server forces for topk = 1
    rounds: list = field(default_factory=list)
    vocab: str = ""
    max_tokens: int | None = None   # the output is cut here (the last round may accept more)
    notes: list = field(default_factory=list)  # what the run did differently from the request, one sentence each

    @property
    def round_tokens(self) -> list:
        """Every token the rounds emitted (the last round's may go past ``max_tokens``)."""
        return [t for r in self.rounds for t in r.emitted]

    @property
    def generated(self) -> list:
        """The output: the rounds' tokens, cut at ``max_tokens`` as a server cuts at max_new_tokens."""
        out = self.round_tokens
        return out if self.max_tokens is None else out[: self.max_tokens]

    @property
    def dropped(self) -> int:
        """Tokens the last round accepted beyond ``max_tokens`` (cut from the output)."""
        return len(self.round_tokens) - len(self.generated)

    @property
    def text(self) -> str:
        return "".join(self.vocab[t] for t in self.generated)
