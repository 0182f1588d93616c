"""Trace events: the steps a student should see, recorded as data by the numpy reference.

A reference function given ``trace=Trace()`` calls ``trace.start(...)`` with the initial
values of every array it will write, then ``trace.emit(...)`` once per step. Each event carries
the writes it makes (array name, flat index, value), so replaying the events over the initial
arrays rebuilds the function's result step by step (``specviz.replay.frames``). Nothing else is needed
to animate a run, and a test can check that the last frame equals the returned result.

Event kinds (``Event.kind``):

========================  ==================================================================
``start``                 a request begins: the root row goes into accept_index[b][0]
``visit``                 the walk looks at a child node (first child or next sibling)
``compare``               greedy: the child's token against the target at the last accepted row
``accept_test``           sampling: the test with p, q (or the running sum), u and the verdict
``accept``                a child is accepted: predicts[last] and accept_index[b][k] written
``reject``                a child is rejected; sampling rejections write the work buffer
``next_sibling``          the walk moves to the next sibling
``no_child``              the current node has no (more) children: the walk stops
``depth_limit``           W-1 drafts accepted: the walk stops
``residual``              the terminal distribution is formed (plain target row or residual)
``terminal``              the bonus / correction token is written at the last accepted row
``commit``                accept_token_num written; the request is done
``cap``                   DSpark: the verify window caps correct_len (CapCorrectLen); the bonus is re-read
``finalize``              DSpark: commit_lens = correct_len + 1 and new_seq_lens written (FinalizeAcceptLens)
``warning``               a degenerate but legal situation, explained in ``data['message']``
``build_link``            tree build: a node is linked under its parent
``build_row``             tree build: a node's mask row and position are written
========================  ==================================================================
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

EVENT_KINDS = (
    "start", "visit", "compare", "accept_test", "accept", "reject", "next_sibling", "no_child",
    "depth_limit", "residual", "terminal", "commit", "cap", "finalize", "warning", "build_link", "build_row",
)


@dataclass(frozen=True)
class Event:
    kind: str
    request: int
    node: int | None = None
    data: dict = field(default_factory=dict)
    # ((array name, flat index into that array, new value), ...)
    writes: tuple = ()

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "request": self.request,
            "node": self.node,
            "data": {k: _plain(v) for k, v in self.data.items()},
            "writes": [[a, int(i), _plain(v)] for a, i, v in self.writes],
        }


def _plain(v: Any):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


class Trace:
    """Recorder passed to a reference function as ``trace=``."""

    def __init__(self) -> None:
        self.function: str | None = None
        self.initial: dict[str, np.ndarray] = {}
        self.events: list[Event] = []

    def begin(self, function: str, **arrays: np.ndarray) -> None:
        self.function = function
        self.initial = {k: np.array(v, copy=True) for k, v in arrays.items()}
        self.events = []

    def emit(self, kind: str, request: int, node: int | None = None, writes=(), **data) -> None:
        assert kind in EVENT_KINDS, kind
        self.events.append(Event(kind, int(request), None if node is None else int(node), data, tuple(writes)))

    def warnings(self) -> list[str]:
        return [e.data["message"] for e in self.events if e.kind == "warning"]

    def to_json(self) -> dict:
        return {
            "function": self.function,
            "initial": {k: {"shape": list(v.shape), "dtype": str(v.dtype), "values": v.ravel().tolist()} for k, v in self.initial.items()},
            "events": [e.to_json() for e in self.events],
        }
