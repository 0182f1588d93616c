"""The decoding loop: prompt -> prefill -> rounds of {Draft, build_tree, Target verify, Accept, KV commit}.

    from specviz.rooms.loop.decode import LoopSettings, run_loop
    run = run_loop("The target ", LoopSettings(algorithm="greedy", topk=2, depth=4, num_draft_tokens=8, rounds=8))
    run.text, run.rounds[0].accept_nodes, run.rounds[0].kv_after

One round, exactly as a serving engine runs it (SEMANTICS.md §2, §3, §4-§7, §5.3):

1. **Draft**: the Draft model expands the root (the previous round's bonus, whose KV does not
   exist yet) ``depth`` times: step 0 scores the root's top-``topk`` children by draft
   probability; each later step scores ``topk`` children of each of the ``topk`` beams by the
   *cumulative path probability* and keeps the best ``topk`` as the next beams. The top
   ``num_draft_tokens - 1`` scores, their indices sorted ascending, are ``selected_index``; the
   steps' parents (the last step's dropped) are ``parent_list``. Chain rejection sampling
   (topk = 1) *samples* each draft token from the Draft's q instead, because the sampler's
   proof needs q to be the distribution the token was drawn from.
2. **build_tree** on the chosen backend -> ``tree_mask``, ``positions``, ``retrieve_*``.
3. **Target verify**: one forward call over all n rows with that mask (prefix columns + tree
   columns) and those positions.
4. **Accept** on the chosen backend: ``verify_tree_greedy`` (argmax per row),
   ``tree_sampling_target_only`` (target probs, zero work buffer, coins), or
   ``chain_rejection_sampling`` (target probs and the Draft's q).
5. **Commit**: ``accept_index`` names the *input rows* whose KV is kept (root + accepted drafts);
   they move to the front of the round's slots, the rest are dropped. The emitted tokens are
   ``predicts[accept_index]`` (the token *after* each kept row: the one-position shift). The
   last one, the bonus, is the next root. The Draft catches up on the committed rows.

Randomness is data: every coin comes from one ``torch.Generator`` seeded with ``settings.seed``
and is recorded in the round.

Mistakes (``settings.mistakes``), each a classic bug that breaks a proof (``proofs.py``):
``kv_by_outputs``  keep the KV rows of the *output* tokens (the accepted drafts) instead of the
                   input rows: the root's row is lost.
``no_shift``       emit the accepted rows' own tokens (``candidates[accept_index]``) instead of
                   ``predicts[accept_index]``.
``q_as_buffer``    hand the target-only sampler the Draft's q as its work buffer instead of zeros:
                   the backend's kernel itself gets q (row i = the Draft's distribution at node i)
                   and its terminal draw subtracts it, ``relu(p - buffer)``.
``mask_drop_ancestor`` a tree mask missing an ancestor: every node at depth >= 2 loses its
                   parent's column in the verify forward.
"""
from __future__ import annotations

import numpy as np
import torch

from specviz.base.errors import SpecvizError
from specviz.rooms.loop.draft import draft_rollout
from specviz.rooms.loop.model import single_threaded
from specviz.rooms.loop.settings import LoopRun, LoopSettings, Round
from specviz.rooms.loop.train import load_models

# ---------------------------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------------------------

