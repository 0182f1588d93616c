"""A tiny causal transformer whose attention takes an explicit mask and explicit positions.

This is the one piece of the decoding loop that is a *model*: the Target and the Draft are two
instances of ``TinyLM`` with different sizes. Its ``forward`` is written the way a serving engine
calls a model during tree verification (SGLang's ``forward_batch`` in verify mode):

    logits = model.forward(cache, tokens, positions, mask)
        cache      KVCache with ``cache.length`` committed rows (keys/values already computed)
        tokens     [m] int64   the new rows (a whole draft tree: root + drafts)
        positions  [m] int64   each new row's position (root + depth), *not* its row number
        mask       [m, length + m] bool   row r may attend to column c (prefix columns, then new rows)
        -> logits  [m, V] float32; the new rows' keys/values are appended to the cache

so one verify pass over a whole tree is one call. Positions enter through rotary embeddings
(RoPE), applied to queries and keys by the given position, so two siblings at the same depth get
the same rotation although they sit in different rows.

``forward_sequence`` is the plain causal forward without a cache (what proof 1 compares against).

Tokenizer: one token per character (``CharTokenizer``), over the printable-ASCII characters of the
project's own text (README.md, benchmarks/README.md, the numpy reference's source); the vocabulary
is stored with the weights. Characters keep the tree and the text readable in the pictures.
"""
from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass

import torch

from specviz.base.errors import SpecvizError


@contextlib.contextmanager
def one_thread():
    """Run torch on one intra-op thread inside the block (restored after).

    The models' matrices are a few dozen rows wide: a second thread only adds synchronisation, and
    on a busy 2-core machine it made a 16-round run ~100x slower (measured: 30 s vs 0.27 s).
    """
    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)


def single_threaded(fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        with one_thread():
            return fn(*args, **kwargs)
    return call


# ---------------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------------

class CharTokenizer:
    """One token per character; ``vocab`` is the string of known characters (id = index)."""

    def __init__(self, vocab: str):
        self.vocab = vocab
        self.index = {c: i for i, c in enumerate(vocab)}

    @property
    def size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str, field: str = "prompt") -> list[int]:
        bad = sorted({c for c in text if c not in self.index})
        if bad:
            shown = "".join(bad[:12])
            raise SpecvizError(field, f"contains characters the tiny models never saw ({shown!r}); "
                                      f"use plain ASCII letters, digits and punctuation")
        return [self.index[c] for c in text]

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)

    def show(self, token: int) -> str:
        """A visible label for one token (space and newline drawn as symbols)."""
        c = self.vocab[int(token)]
        return {" ": "␣", "\n": "⏎", "\t": "⇥"}.get(c, c)


# ---------------------------------------------------------------------------------------------
# KV cache
# ---------------------------------------------------------------------------------------------

@dataclass
class KVCache:
    """Per layer keys and values, ``[layers, heads, capacity, head_dim]``; rows ``0..length-1`` are live.

    ``tokens`` / ``positions`` record, for each live row, which token produced it at which
    position (for the picture of the cache and for checks; attention never reads them).
    """
    keys: torch.Tensor      # [layers, heads, capacity, head_dim]
    values: torch.Tensor    # [layers, heads, capacity, head_dim]
    length: int
    tokens: list
    positions: list

    def clone(self) -> "KVCache":
        return KVCache(self.keys.clone(), self.values.clone(), self.length, list(self.tokens), list(self.positions))

    def truncate(self, length: int) -> None:
        """Drop rows ``length..`` (rows past the end are stale memory, never read)."""
        self.length = length
        del self.tokens[length:]
        del self.positions[length:]

    def keep_rows(self, start: int, local_rows) -> None:
        """Keep rows ``start + r`` for r in ``local_rows`` (in that order), compacted to ``start, start+1, ...``.

        This is the KV commit: after verification the accepted path's rows move to the front of
        the request's new slots and everything after them is dropped.
        """
        idx = torch.as_tensor([start + int(r) for r in local_rows], dtype=torch.long)
        m = len(idx)
        self.keys[:, :, start:start + m] = self.keys[:, :, idx]
        self.values[:, :, start:start + m] = self.values[:, :, idx]
        toks = [self.tokens[int(i)] for i in idx]
        poss = [self.positions[int(i)] for i in idx]
        self.truncate(start)
        self.tokens.extend(toks)
        self.positions.extend(poss)
        self.length = start + m


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    rope_base: float = 10000.0


