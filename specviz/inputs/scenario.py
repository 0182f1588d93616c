"""The scenario: one versioned JSON value shared by the app, the CLI, the URL, the presets and the tests.

    {"format": "specviz.scenario", "version": 1, "name": "running_example",
     "title": "...", "description": "...",
     "algorithm": "greedy" | "target_only" | "chain_rejection" | "dspark_greedy" | "dspark_sampling",
     "vocab": ["A", "B", "C", "D", "X", "R"],
     "requests": [{"tree": {"parents": [-1, 0, 0, 1, 1], "tokens": ["R", "A", "B", "C", "D"]},
                   "seq_len": 10, "target_predict": ["A", "C", "X", "X", "X"]}],
     "num_speculative_tokens": 3, ...}

Tokens are vocabulary labels. A tree algorithm takes ``tree``; a chain algorithm
(chain_rejection, dspark_*) takes ``chain`` = [root/anchor, draft 1, ..., draft gamma]. Per-row
tables (``target_predict``, ``target_probs``) have one entry per node / chain slot;
``draft_probs`` (q) one row per draft slot; ``target_logits`` (with per-request
``temperature``, ``top_k``, ``top_p``) may replace target_probs / target_predict; ``coins`` one per node (tree) or per draft slot
(chain). Validation is pydantic's; every failure becomes a SpecvizError naming the field path.
"""
from __future__ import annotations

import functools
import json
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, ValidationError, model_validator

from specviz import algorithms as _algorithms
from specviz.base.errors import SpecvizError
from specviz.base.safety import loads_json, read_text_file, visible_text
from specviz.inputs.model import MAX_TREE_NODES, DrawnTree, chain_tree
from specviz.base.validate import PROB_SUM_ATOL

FORMAT = "specviz.scenario"
VERSION = 1
# What the pages can draw within the budget (<= 5 s and <= 1 GB extra per page and click, measured by
# benchmarks/bench_worst_scenario.py; a page's cost grows with the vocabulary width: 4,096 took 15 s).
# Real-size data goes through the API and the CLI, not the app.
MAX_VOCAB = 1024
MAX_BATCH = 16
MAX_TABLE_CELLS = 16_384  # requests x rows x vocabulary: e.g. 16 x 64 x 16, or 1 x 16 x 1,024
from specviz.base.limits import (MAX_COIN, MAX_DESCRIPTION_CHARS, MAX_LABEL_CHARS, MAX_NAME_CHARS, MAX_SEQ_LEN,  # noqa: E402
                     MAX_THRESHOLD, MIN_THRESHOLD, MAX_TITLE_CHARS)
MAX_SCENARIO_CHARS = 2_000_000  # bytes of JSON text, refused before parsing: two full-precision tables at the cell limit, saved with indent 2, fit
# Read from the algorithm registry (specviz.algorithms), never listed again here.
ALGORITHMS = _algorithms.KEYS
TREE_ALGORITHMS = tuple(k for k, a in _algorithms.REGISTRY.items() if a.is_tree)
CHAIN_ALGORITHMS = tuple(k for k, a in _algorithms.REGISTRY.items() if not a.is_tree)
SAMPLING_ALGORITHMS = tuple(k for k, a in _algorithms.REGISTRY.items() if a.samples)


def _logit_in(v):
    """A logit in JSON: a number, or the string "-inf" for a masked token (JSON has no -inf literal)."""
    if isinstance(v, str):
        if v.strip().lower() in ("-inf", "-infinity"):
            return float("-inf")
        raise ValueError(f'{v!r} is not a logit: write a number, or "-inf" for a masked token')
    return v


