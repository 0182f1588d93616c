"""The audit's entry points: audit() a claim against the reference, the expected values of every
field, the token each committed row emits, and reading an audit request from JSON or a file."""
from __future__ import annotations

import dataclasses
import os

from specviz.replay.engine import Run, run_scenario
from specviz.base.errors import SpecvizError
from specviz.base.safety import loads_json, read_text_file
from specviz.inputs.scenario import MAX_SCENARIO_CHARS, Scenario, load_scenario, scenario_from_dict
from specviz.rooms.audit.compare import field_finding
from specviz.rooms.audit.expected import Context, expected_values
from specviz.rooms.audit.fields import auditable_fields, normalise_claimed
from specviz.rooms.audit.parse import MAX_PASTE_CHARS, parse_claimed_text
from specviz.rooms.audit.report import AuditReport


def audit(scenario: Scenario, claimed: dict, run: Run | None = None) -> AuditReport:
    """Check ``claimed`` outputs against the numpy reference for ``scenario``.

    ``claimed`` maps field names (see the ``specviz.rooms.audit`` docstring; aliases accepted) to lists,
    ints or pasted text. Raises SpecvizError for malformed claims (wrong shape, unknown field); wrong
    values are findings, not errors.
    """
    if not isinstance(scenario, Scenario):
        raise SpecvizError("scenario", "must be a specviz Scenario (load it with specviz.inputs.scenario.load_scenario)")
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


def load_audit_request(data: dict, base_dir: str = ".", scenario_path=None) -> tuple[Scenario, dict]:
    """{"scenario": {...}} or {"scenario_file": path} plus {"claimed": {...}} -> (Scenario, claimed).

    A "scenario_file" resolves inside ``base_dir`` (the audit file's folder) only: "../x.json",
    an absolute path or a link leading out of it is refused, so an audit file someone hands you
    cannot make the CLI read (and quote) another file of yours. ``scenario_path`` (the CLI's
    ``--scenario FILE``, chosen by the user) is read wherever it is and replaces "scenario_file".
    A scenario file that is not valid is reported by its field only: none of its content is echoed.
    """
    if not isinstance(data, dict):
        raise SpecvizError("audit file", "must hold a JSON object with 'scenario' (or 'scenario_file') and 'claimed'")
    extra = set(data) - {"scenario", "scenario_file", "claimed", "comment"}
    if extra:
        raise SpecvizError(f"audit file.{sorted(extra)[0]}", "is not a known key: use 'scenario' or 'scenario_file', and 'claimed'")
    if "scenario" in data and ("scenario_file" in data or scenario_path is not None):
        raise SpecvizError("audit file", "gives both 'scenario' and a scenario file: give one")
    if scenario_path is not None:
        s = _scenario_file(str(scenario_path), str(scenario_path), quote=True)
    elif "scenario" in data:
        s = scenario_from_dict(data["scenario"])
    elif "scenario_file" in data:
        path = data["scenario_file"]
        if not isinstance(path, str) or not path or "\x00" in path:
            raise SpecvizError("scenario_file", "must be a path string")
        base = os.path.realpath(base_dir)
        full = os.path.realpath(os.path.join(base, path))  # (an absolute path stays itself: refused below)
        if os.path.commonpath([base, full]) != base:
            raise SpecvizError("scenario_file", "points outside the audit file's folder: a scenario file named in an audit "
                                                "file must lie in that folder (or below it); to use another file, pass it "
                                                "yourself: python -m specviz audit FILE --scenario SCENARIO.json")
        s = _scenario_file(full, os.path.relpath(full, base))
    else:
        raise SpecvizError("audit file", "needs 'scenario' (the inputs) or 'scenario_file' (a path to a scenario JSON)")
    if "claimed" not in data:
        raise SpecvizError("claimed", "is missing: give the outputs to check, e.g. {\"accept_index\": [[0, 1, 3]]}")
    claimed = data["claimed"]
    if isinstance(claimed, str):
        claimed = parse_claimed_text(claimed)
    return s, claimed


def _scenario_file(path: str, shown: str, quote: bool = False) -> Scenario:
    """A scenario file for the audit; its errors name the field, and quote the file's content only
    when the user named the file on the command line (``quote``), never for one an audit file names."""
    try:
        return load_scenario(path)
    except SpecvizError as exc:
        if quote:
            raise SpecvizError(f"--scenario {exc.field}", exc.detail) from None
        field = exc.field if exc.field.replace(".", "").replace("_", "").replace("[", "").replace("]", "").isalnum() else "?"
        raise SpecvizError("scenario_file", f"{shown} is not a valid scenario file (its field {field[:60]} is invalid or "
                                            "it cannot be read): check it with python -m specviz check FILE") from None


def audit_file(path, scenario_path=None) -> AuditReport:
    """Audit a JSON file {"scenario": {...} | "scenario_file": "path", "claimed": {...}} (the CLI's entry)."""
    text = read_text_file(path, "file", MAX_SCENARIO_CHARS + MAX_PASTE_CHARS)
    data = loads_json(text, "file", MAX_SCENARIO_CHARS + MAX_PASTE_CHARS)
    s, claimed = load_audit_request(data, os.path.dirname(os.path.abspath(str(path))), scenario_path)
    return audit(s, claimed)
