"""Replay a trace into animation frames.

Frame 0 holds the initial arrays; frame k holds the arrays after the first k events, plus the
event that led there. The last frame's arrays equal the reference function's result.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specviz.base.trace import Event, Trace


@dataclass(frozen=True)
class Frame:
    step: int  # 0 = before any event
    event: Event | None
    arrays: dict  # name -> numpy array (own copy)

    def _repr_html_(self) -> str:
        """Jupyter rich display: the step, its event and the arrays (escaped HTML)."""
        from specviz.base.display import frame_html

        return frame_html(self)


def replay(trace: Trace) -> list[Frame]:
    state = {k: v.copy() for k, v in trace.initial.items()}
    frames = [Frame(0, None, {k: v.copy() for k, v in state.items()})]
    for step, event in enumerate(trace.events, start=1):
        for name, flat, value in event.writes:
            state[name].reshape(-1)[flat] = value
        frames.append(Frame(step, event, {k: v.copy() for k, v in state.items()}))
    return frames


def final_arrays(trace: Trace) -> dict:
    """The arrays after every event, without building the intermediate frames."""
    state = {k: v.copy() for k, v in trace.initial.items()}
    for event in trace.events:
        for name, flat, value in event.writes:
            state[name].reshape(-1)[flat] = value
    return state


def frames_equal_result(frames: list[Frame], result) -> bool:
    """True when the last frame holds exactly the result's arrays (for every array traced)."""
    last = frames[-1].arrays
    for name, arr in last.items():
        want = np.asarray(getattr(result, name))
        if want.shape != arr.reshape(want.shape).shape or not np.array_equal(arr.reshape(want.shape), want):
            return False
    return True