# target_logits entries: -inf (a masked token) is written as the string "-inf" in JSON.
Logit = Annotated[float, BeforeValidator(_logit_in),
                  PlainSerializer(lambda v: "-inf" if v == float("-inf") else v, when_used="json")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _visible(v):
    """The one validation point for text a scenario shows: control and bidi characters become visible
    escapes (safety.visible_text), so a label or name cannot hide or reorder text (U+202E, \\x00, \\r)."""
    return visible_text(v) if isinstance(v, str) else v


def _visible_prose(v):
    return visible_text(v, keep_lines=True) if isinstance(v, str) else v


Label = Annotated[str, BeforeValidator(_visible), Field(min_length=1, max_length=MAX_LABEL_CHARS)]
Name = Annotated[str, BeforeValidator(_visible), Field(min_length=1, max_length=MAX_NAME_CHARS)]
Title = Annotated[str, BeforeValidator(_visible), Field(max_length=MAX_TITLE_CHARS)]
Prose = Annotated[str, BeforeValidator(_visible_prose), Field(max_length=MAX_DESCRIPTION_CHARS)]


class TreeSpec(_Strict):
    parents: list[int] = Field(min_length=1, max_length=MAX_TREE_NODES)
    tokens: list[Label] = Field(min_length=1, max_length=MAX_TREE_NODES)


class RequestSpec(_Strict):
    tree: TreeSpec | None = None
    chain: list[Label] | None = Field(default=None, min_length=1, max_length=MAX_TREE_NODES)
    seq_len: int = Field(default=0, ge=0, le=MAX_SEQ_LEN)
    target_predict: list[Label] | None = Field(default=None, max_length=MAX_TREE_NODES)
    target_probs: list[list[float]] | None = Field(default=None, max_length=MAX_TREE_NODES)
    # Instead of target_probs (or target_predict): raw target logits per row, turned into p by
    # softmax(logits / temperature), then top-k, then top-p (ties kept), as eagle_sample does.
    target_logits: list[list[Logit]] | None = Field(default=None, max_length=MAX_TREE_NODES)  # "-inf" = a masked token
    temperature: float = Field(default=1.0, ge=0.0, le=100.0)  # 0 = greedy (SGLang: top_k 1 at T 1)
    top_k: int | None = Field(default=None, ge=1, le=10**9)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    draft_probs: list[list[float]] | None = Field(default=None, max_length=MAX_TREE_NODES)
    coins: list[float] | None = Field(default=None, max_length=MAX_TREE_NODES)
    coin_final: float | None = Field(default=None, ge=0.0, le=MAX_COIN)
    verify_len: int | None = Field(default=None, ge=1, le=10**9)


class Scenario(_Strict):
    format: Literal["specviz.scenario"] = FORMAT
    version: Literal[1] = VERSION
    name: Name
    title: Title = ""
    description: Prose = ""
    description_zh: Prose = ""  # the same in 简体中文, for the app's Chinese mode
    algorithm: Literal[_algorithms.KEYS]  # the registry (specviz.algorithms) is the one list
    vocab: list[Label] = Field(min_length=1, max_length=MAX_VOCAB)
    requests: list[RequestSpec] = Field(min_length=1, max_length=MAX_BATCH)
    num_speculative_tokens: int | None = Field(default=None, ge=1, le=MAX_TREE_NODES)
    threshold_single: float = Field(default=1.0, ge=MIN_THRESHOLD, le=MAX_THRESHOLD)
    threshold_acc: float = Field(default=1.0, ge=MIN_THRESHOLD, le=MAX_THRESHOLD)
    semantics: Literal["0.5.23", "earlier"] = "0.5.23"
    tree_mask_mode: Literal["full_mask", "qlen_only", "qlen_only_bitpacking"] = "full_mask"
    predicts_init: int = Field(default=0, ge=-(2**31), lt=2**31)

    @model_validator(mode="after")
    def _consistent(self) -> "Scenario":
        check_scenario(self)
        return self

    # -- derived values --------------------------------------------------------------------
    def describe(self, lang: str = "en") -> str:
        """The description in the app's language ('en' or 'zh'); English when no translation is given."""
        return self.description_zh if lang == "zh" and self.description_zh else self.description

    @property
    def is_tree(self) -> bool:
        return self.algorithm in TREE_ALGORITHMS

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def token_id(self, label: str) -> int:
        return self.vocab.index(label)

    def label(self, token: int) -> str:
        return self.vocab[token] if 0 <= token < len(self.vocab) else f"#{token}"

    def tree(self, b: int = 0) -> DrawnTree:
        """Request b's tree (a chain is a tree with one child per node)."""
        r = self.requests[b]
        ids = {t: i for i, t in enumerate(self.vocab)}
        if r.tree is not None:
            return DrawnTree(tuple(r.tree.parents), tuple(ids[t] for t in r.tree.tokens))
        return chain_tree(ids[t] for t in r.chain)

    @property
    def n(self) -> int:
        r = self.requests[0]
        return len(r.tree.parents) if r.tree is not None else len(r.chain)

    @property
    def width(self) -> int:
        """W = num_speculative_tokens (accept_index width); default: deepest tree + 1."""
        if self.num_speculative_tokens is not None:
            return self.num_speculative_tokens
        if not self.is_tree:
            return self.n
        return max(self.tree(b).max_depth for b in range(len(self.requests))) + 1

    def target_probs(self, b: int) -> np.ndarray:
        """Request b's p rows [n, V]: given directly, or from target_logits through temperature, top-k, top-p."""
        r = self.requests[b]
        if r.target_logits is None:
            return np.asarray(r.target_probs, dtype=np.float32)
        from specviz.base.probs import target_probs_from_logits

        return target_probs_from_logits(np.asarray(r.target_logits, dtype=np.float32), temperature=r.temperature,
                                        top_k=r.top_k, top_p=r.top_p)

    def target_predict(self, b: int) -> list[int]:
        """Request b's greedy target token per row: given, or the argmax of target_logits (ties -> lowest id)."""
        r = self.requests[b]
        if r.target_logits is None:
            return self.ids(r.target_predict)
        return [int(i) for i in np.argmax(np.asarray(r.target_logits, dtype=np.float32), axis=1)]

    def ids(self, labels) -> list[int]:
        ids = {t: i for i, t in enumerate(self.vocab)}
        return [ids[t] for t in labels]

    def to_json(self, indent: int | None = 2) -> str:
        # Defaults are left out (the file says only what was chosen); format and version always lead.
        if indent is None:
            return self.compact_json
        body = self.model_dump(mode="json", exclude_defaults=True)
        return json.dumps({"format": FORMAT, "version": VERSION, **body}, indent=indent, ensure_ascii=False)

    @functools.cached_property
    def compact_json(self) -> str:
        """The one-line JSON, computed once per value: pages use it as a cache key on every rerun."""
        body = self.model_dump(mode="json", exclude_defaults=True)
        return json.dumps({"format": FORMAT, "version": VERSION, **body}, indent=None, ensure_ascii=False)

    # -- Jupyter rich display: escaped HTML tables and the tree as an outline --------------------
    def _repr_html_(self) -> str:
        from specviz.base.display import scenario_html

        return scenario_html(self)

    def replace(self, **changes) -> "Scenario":
        """A new validated scenario with some top-level fields changed."""
        data = self.model_dump(mode="json", exclude_none=True)
        data.update(changes)
        return scenario_from_dict(data)


def _field(b: int, name: str, k=None) -> str:
    return f"requests[{b}].{name}" + (f"[{k}]" if k is not None else "")


def check_scenario(s: Scenario) -> None:
    """Cross-field rules pydantic cannot express alone. Raises SpecvizError (wrapped by pydantic)."""
    if len(set(s.vocab)) != len(s.vocab):
        dup = next(t for t in s.vocab if s.vocab.count(t) > 1)
        raise SpecvizError("vocab", f"lists {dup!r} twice: labels must be unique")
    labels = set(s.vocab)
    V = len(s.vocab)
    rows = sum(len(r.tree.parents) if r.tree is not None else len(r.chain or ()) for r in s.requests)
    if rows * V > MAX_TABLE_CELLS:
        raise SpecvizError("vocab", f"has {V} tokens for {rows} rows in all requests: {rows} x {V} = {rows * V:,} table cells; "
                                    f"the app draws at most {MAX_TABLE_CELLS:,} (fewer tokens, nodes or requests)")
    n0 = None
    for b, r in enumerate(s.requests):
        if s.is_tree:
            if r.tree is None or r.chain is not None:
                raise SpecvizError(_field(b, "tree"), f"is missing: the {s.algorithm} algorithm works on a tree (give 'tree', not 'chain')")
            if len(r.tree.tokens) != len(r.tree.parents):
                raise SpecvizError(_field(b, "tree.tokens"), f"has {len(r.tree.tokens)} entries for {len(r.tree.parents)} nodes: one token per node")
            toks = r.tree.tokens
            tok_field = "tree.tokens"
        else:
            if r.chain is None or r.tree is not None:
                raise SpecvizError(_field(b, "chain"), f"is missing: the {s.algorithm} algorithm works on a chain (give 'chain': [root, drafts...])")
            toks = r.chain
            tok_field = "chain"
        for k, t in enumerate(toks):
            if t not in labels:
                raise SpecvizError(_field(b, tok_field, k), f"is {t!r}, which is not in the vocabulary {s.vocab[:12]}{'...' if V > 12 else ''}: add it to 'vocab' or pick a listed token")
        if s.is_tree:
            try:
                DrawnTree(tuple(r.tree.parents), tuple(s.vocab.index(t) for t in toks))
            except SpecvizError as exc:
                raise SpecvizError(_field(b, exc.field), exc.detail) from None
        n = len(toks)
        if n0 is None:
            n0 = n
        elif n != n0:
            raise SpecvizError(_field(b, tok_field), f"has {n} nodes but request 0 has {n0}: SGLang's batch tensors are [bs, n], so every request needs the same n")
        # Per-algorithm inputs.
        declared = _algorithms.get(s.algorithm).inputs
        need_predict = "target_predict" in declared
        need_probs = "target_probs" in declared
        need_q = "draft_probs" in declared
        if r.target_logits is not None:
            if r.target_probs is not None or r.target_predict is not None:
                raise SpecvizError(_field(b, "target_logits"), "is given together with target_probs / target_predict: give one of them")
            if len(r.target_logits) != n or any(len(row) != V for row in r.target_logits):
                raise SpecvizError(_field(b, "target_logits"), f"must have {n} rows of {V} logits (one row per node / slot)")
            lg = np.asarray(r.target_logits, dtype=np.float64)
            if np.any(np.isnan(lg) | (lg == np.inf)):
                raise SpecvizError(_field(b, "target_logits"), 'contains NaN or +inf: every logit must be a finite number, '
                                   'or "-inf" for a masked token')
            if lg.size and np.any(~np.isfinite(lg).any(axis=1)):
                row = int(np.argmax(~np.isfinite(lg).any(axis=1)))
                raise SpecvizError(_field(b, "target_logits"), f'row {row} has no finite logit: every token is masked '
                                   '("-inf"); leave at least one token unmasked')
        if need_predict and r.target_logits is None:
            if r.target_predict is None:
                raise SpecvizError(_field(b, "target_predict"), "is missing: give the target's greedy token for every row")
            if len(r.target_predict) != n:
                raise SpecvizError(_field(b, "target_predict"), f"has {len(r.target_predict)} entries for {n} rows: one per row")
            for k, t in enumerate(r.target_predict):
                if t not in labels:
                    raise SpecvizError(_field(b, "target_predict", k), f"is {t!r}, which is not in the vocabulary: add it to 'vocab' or pick a listed token")
        if need_probs:
            if r.target_logits is None:
                _check_table(b, "target_probs", r.target_probs, n, V, "one p row per node / slot")
            ncoins = n if s.is_tree else n - 1
            if r.coins is None or len(r.coins) != ncoins:
                got = "missing" if r.coins is None else f"{len(r.coins)} coins"
                raise SpecvizError(_field(b, "coins"), f"is {got}: give {ncoins} coins in [0, {MAX_COIN}] ({'one per node' if s.is_tree else 'one per draft slot'})")
            for k, c in enumerate(r.coins):
                if not (0.0 <= c <= MAX_COIN):
                    raise SpecvizError(_field(b, "coins", k), f"is {c}: coins lie in [0, {MAX_COIN}] (the sliders' range)")
            if r.coin_final is None:
                raise SpecvizError(_field(b, "coin_final"), f"is missing: give the terminal-sample coin in [0, {MAX_COIN}]")
        if need_q:
            _check_table(b, "draft_probs", r.draft_probs, n - 1, V, "one q row per draft slot")
        if _algorithms.get(s.algorithm).family == "dspark" and r.verify_len is not None and r.verify_len > n:
            raise SpecvizError(_field(b, "verify_len"), f"is {r.verify_len} but the window has only T = {n} rows")
    if s.num_speculative_tokens is not None and not s.is_tree and s.num_speculative_tokens != n0:
        raise SpecvizError("num_speculative_tokens", f"is {s.num_speculative_tokens} but the chain has {n0} slots: for a chain they are equal")
    if s.num_speculative_tokens is not None and s.num_speculative_tokens > n0:
        raise SpecvizError("num_speculative_tokens", f"is {s.num_speculative_tokens} but the tree has only {n0} nodes: at most {n0}")


def _check_table(b: int, name: str, table, rows: int, V: int, what: str) -> None:
    f = _field(b, name)
    if table is None:
        raise SpecvizError(f, f"is missing: give {rows} rows of {V} probabilities ({what})")
    if len(table) != rows:
        raise SpecvizError(f, f"has {len(table)} rows but needs {rows} ({what})")
    for k, row in enumerate(table):
        if len(row) != V:
            raise SpecvizError(_field(b, name, k), f"has {len(row)} values but the vocabulary has {V}")
        arr = np.asarray(row, dtype=np.float64)
        if not np.all(np.isfinite(arr)):
            raise SpecvizError(_field(b, name, k), "contains NaN or inf: every probability must be a finite number")
        if np.any(arr < 0):
            raise SpecvizError(_field(b, name, k), f"holds {arr.min():g}: probabilities cannot be negative")
        if abs(arr.sum() - 1.0) > PROB_SUM_ATOL:
            raise SpecvizError(_field(b, name, k), f"sums to {arr.sum():.6g}; rows must sum to 1 +- {PROB_SUM_ATOL:g}: normalise it (divide by its sum)")


def _loc_text(loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after", "function-before") or "[" in str(part):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "scenario"


def scenario_from_dict(data) -> Scenario:
    """Validate a decoded JSON value. Raises SpecvizError naming the field path."""
    if not isinstance(data, dict):
        raise SpecvizError("scenario", f"is a JSON {type(data).__name__}: a scenario is a JSON object")
    if data.get("format", FORMAT) != FORMAT:
        raise SpecvizError("format", f"is {data.get('format')!r}: this is not a specviz scenario (expected {FORMAT!r})")
    if data.get("version", VERSION) != VERSION:
        raise SpecvizError("version", f"is {data.get('version')!r}: this specviz reads version {VERSION}")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        cause = err.get("ctx", {}).get("error")
        if isinstance(cause, SpecvizError):
            raise SpecvizError(cause.field, cause.detail) from None
        loc = _loc_text(err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "is not a scenario field: check its spelling"
        elif err["type"] == "missing":
            msg = "is missing"
        raise SpecvizError(loc, msg) from None


def scenario_from_json(text) -> Scenario:
    """Parse and validate scenario JSON text (str or UTF-8 bytes); size, nesting and number
    length are checked before parsing (``specviz.base.safety.loads_json``)."""
    return scenario_from_dict(loads_json(text, "scenario", MAX_SCENARIO_CHARS))


def load_scenario(path) -> Scenario:
    """A scenario file: a regular file of at most MAX_SCENARIO_CHARS bytes of UTF-8 JSON."""
    return scenario_from_json(read_text_file(path, "file", MAX_SCENARIO_CHARS))


def tree_request(tree: DrawnTree, vocab: list[str], **fields) -> dict:
    """A request dict for a drawn tree (tokens as labels)."""
    return {"tree": {"parents": list(tree.parents), "tokens": [vocab[t] for t in tree.tokens]}, **fields}
