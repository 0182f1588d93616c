"""The quiz: the student predicts a field before the reveal; the audit engine checks the answer."""
from __future__ import annotations

import re

import numpy as np

from specviz import algorithms
from specviz.replay.engine import Run
from specviz.base.errors import SpecvizError
from specviz.inputs.scenario import Scenario, scenario_from_dict
from specviz.rooms.audit.check import audit
from specviz.rooms.audit.parse import parse_array
from specviz.rooms.audit.report import AuditReport

QUIZ_FIELDS = ("accept_index", "outputs", "committed_rows", "correct_len")


def quiz_fields(s: Scenario) -> tuple:
    """The fields a student can predict for this scenario (in the order the page offers them)."""
    if algorithms.get(s.algorithm).family == "dspark":
        return ("correct_len", "outputs", "committed_rows")
    return ("accept_index", "outputs", "committed_rows")


def check_answer(s: Scenario, field_name: str, answer_text: str, run: Run | None = None) -> AuditReport:
    """Parse a typed answer (e.g. ``[0, 1, 3]`` or ``A C X``) and audit that one field."""
    if field_name not in quiz_fields(s):
        raise SpecvizError("quiz", f"{field_name!r} cannot be asked for {s.algorithm}: ask one of {', '.join(quiz_fields(s))}")
    text = answer_text.strip() if isinstance(answer_text, str) else ""
    if not text:
        raise SpecvizError(field_name, "is empty: type your prediction first, e.g. [0, 1, 3]")
    if not text.startswith(("[", "(")) and re.fullmatch(r"[^\[\]()]+", text):
        text = "[" + ", ".join(re.split(r"[\s,]+", text.strip())) + "]"  # "A C X" or "0 1 3" -> a list
    value = parse_array(text, field_name)
    if field_name == "correct_len" and isinstance(value, list) and len(value) == 1 and not isinstance(value[0], list):
        value = value[0]
    return audit(s, {field_name: value}, run=run)


def quiz_scenario(seed: int) -> Scenario:
    """A random greedy question on a small tree (deterministic in ``seed``)."""
    rng = np.random.default_rng(int(seed))
    shapes = [
        ([-1, 0, 0, 1, 1], ["R", "A", "B", "C", "D"]),
        ([-1, 0, 0, 1, 1, 2], ["R", "A", "B", "C", "D", "E"]),
        ([-1, 0, 0, 0, 1, 2], ["R", "A", "B", "C", "D", "E"]),
        ([-1, 0, 0, 1, 1, 3, 3], ["R", "A", "B", "C", "D", "E", "F"]),
    ]
    parents, tokens = shapes[int(rng.integers(len(shapes)))]
    vocab = ["A", "B", "C", "D", "E", "F", "X", "R"]
    kids = {i: [c for c in range(len(parents)) if parents[c] == i] for i in range(len(parents))}
    predict = []
    for i in range(len(parents)):
        if kids[i] and rng.random() < 0.7:
            predict.append(tokens[kids[i][int(rng.integers(len(kids[i])))]])
        else:
            predict.append(["X", "F", "E"][int(rng.integers(3))] if rng.random() < 0.8 else "X")
    depth = [0] * len(parents)
    for i in range(1, len(parents)):
        depth[i] = depth[parents[i]] + 1
    return scenario_from_dict({
        "name": f"quiz_{int(seed)}", "title": f"Random greedy question #{int(seed)}",
        "description": "A random tree with random target predictions: predict the accepted path before the reveal.",
        "algorithm": "greedy", "vocab": vocab,
        "requests": [{"tree": {"parents": parents, "tokens": tokens}, "seq_len": int(rng.integers(5, 30)),
                      "target_predict": predict}],
        "num_speculative_tokens": max(depth) + 1})
