"""The one replay: what every view shows at each step, as plain data.

Over the typed events of ``specviz.replay.events``. ``replay_steps`` replays a run once and yields, per step:
the step number, the typed event, the arrays after it, every node's state, the bonus, and the
caption in both languages (``specviz.replay.captions.caption``). Pages, the export and the client-side
player read these frames; ``Step.to_json`` is the plain-data form.

Node states: pending / compared / current / accepted / rejected / discarded.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from specviz import algorithms
from specviz.replay.events import (Accept, AcceptTest, Cap, Commit, Compare, Finalize, Reject, Residual, Start, Terminal, Visit,  # noqa: F401
                     typed, typed_events)
from specviz.replay.frames import replay


# -- node states: the one derivation ------------------------------------------------------------------

@dataclass
class WalkState:
    states: dict = field(default_factory=dict)  # node -> state (missing = pending)
    current: int | None = None  # last accepted node
    compared: int | None = None  # the child being looked at
    target_row: int | None = None  # greedy: the row whose target prediction is compared
    bonus: tuple | None = None  # (node, token id) once the terminal token is written
    done: bool = False
    num_accepted: int = 0


def advance(w: WalkState, ev, n: int, dspark: bool) -> None:
    """Apply one typed event of this request to its walk state."""
    if isinstance(ev, Start):
        w.states[0] = "current" if not dspark else "accepted"
        w.current = 0
    elif isinstance(ev, Visit):
        w.compared = ev.node
        w.states[ev.node] = "compared"
    elif isinstance(ev, Compare):
        w.target_row = ev.target_row
        if dspark:
            w.states.setdefault(0, "accepted")
            w.states[ev.node] = "accepted" if ev.counted else ("rejected" if not ev.match else "discarded")
    elif isinstance(ev, Reject):
        w.states[ev.node] = "rejected"
        w.compared = None
    elif isinstance(ev, Accept):
        if w.current is not None:
            w.states[w.current] = "accepted"
        w.states[ev.node] = "current"
        w.current = ev.node
        w.compared = None
        w.num_accepted = ev.k
    elif isinstance(ev, Terminal):
        w.bonus = (ev.row if dspark else ev.node, ev.token)
    elif isinstance(ev, Commit):
        w.done = True
        w.num_accepted = ev.k
        for i in range(n):
            if w.states.get(i) == "current":
                w.states[i] = "accepted"
            elif w.states.get(i) not in ("accepted", "rejected"):
                w.states[i] = "discarded"
        if dspark:
            for i in range(ev.k + 1):
                w.states[i] = "accepted"
    elif isinstance(ev, Cap):  # the window cap: accepted drafts beyond verify_len - 1 are trimmed
        for i in range(ev.capped + 1, ev.raw + 1):
            w.states[i] = "discarded"
        w.num_accepted = ev.capped
        w.bonus = (ev.capped, ev.bonus)
    elif isinstance(ev, Finalize):
        w.num_accepted = ev.k
        w.bonus = (ev.k, ev.bonus)


def walk_after(events, step: int, n: int, request: int = 0, dspark: bool = False) -> WalkState:
    """The walk of ``request`` after the first ``step`` typed events of ``events``."""
    w = WalkState()
    for ev in events[:step]:
        if ev.request == request:
            advance(w, ev, n, dspark)
    return w


# -- the one replay --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    step: int  # 0 = before any event
    event: object  # a typed event, None at step 0
    arrays: dict  # array name -> numpy array after this step
    walks: list  # [WalkState] per request
    caption: dict  # {"en": ..., "zh": ...}

    def to_json(self) -> dict:
        """Plain data: what a page (or a client-side player) shows at this step."""
        ev = None
        if self.event is not None:
            ev = {"type": type(self.event).__name__.rstrip("_").lower(), **_plain(asdict(self.event))}
        return {
            "step": self.step,
            "event": ev,
            "arrays": {k: np.asarray(v).tolist() for k, v in self.arrays.items()},
            "requests": [{"states": {str(i): s for i, s in sorted(w.states.items())},
                          "bonus": None if w.bonus is None else {"node": w.bonus[0], "token": w.bonus[1]},
                          "current": w.current, "compared": w.compared, "target_row": w.target_row, "done": w.done,
                          "num_accepted": w.num_accepted} for w in self.walks],
            "caption": dict(self.caption),
        }


def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def replay_steps(s, run) -> list[Step]:
    """Replay the scenario's reference trace once: one Step per event (plus step 0). ``run`` is the
    scenario's run with the numpy reference's trace (``run_scenario(s, "numpy")``): the caller runs it,
    so that this module stays below the engine."""
    from specviz.replay.captions import caption

    if run is None or run.trace is None:
        raise ValueError("replay_steps needs the scenario's run with the reference's trace: run_scenario(s, 'numpy')")
    dspark = algorithms.get(s.algorithm).family == "dspark"
    events = typed_events(run.trace.events)
    frames = replay(run.trace)
    n = s.n
    walks = [WalkState() for _ in s.requests]
    out = []
    for k, fr in enumerate(frames):
        ev = events[k - 1] if k > 0 else None
        if ev is not None and ev.request < len(walks):
            advance(walks[ev.request], ev, n, dspark)
        snapshot = [WalkState(dict(w.states), w.current, w.compared, w.target_row, w.bonus, w.done, w.num_accepted) for w in walks]
        out.append(Step(k, ev, fr.arrays, snapshot, {"en": caption(ev, s, "en"), "zh": caption(ev, s, "zh")}))
    return out


# -- the sampling pages' view of a scan ----------------------------------------------------------------

@dataclass
class ScanView:
    """What a sampling page draws after some steps: one state per node / slot (the root accepted
    from the start), the node or slot in focus, the node whose children are scanned, the bonus."""
    states: list
    focus: int | None = None
    parent: int = 0
    bonus: tuple | None = None  # (node, token id)


def scan_view(events, n: int, parents=None, chain: bool = False, cut_after_reject: bool = False,
              finish: bool = True) -> ScanView:
    """Fold typed events (already cut to the shown step) into a ScanView.

    ``chain``: slots in a line (``parents`` unused); ``cut_after_reject``: a rejection discards the later
    slots at once (the chain stops); ``finish``: a commit turns every undecided node into discarded."""
    v = ScanView(["accepted"] + ["pending"] * (n - 1))
    for ev in events:
        if isinstance(ev, (Visit, AcceptTest)):
            v.states[ev.node] = "current"
            v.focus = ev.node
            if not chain and parents is not None:
                v.parent = parents[ev.node]
        elif isinstance(ev, Accept):
            v.states[ev.node] = "accepted"
            v.parent = ev.node
            if not chain:
                v.focus = None
        elif isinstance(ev, Reject):
            v.states[ev.node] = "rejected"
            if not chain:
                v.focus = None
            if cut_after_reject:
                for j in range(ev.node + 1, n):
                    v.states[j] = "discarded"
        elif isinstance(ev, (Residual, Terminal)):
            if ev.node is not None:
                v.parent = ev.node
            if isinstance(ev, Terminal):
                v.bonus = (ev.node, ev.token)
        elif isinstance(ev, Commit) and finish:
            v.states = [x if x in ("accepted", "rejected") else "discarded" for x in v.states]
        elif isinstance(ev, Cap):  # DSpark: the window cap trims accepted slots beyond verify_len - 1
            for j in range(ev.capped + 1, min(ev.raw + 1, n)):
                v.states[j] = "discarded"
            v.bonus = (ev.capped, ev.bonus)
        elif isinstance(ev, Finalize):
            v.bonus = (ev.k, ev.bonus)
    return v


def dspark_matches(events, b: int = 0) -> list:
    """DSpark greedy: does draft t+1 equal the target's prediction after row t? (one bool per row t),
    read from the replay's ``compare`` events (typed or recorded), never recomputed beside them."""
    out = []
    for ev in events:
        if getattr(ev, "request", None) != b:
            continue
        if isinstance(ev, Compare):
            out.append(bool(ev.match))
        elif getattr(ev, "kind", None) == "compare":
            out.append(bool(ev.data["match"]))
    return out
