"""Typed trace events: small frozen types instead of dicts probed with ``"q" in d``.

The numpy reference records generic ``trace.Event`` values; ``typed`` turns each into one of the
types below (``AcceptTest.q`` is None for the target-only test, a number for the chain test).
Captions (``specviz.replay.captions.caption``) and the replay (``specviz.replay.steps``) read these.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from specviz.base.trace import Event


# -- typed events ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Start:
    request: int
    node: int
    row: int
    coin: float | None = None  # target-only: the first level's coin


@dataclass(frozen=True)
class Visit:
    request: int
    node: int
    row: int | None = None
    via_sibling: bool = False  # reached through retrieve_next_sibling (not a first child)


@dataclass(frozen=True)
class Compare:  # greedy (EAGLE tree) and DSpark greedy
    request: int
    node: int
    token: int
    target: int
    target_row: int
    match: bool
    level: int | None = None
    counted: bool | None = None  # DSpark: part of the leading run
    note: str | None = None  # DSpark: after the first mismatch


@dataclass(frozen=True)
class AcceptTest:  # chain rejection (q given) or target-only (q None: running sum against the coin)
    request: int
    node: int
    token: int
    p: float
    coin: float
    accepted: bool
    q: float | None = None
    u_times_q: float | None = None
    accept_prob: float | None = None
    prob_acc: float | None = None
    bound: float | None = None
    single_fired: bool = False
    level: int | None = None
    q_valid: bool | None = None  # chain, 0.5.23: does q pass 0 < q <= 1 (None: earlier semantics, no such rule)


@dataclass(frozen=True)
class Accept:
    request: int
    node: int
    token: int
    row: int
    k: int
    predicts_row: int | None = None
    next_coin: float | None = None


@dataclass(frozen=True)
class Reject:
    request: int
    node: int
    token: int
    target: int | None = None  # greedy
    p: float | None = None  # sampling
    q: float | None = None  # chain: the residual follows


@dataclass(frozen=True)
class NextSibling:
    request: int
    node: int | None  # None: no sibling left


@dataclass(frozen=True)
class NoChild:
    request: int
    node: int
    reason: str | None = None


@dataclass(frozen=True)
class DepthLimit:
    request: int
    k: int


@dataclass(frozen=True)
class Residual:
    request: int
    node: int | None
    source: str  # English, for logs and the CLI
    code: str | None = None  # which distribution it is, for words in any language (specviz.replay.wording)


@dataclass(frozen=True)
class Terminal:
    request: int
    node: int
    row: int
    token: int
    coin: float | None = None  # sampling: u_final
    provisional: bool = False  # DSpark: a later window cap re-reads the bonus


@dataclass(frozen=True)
class Commit:
    request: int
    k: int
    accept_len: int


@dataclass(frozen=True)
class Cap:  # DSpark CapCorrectLen: the verify window shorter than T
    request: int
    raw: int  # the accept kernel's correct_len
    capped: int  # min(raw, verify_len - 1)
    verify_len: int
    trim: int  # cap_trim_lens = raw - capped
    bonus: int  # re-read at capped
    greedy: bool
    gather_row: int | None = None  # sampling: accept_index[b, capped]


@dataclass(frozen=True)
class Finalize:  # DSpark FinalizeAcceptLens
    request: int
    k: int  # correct_len (capped)
    commit_len: int  # k + 1
    prefix: int
    new_seq_len: int
    bonus: int
    greedy: bool
    gather_row: int | None = None
    output: tuple = ()  # BuildOutTokens' first commit_lens entries: the accepted drafts, then the bonus


@dataclass(frozen=True)
class Warning_:
    request: int
    message: str  # English, with token ids (Python's warnings, the CLI)
    code: str | None = None  # what happened, for words in any language with the scenario's labels (specviz.replay.wording)
    node: int | None = None
    params: dict = field(default_factory=dict)  # the numbers the words need (token id, slot, row, V, ...)


@dataclass(frozen=True)
class Other:  # build_link / build_row (tree build), kept with their kind
    request: int
    kind: str
    node: int | None
    data: dict = field(default_factory=dict)


def _f(v):
    return None if v is None else float(v)


def typed(e: Event, via_sibling: bool = False):
    """The typed form of a recorded event."""
    d, b, node = e.data, e.request, e.node
    if e.kind == "start":
        return Start(b, 0 if node is None else node, int(d.get("row", 0)), _f(d.get("coin")))
    if e.kind == "visit":
        return Visit(b, node, d.get("row"), via_sibling)
    if e.kind == "compare":
        return Compare(b, node, int(d["token"]), int(d["target"]), int(d["target_row"]), bool(d["match"]), d.get("level"),
                       d.get("counted"), d.get("note"))
    if e.kind == "accept_test":
        return AcceptTest(b, node, int(d["token"]), float(d["p"]), float(d["coin"]), bool(d["accepted"]), _f(d.get("q")),
                          _f(d.get("u_times_q")), _f(d.get("accept_prob")), _f(d.get("prob_acc")), _f(d.get("bound")),
                          bool(d.get("single_fired", False)), d.get("level"), d.get("q_valid"))
    if e.kind == "accept":
        prow = next((int(i) for a, i, _ in e.writes if a == "predicts"), None)
        return Accept(b, node, int(d["token"]), int(d["row"]), int(d["k"]), prow, _f(d.get("next_coin")))
    if e.kind == "reject":
        return Reject(b, node, int(d["token"]), d.get("target"), _f(d.get("p")), _f(d.get("q")))
    if e.kind == "next_sibling":
        return NextSibling(b, node)
    if e.kind == "no_child":
        return NoChild(b, node, d.get("reason"))
    if e.kind == "depth_limit":
        return DepthLimit(b, int(d["k"]))
    if e.kind == "residual":
        return Residual(b, node, str(d.get("source", "")), d.get("source_code"))
    if e.kind == "terminal":
        return Terminal(b, node, int(d.get("row", node if node is not None else 0)), int(d["token"]), _f(d.get("coin")),
                        bool(d.get("provisional", False)))
    if e.kind == "cap":
        return Cap(b, int(d["raw"]), int(d["capped"]), int(d["verify_len"]), int(d["trim"]), int(d["bonus"]), bool(d["greedy"]),
                   d.get("gather_row"))
    if e.kind == "finalize":
        return Finalize(b, int(d["k"]), int(d["commit_len"]), int(d["prefix"]), int(d["new_seq_len"]), int(d["bonus"]),
                        bool(d["greedy"]), d.get("gather_row"), tuple(int(x) for x in d.get("output", ())))
    if e.kind == "commit":
        k = int(d.get("k", 0))
        return Commit(b, k, int(d.get("accept_len", k + 1)))
    if e.kind == "warning":
        return Warning_(b, str(d.get("message", "")), d.get("code"), node,
                        {k: v for k, v in d.items() if k not in ("message", "code")})
    return Other(b, e.kind, node, dict(d))


def typed_events(events) -> list:
    """Every event typed; a visit after a next-sibling move is marked ``via_sibling``."""
    out, after_move = [], False
    for e in events:
        out.append(typed(e, via_sibling=after_move if e.kind == "visit" else False))
        if e.kind == "visit":
            after_move = False
        elif e.kind == "next_sibling":
            after_move = e.node is not None
    return out
