"""The audit's entry points: audit() a claim against the reference, the expected values of every
field, the token each committed row emits, and reading an audit request from JSON or a file."""
from __future__ import annotations

import dataclasses
import os

from ..engine import Run, run_scenario
from ..errors import SpecvizError
from ..safety import loads_json, read_text_file
from ..scenario import MAX_SCENARIO_CHARS, Scenario, load_scenario, scenario_from_dict
from .compare import Context, expected_values, field_finding
from .fields import auditable_fields, normalise_claimed
from .parse import MAX_PASTE_CHARS, parse_claimed_text
from .report import AuditReport


def audit(scenario: Scenario, claimed: dict, run: Run | None = None) -> AuditReport:
    """Check ``claimed`` outputs against the numpy reference for ``scenario``.

    ``claimed`` maps field names (see the ``specviz.audit`` docstring; aliases accepted) to lists,
    ints or pasted text. Raises SpecvizError for malformed claims (wrong shape, unknown field); wrong
    values are findings, not errors.
    """
    if not isinstance(scenario, Scenario):
        raise SpecvizError("scenario", "must be a specviz Scenario (load it with specviz.scenario.load_scenario)")
    norm = normalise_claimed(scenario, claimed)
    run = run if run is not None else run_scenario(scenario, "numpy")
    ctx = Context(scenario, run)
    ctx_zh = Context(scenario, run, lang="zh")
    expected = expected_values(ctx)
    checked, findings = [], []
    for name in auditable_fields(scenario):
        if name not in norm:
            continue
        checked.append(name)
        f = field_finding(ctx, name, norm[name], expected[name])
        if f is not None:
            f_zh = field_finding(ctx_zh, name, norm[name], expected[name])
            findings.append(dataclasses.replace(f, rule_zh=f_zh.rule if f_zh is not None else ""))
    notes = []
    if "predicts" in norm:
        notes.append("predicts is checked on the accepted rows only; the other rows keep an implementation-defined initial value.")
    return AuditReport(scenario=scenario, run=run, checked=checked, findings=findings, notes=notes)


def expected_outputs(scenario: Scenario, run: Run | None = None) -> dict:
    """The reference values of every auditable field (canonical shapes, token ids)."""
    run = run if run is not None else run_scenario(scenario, "numpy")
    exp = expected_values(Context(scenario, run))
    return {k: exp[k] for k in auditable_fields(scenario) if k in exp}


def row_outputs(run: Run) -> list:
    """The token each committed verify row emits, flat over global rows [bs*n] (0 elsewhere).

    EAGLE: predicts at the accepted rows; DSpark (no predicts for greedy): out_tokens[t] at row t of
    the committed prefix. Used by the shift table (input row -> output)."""
    n = run.scenario.n
    out = [0] * (len(run.commits) * n)
    for c in run.commits:
        for node, tok in zip(c.accept_nodes, c.output_tokens):
            out[c.request * n + node] = int(tok)
    return out


def load_audit_request(data: dict, base_dir: str = ".") -> tuple[Scenario, dict]:
    """{"scenario": {...}} or {"scenario_file": path} plus {"claimed": {...}} -> (Scenario, claimed)."""
    if not isinstance(data, dict):
        raise SpecvizError("audit file", "must hold a JSON object with 'scenario' (or 'scenario_file') and 'claimed'")
    extra = set(data) - {"scenario", "scenario_file", "claimed", "comment"}
    if extra:
        raise SpecvizError(f"audit file.{sorted(extra)[0]}", "is not a known key: use 'scenario' or 'scenario_file', and 'claimed'")
    if "scenario" in data and "scenario_file" in data:
        raise SpecvizError("audit file", "gives both 'scenario' and 'scenario_file': give one")
    if "scenario" in data:
        s = scenario_from_dict(data["scenario"])
    elif "scenario_file" in data:
        path = data["scenario_file"]
        if not isinstance(path, str):
            raise SpecvizError("scenario_file", "must be a path string")
        if not os.path.isabs(path):
            path = os.path.join(base_dir, path)
            if not os.path.exists(path):
                path = data["scenario_file"]
        s = load_scenario(path)
    else:
        raise SpecvizError("audit file", "needs 'scenario' (the inputs) or 'scenario_file' (a path to a scenario JSON)")
    if "claimed" not in data:
        raise SpecvizError("claimed", "is missing: give the outputs to check, e.g. {\"accept_index\": [[0, 1, 3]]}")
    claimed = data["claimed"]
    if isinstance(claimed, str):
        claimed = parse_claimed_text(claimed)
    return s, claimed


def audit_file(path) -> AuditReport:
    """Audit a JSON file {"scenario": {...} | "scenario_file": "path", "claimed": {...}} (the CLI's entry)."""
    text = read_text_file(path, "file", MAX_SCENARIO_CHARS + MAX_PASTE_CHARS)
    data = loads_json(text, "file", MAX_SCENARIO_CHARS + MAX_PASTE_CHARS)
    s, claimed = load_audit_request(data, os.path.dirname(os.path.abspath(str(path))))
    return audit(s, claimed)