class Decoder:
    """Holds the two models and their KV caches; ``step()`` runs one round."""

    def __init__(self, prompt: str, settings: LoopSettings, models=None):
        self.settings = settings.checked()
        self.target, self.draft, self.tok = models or load_models()
        if not isinstance(prompt, str) or len(prompt) < 1:
            raise SpecvizError("prompt", "is empty: type at least one character")
        if len(prompt) > 2000:
            raise SpecvizError("prompt", f"has {len(prompt)} characters: keep it under 2000")
        self.prompt = prompt
        self.prompt_ids = self.tok.encode(prompt)
        from specviz.algorithms.backends import get_backend

        self.ops = get_backend(self.settings.backend)
        self.gen = torch.Generator().manual_seed(int(self.settings.seed))
        # Prefill: everything but the last prompt token enters KV; the last token is the first
        # root (in steady state the root is the previous round's bonus, which has no KV yet).
        cap = len(self.prompt_ids) + (self.settings.depth + 2) * (self.settings.rounds + 2) + 8
        self.tcache = self.target.new_cache(cap)
        self.dcache = self.draft.new_cache(cap)
        ctx = self.prompt_ids[:-1]
        if ctx:
            causal = torch.ones(len(ctx), len(ctx), dtype=torch.bool).tril()
            self.target.forward(self.tcache, ctx, torch.arange(len(ctx)), causal)
            self.draft.forward(self.dcache, ctx, torch.arange(len(ctx)), causal)
        self.root = self.prompt_ids[-1]
        self.history = list(self.prompt_ids)   # the text so far (prompt + emitted), root last
        self.rounds: list[Round] = []

    def clone(self, seed: int) -> "Decoder":
        """A copy of the current state with a fresh coin stream (for Monte Carlo trials)."""
        other = object.__new__(Decoder)
        other.__dict__.update(self.__dict__)
        other.tcache, other.dcache = self.tcache.clone(), self.dcache.clone()
        other.gen = torch.Generator().manual_seed(int(seed))
        other.history, other.rounds = list(self.history), []
        return other

    def _verify_forward(self, L: int, tail: int, draft_coins: list) -> tuple:
        """The round up to the Target's logits: Draft tree, build_tree, the mask (and its mistake), one Target
        forward over the tree (appending its rows to the Target cache)."""
        s, ops = self.settings, self.ops
        n, S = s.num_draft_tokens, s.depth
        mistakes = set(s.mistakes)
        tree = draft_rollout(self.draft, self.dcache, self.root, s, draft_coins)

        # build_tree on the chosen backend
        pl = torch.tensor([tree.parent_list], dtype=torch.int64)               # [1, topk*(S-1)+1]
        si = torch.tensor([tree.selected_index], dtype=torch.int64)            # [1, n-1]
        build = ops.build_tree(pl, si, torch.tensor([L], dtype=torch.int64), topk=s.topk, depth=S,
                               num_draft_tokens=n, tree_mask_mode=s.tree_mask_mode)
        # The backend's outputs stay on its device (a GPU for compiled Triton) for the accept step; the
        # models run on the CPU, so the mask and positions cross to it once here (the round's edge).
        positions = build.positions.to(torch.int64).cpu()                      # [n]
        flat = build.tree_mask.to(torch.bool)
        if s.tree_mask_mode == "full_mask":
            full = flat.reshape(n, L + n)                                      # prefix cells, then tree cells
        else:
            full = torch.cat([torch.ones(n, L, dtype=torch.bool, device=flat.device), flat.reshape(n, n)], dim=1)
        full = full.cpu()
        tree_mask = full[:, L:].numpy().copy()
        if "mask_drop_ancestor" in mistakes:
            full = full.clone()
            for i, p in enumerate(tree.parents):
                if p > 0:                       # a non-root parent: drop its column
                    full[i, L + p] = False
        mask_used = full[:, L:].numpy().copy()

        # One Target forward over the whole tree.
        prefix_tail = list(zip(self.tcache.tokens[tail:L], self.tcache.positions[tail:L]))
        logits = self.target.forward(self.tcache, tree.candidates, positions, full)   # [n, V]

        return tree, build, positions, tree_mask, mask_used, prefix_tail, logits

    @single_threaded
    def step(self) -> Round:
        s, ops = self.settings, self.ops
        n, S, W = s.num_draft_tokens, s.depth, s.depth + 1
        mistakes = set(s.mistakes)
        # Coins first, the same number every round whatever the algorithm (randomness as data).
        draft_coins = torch.rand(S, generator=self.gen).tolist()
        coins = torch.rand(n, generator=self.gen)
        coin_final = torch.rand(1, generator=self.gen)

        L = self.tcache.length
        tail = max(0, L - 4)
        # Everything up to the Target's logits is a function of the text so far (and, for the chain, the Draft's
        # coins): Monte Carlo trials cloned from one state share it (``speculative_samples`` sets ``_memo``).
        memo = getattr(self, "_memo", None)
        key = (tuple(self.history), tuple(tuple(r.accept_nodes) for r in self.rounds), L) \
            if memo is not None and s.algorithm != "chain" else None
        hit = memo.get(key) if key is not None else None
        if hit is None:
            tree, build, positions, tree_mask, mask_used, prefix_tail, logits = self._verify_forward(L, tail, draft_coins)
            if key is not None:
                memo[key] = (tree, build, positions, tree_mask, mask_used, prefix_tail, logits, self.tcache.clone())
        else:
            tree, build, positions, tree_mask, mask_used, prefix_tail, logits, after = hit
            self.tcache = after.clone()
        cand = torch.tensor([tree.candidates], dtype=torch.int64)              # [1, n]
        dev = build.retrieve_index.device

        ri, nt, ns = build.retrieve_index, build.retrieve_next_token, build.retrieve_next_sibling
        target_probs, buffer_final = None, None
        cand, logits_dev = cand.to(dev), logits.to(dev)                        # the accept step's inputs
        if s.algorithm == "greedy":
            target_predict = torch.argmax(logits_dev, dim=-1).reshape(1, n).to(torch.int64)
            res = ops.verify_tree_greedy(cand, ri, nt, ns, target_predict, num_speculative_tokens=W)
        else:
            target_probs = ops.target_probs_from_logits(logits_dev, temperature=float(s.temperature)).reshape(1, n, -1)
            if s.algorithm == "target_only":
                # The work buffer: zeros (what SGLang passes), or under the mistake the Draft's q, handed to the kernel.
                work = torch.from_numpy(tree.node_q).reshape(1, n, -1).to(dev) if "q_as_buffer" in mistakes else None
                res = ops.tree_sampling_target_only(cand, ri, nt, ns, coins.reshape(1, n).to(dev), coin_final.to(dev),
                                                    target_probs,
                                                    num_speculative_tokens=W, threshold_single=s.threshold_single,
                                                    threshold_acc=s.threshold_acc, draft_probs=work)
                buffer_final = _host(res.draft_probs[0]).copy()
            else:
                draft_probs = torch.from_numpy(tree.proposal_q[1:]).reshape(1, n - 1, -1).to(dev)
                res = ops.chain_rejection_sampling(cand, ri, coins.reshape(1, n).to(dev), coin_final.to(dev),
                                                   target_probs, draft_probs, num_speculative_tokens=W)
        # The edge: the round's results are read on the host once, as numpy (the page and metrics read them).
        target_probs = None if target_probs is None else _host(target_probs[0]).copy()   # [n, V]
        predicts = [int(x) for x in _host(res.predicts)]
        accept_index = [int(x) for x in _host(res.accept_index)[0]]
        k = int(_host(res.accept_token_num)[0])
        nodes = accept_index[: k + 1]                  # bs = 1: global row == node

        # Outputs: the token after each kept row (the shift), or the mistake's rows' own tokens.
        if "no_shift" in mistakes:
            emitted = [tree.candidates[i] for i in nodes]
        else:
            emitted = [predicts[i] for i in nodes]
        bonus = predicts[nodes[-1]]

        # KV commit: keep the input rows of accept_index, compacted to the front.
        kept = nodes[1:] if "kv_by_outputs" in mistakes else nodes
        self.tcache.keep_rows(L, kept)
        kv_after = list(zip(self.tcache.tokens[tail:], self.tcache.positions[tail:]))
        # The Draft catches up on exactly the rows the Target committed.
        new = self.tcache.tokens[L:]
        if new:
            ckey = None if key is None else (key, tuple(kept))   # the same rows after the same text: the same Draft cache
            got = memo.get(ckey) if ckey is not None else None
            if got is not None:
                self.dcache = got.clone()
            else:
                m = len(new)
                dl = self.dcache.length
                mask = torch.cat([torch.ones(m, dl, dtype=torch.bool), torch.ones(m, m, dtype=torch.bool).tril()], dim=1)
                self.draft.forward(self.dcache, new, self.tcache.positions[L:], mask)
                if ckey is not None:
                    memo[ckey] = self.dcache.clone()

        rnd = Round(index=len(self.rounds), root=self.root, seq_len=L, tree=tree, positions=positions.tolist(),
                    tree_mask=tree_mask, mask_used=mask_used, logits=logits.numpy().copy(),
                    target_probs=target_probs,
                    coins=coins.tolist(), coin_final=float(coin_final), draft_coins=draft_coins,
                    predicts=predicts, accept_index=accept_index, accept_nodes=nodes, emitted=emitted, bonus=bonus,
                    kv_before=prefix_tail + list(zip(tree.candidates, positions.tolist())),
                    kv_kept=kept, kv_after=kv_after, buffer_final=buffer_final)
        self.rounds.append(rnd)
        self.history.extend(emitted)
        self.root = bonus
        return rnd


