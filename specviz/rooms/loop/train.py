"""Train the tiny Target and Draft on the project's own text; ``python -m specviz.rooms.loop.train`` rewrites the weights.

Deterministic (fixed seeds, one thread) and CPU-only. The corpus is the project's own prose and
code (``CORPUS_FILES``), cut to printable ASCII plus newline; its SHA-256 is stored with the
weights, so a later edit of those files does not silently change what ``load_models`` returns
(the committed ``weights.npz`` is the artefact; this script is how it was made).

    python -m specviz.rooms.loop.train            # trains both models, writes specviz/rooms/loop/weights.npz, prints timings
"""
from __future__ import annotations

import functools
import hashlib
import io
import sys
import time
from pathlib import Path

import numpy as np
import torch

from specviz.rooms.loop.model import CharTokenizer, Config, TinyLM

ROOT = Path(__file__).resolve().parents[3]
WEIGHTS = Path(__file__).resolve().parent / "weights.npz"
CORPUS_FILES = ("README.md", "benchmarks/README.md", "specviz/reference/tree.py", "specviz/reference/verify.py")

TARGET = dict(d_model=64, n_layers=2, n_heads=4, d_ff=192)
DRAFT = dict(d_model=32, n_layers=1, n_heads=2, d_ff=64)
# Steps were chosen so the Draft agrees with the Target often but not always (mean accept length
# ~2-4 at topk 2-4, depth 3-5; see benchmarks/bench_loop.py).
TRAIN = {"target": dict(steps=1200, seed=1), "draft": dict(steps=900, seed=2)}
BLOCK, BATCH, LR = 160, 16, 3e-3


def corpus_text() -> str:
    parts = []
    for name in CORPUS_FILES:
        path = ROOT / name
        if path.exists():
            parts.append(path.read_text(encoding="utf-8"))
    text = "\n".join(parts)
    return "".join(c for c in text if c == "\n" or 32 <= ord(c) < 127)


def train_model(text: str, tok: CharTokenizer, sizes: dict, *, steps: int, seed: int, log=None) -> TinyLM:
    torch.manual_seed(seed)
    model = TinyLM(Config(vocab_size=tok.size, **sizes))
    data = torch.tensor(tok.encode(text, "corpus"), dtype=torch.long)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    for step in range(steps):
        lr = LR * min(1.0, (step + 1) / 50) * (0.1 + 0.9 * (1 - step / steps))
        for g in opt.param_groups:
            g["lr"] = lr
        starts = torch.randint(0, len(data) - BLOCK - 1, (BATCH,), generator=gen)
        x = torch.stack([data[s:s + BLOCK] for s in starts])
        y = torch.stack([data[s + 1:s + BLOCK + 1] for s in starts])
        loss = torch.nn.functional.cross_entropy(model.train_logits(x).reshape(-1, tok.size), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if log is not None and (step % 100 == 0 or step == steps - 1):
            log(f"  step {step:4d}  loss {loss.item():.3f}")
    model.eval()
    return model


def train_both(log=None) -> tuple[TinyLM, TinyLM, CharTokenizer, str]:
    """(target, draft, tokenizer, corpus sha256), trained from scratch."""
    torch.set_num_threads(1)
    text = corpus_text()
    tok = CharTokenizer("".join(sorted(set(text))))
    models = []
    for name, sizes in (("target", TARGET), ("draft", DRAFT)):
        if log:
            log(f"{name}: {sizes}, {TRAIN[name]}")
        models.append(train_model(text, tok, sizes, log=log, **TRAIN[name]))
    return models[0], models[1], tok, hashlib.sha256(text.encode()).hexdigest()


def save(path: Path, target: TinyLM, draft: TinyLM, tok: CharTokenizer, digest: str) -> None:
    arrays = {"vocab": np.array(tok.vocab), "corpus_sha256": np.array(digest)}
    for name, model in (("target", target), ("draft", draft)):
        for key, value in model.state_dict().items():
            arrays[f"{name}/{key}"] = value.numpy().astype(np.float32)
        for key, value in model.cfg.__dict__.items():
            arrays[f"{name}.cfg/{key}"] = np.array(value)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    path.write_bytes(buf.getvalue())


def _load(path: Path):
    with np.load(path) as z:
        tok = CharTokenizer(str(z["vocab"]))
        out = []
        for name in ("target", "draft"):
            cfg = {k.split("/", 1)[1]: z[k].item() for k in z.files if k.startswith(f"{name}.cfg/")}
            model = TinyLM(Config(**cfg))
            state = {k.split("/", 1)[1]: torch.from_numpy(z[k]) for k in z.files if k.startswith(f"{name}/")}
            model.load_state_dict(state)
            model.eval()
            out.append(model)
    return out[0], out[1], tok


@functools.lru_cache(maxsize=1)
def load_models() -> tuple[TinyLM, TinyLM, CharTokenizer]:
    """(target, draft, tokenizer): the committed weights, or a fresh deterministic training run if they are missing."""
    if WEIGHTS.exists():
        return _load(WEIGHTS)
    target, draft, tok, _ = train_both()
    return target, draft, tok


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=WEIGHTS, help="where to write the weights (default: the committed file)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    target, draft, tok, digest = train_both(log=print)
    save(args.out, target, draft, tok, digest)
    print(f"vocabulary {tok.size} characters; corpus sha256 {digest[:16]}...; "
          f"trained in {time.perf_counter() - t0:.1f} s; wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
