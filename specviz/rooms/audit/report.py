"""The audit's result types: one wrong value (AuditFinding) and the whole report (AuditReport)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from specviz.replay.engine import Run
from specviz.inputs.scenario import Scenario


@dataclass(frozen=True)
class AuditFinding:
    """One wrong value. ``index`` is the position inside the field as printed (``(b, slot)``,
    ``(row,)``, ``(b,)``); ``request`` / ``node`` / ``row`` say what to highlight in the tree."""

    field: str
    index: tuple
    expected: Any
    got: Any
    rule: str  # one sentence: what the value should be and why
    request: int | None = None
    node: int | None = None  # node id inside the request's tree to highlight
    row: int | None = None  # global verify row to highlight
    rule_zh: str = ""  # the same rule in 简体中文
    claimed_node: int | None = None  # the node the claimed (wrong) value points at, when it names one
    claimed_row: int | None = None  # its global verify row

    @property
    def shown_node(self) -> int | None:
        """The node to outline: the one the claim names (the wrong thing), else the expected one."""
        return self.claimed_node if self.claimed_node is not None else self.node

    @property
    def where(self) -> str:
        return self.field + "".join(f"[{i}]" for i in self.index)

    def rule_in(self, lang: str = "en") -> str:
        return self.rule_zh if (lang == "zh" and self.rule_zh) else self.rule

    def sentence(self, lang: str = "en") -> str:
        rule = self.rule_in(lang)
        first = rule.split(" ", 1)[0]
        if not any(ch in first for ch in "_[(="):  # never capitalise an identifier (accept_index, correct_len)
            rule = rule[:1].upper() + rule[1:]
        if lang == "zh":
            return f"{self.where}：得到 {_fmt(self.got)}，应为 {_fmt(self.expected)}。{rule}"
        return f"{self.where}: got {_fmt(self.got)}, expected {_fmt(self.expected)}. {rule}"


@dataclass
class AuditReport:
    scenario: Scenario
    run: Run
    checked: list  # field names compared, in checking order
    findings: list  # [AuditFinding], at most one per field, in checking order
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def first_error(self) -> AuditFinding | None:
        return self.findings[0] if self.findings else None

    def summary(self) -> str:
        if not self.checked:
            return "NOTHING CHECKED: give at least one output field (e.g. accept_index)."
        if self.ok:
            return f"OK: {', '.join(self.checked)} match the reference for scenario {self.scenario.name!r}."
        lines = [f"WRONG: {len(self.findings)} of {len(self.checked)} fields differ from the reference "
                 f"for scenario {self.scenario.name!r}.",
                 f"First error: {self.first_error.sentence()}"]
        for f in self.findings[1:]:
            lines.append(f"Also: {f.sentence()}")
        return "\n".join(lines)


def _fmt(v) -> str:
    if isinstance(v, np.ndarray):
        v = v.tolist()
    return json.dumps(v, ensure_ascii=False) if isinstance(v, (list, tuple, str)) else str(v)