class TinyLM(torch.nn.Module):
    """Pre-norm transformer (RMSNorm, RoPE attention, GELU MLP), tied input/output embeddings."""

    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        d, f = cfg.d_model, cfg.d_ff
        self.embed = torch.nn.Embedding(cfg.vocab_size, d)
        torch.nn.init.normal_(self.embed.weight, std=0.05)   # tied output: unit-variance init gives huge logits
        self.layers = torch.nn.ModuleList()
        for _ in range(cfg.n_layers):
            self.layers.append(torch.nn.ModuleDict({
                "norm1": torch.nn.RMSNorm(d), "qkv": torch.nn.Linear(d, 3 * d, bias=False),
                "out": torch.nn.Linear(d, d, bias=False), "norm2": torch.nn.RMSNorm(d),
                "up": torch.nn.Linear(d, f), "down": torch.nn.Linear(f, d)}))
        self.norm = torch.nn.RMSNorm(d)
        self.head_dim = d // cfg.n_heads
        half = self.head_dim // 2
        self.register_buffer("inv_freq", cfg.rope_base ** (-torch.arange(half, dtype=torch.float32) / half), persistent=False)

    # -- pieces --------------------------------------------------------------------------------
    def _rope(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Rotate ``x [..., m, head_dim]`` by each row's position (rotate-half convention)."""
        top = int(positions.max()) + 1 if positions.numel() else 1
        if getattr(self, "_rope_len", 0) < top:        # a cos/sin table per position, grown on demand
            n = max(top, 2 * getattr(self, "_rope_len", 0), 512)
            ang = torch.arange(n, dtype=torch.float32)[:, None] * self.inv_freq[None, :]   # [n, half]
            self._rope_cos, self._rope_sin, self._rope_len = torch.cos(ang), torch.sin(ang), n
        cos, sin = self._rope_cos[positions], self._rope_sin[positions]            # [m, half]
        x1, x2 = x[..., : self.head_dim // 2], x[..., self.head_dim // 2:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)

    def new_cache(self, capacity: int) -> KVCache:
        shape = (self.cfg.n_layers, self.cfg.n_heads, capacity, self.head_dim)
        return KVCache(torch.zeros(shape), torch.zeros(shape), 0, [], [])

    # -- the verify-style forward --------------------------------------------------------------
    @single_threaded
    @torch.no_grad()
    def forward(self, cache: KVCache, tokens, positions, mask) -> torch.Tensor:  # noqa: D102 (see module doc)
        tokens = torch.as_tensor(tokens, dtype=torch.long)               # [m]
        positions = torch.as_tensor(positions, dtype=torch.long)         # [m]
        mask = torch.as_tensor(mask, dtype=torch.bool)                   # [m, L + m]
        m, L = tokens.shape[0], cache.length
        if mask.shape != (m, L + m):
            raise SpecvizError("mask", f"has shape {tuple(mask.shape)}; it must be [new rows, cached rows + new rows] = {(m, L + m)}")
        if L + m > cache.keys.shape[2]:
            self._grow(cache, L + m)
        H, hd = self.cfg.n_heads, self.head_dim
        x = self.embed(tokens)                                           # [m, d]
        bias = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))  # [m, L+m]
        for li, layer in enumerate(self.layers):
            h = layer["norm1"](x)
            q, k, v = layer["qkv"](h).view(m, 3, H, hd).permute(1, 2, 0, 3)   # each [H, m, hd]
            q, k = self._rope(q, positions), self._rope(k, positions)
            cache.keys[li, :, L:L + m] = k
            cache.values[li, :, L:L + m] = v
            keys, values = cache.keys[li, :, :L + m], cache.values[li, :, :L + m]   # [H, L+m, hd]
            att = (q @ keys.transpose(1, 2)) / math.sqrt(hd) + bias          # [H, m, L+m]
            att = torch.softmax(att, dim=-1)
            y = (att @ values).transpose(0, 1).reshape(m, H * hd)
            x = x + layer["out"](y)
            x = x + layer["down"](torch.nn.functional.gelu(layer["up"](layer["norm2"](x))))
        cache.length = L + m
        cache.tokens.extend(int(t) for t in tokens)
        cache.positions.extend(int(p) for p in positions)
        return self.norm(x) @ self.embed.weight.T                        # [m, V]

    def _grow(self, cache: KVCache, need: int) -> None:
        cap = max(need, 2 * cache.keys.shape[2])
        for name in ("keys", "values"):
            old = getattr(cache, name)
            new = torch.zeros(old.shape[:2] + (cap,) + old.shape[3:])
            new[:, :, : old.shape[2]] = old
            setattr(cache, name, new)

    @torch.no_grad()
    def forward_sequence(self, tokens) -> torch.Tensor:
        """Plain causal forward over ``tokens [m]`` at positions ``0..m-1``, no cache kept: logits [m, V]."""
        m = len(tokens)
        cache = self.new_cache(m)
        causal = torch.ones(m, m, dtype=torch.bool).tril()
        return self.forward(cache, tokens, torch.arange(m), causal)

    # -- training (batched, causal) --------------------------------------------------------------
    def train_logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Causal logits for a batch ``tokens [B, T]`` (positions 0..T-1), with gradients."""
        B, T = tokens.shape
        H, hd = self.cfg.n_heads, self.head_dim
        pos = torch.arange(T)
        x = self.embed(tokens)
        for layer in self.layers:
            h = layer["norm1"](x)
            q, k, v = layer["qkv"](h).view(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)   # each [B, H, T, hd]
            q, k = self._rope(q, pos), self._rope(k, pos)
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + layer["out"](y.transpose(1, 2).reshape(B, T, H * hd))
            x = x + layer["down"](torch.nn.functional.gelu(layer["up"](layer["norm2"](x))))
        return self.norm(x) @ self.embed.weight.T