def _host(x) -> np.ndarray:
    """A backend result as a host numpy array (one device-to-host copy for a GPU tensor)."""
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


@single_threaded
def run_loop(prompt: str, settings: LoopSettings, models=None, max_tokens: int | None = None) -> LoopRun:
    """Run ``settings.rounds`` rounds, or until ``max_tokens`` tokens are emitted.

    A round accepts up to depth + 1 tokens at once, so the last round can go past ``max_tokens``;
    as a server stops at max_new_tokens, ``run.generated`` / ``run.text`` are cut at exactly
    ``max_tokens`` (``run.dropped`` counts the cut tokens; the rounds keep what they accepted).
    With topk = 1 the server forces num_draft_tokens = depth + 1 (SEMANTICS §1): ``run.settings``
    holds the forced value and ``run.notes`` says so when it differs from the request."""
    if max_tokens is not None and (not isinstance(max_tokens, (int, np.integer)) or max_tokens < 1):
        raise SpecvizError("max_tokens", f"is {max_tokens!r}: ask for at least 1 token, or None for every round's tokens")
    dec = Decoder(prompt, settings, models)
    run = LoopRun(prompt=prompt, prompt_ids=dec.prompt_ids, settings=dec.settings, vocab=dec.tok.vocab,
                  max_tokens=None if max_tokens is None else int(max_tokens), notes=settings_notes(settings, dec.settings))
    for _ in range(dec.settings.rounds):
        dec.step()
        if max_tokens is not None and len(dec.history) - len(dec.prompt_ids) >= max_tokens:
            break
    run.rounds = dec.rounds
    if run.dropped:
        run.notes.append(f"max_tokens = {max_tokens}: the last round accepted {run.dropped} more token(s); "
                         f"they are cut from the output, as a server stops at max_new_tokens")
    return run


def settings_notes(asked: LoopSettings, used: LoopSettings) -> list:
    """One sentence per setting the run had to change (today: n forced for topk = 1)."""
    if asked.num_draft_tokens != used.num_draft_tokens:
        return [f"topk = 1: the server forces num_draft_tokens = depth + 1 = {used.num_draft_tokens} "
                f"(asked {asked.num_draft_tokens}); SEMANTICS §1"]
    return []


@single_threaded
def target_greedy(prompt_ids: list, num_tokens: int, models=None) -> list:
    """The Target's own greedy decoding, one token per forward (the reference proof 2 compares against)."""
    target, _, _ = models or load_models()
    cache = target.new_cache(len(prompt_ids) + num_tokens + 1)
    ids = list(prompt_ids)
    causal = torch.ones(len(ids), len(ids), dtype=torch.bool).tril()
    logits = target.forward(cache, ids, torch.arange(len(ids)), causal)[-1]
    out = []
    for _ in range(num_tokens):
        t = int(torch.argmax(logits))
        out.append(t)
        L = cache.length
        logits = target.forward(cache, [t], [L], torch.ones(1, L + 1, dtype=torch.bool))[0]
    return out
