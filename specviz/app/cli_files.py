"""The subcommands that read a scenario FILE: ``specviz run``, ``check``, ``audit``, ``convert`` and
``export`` (``specviz.app.cli`` parses the command line and runs them; the app and serving commands
are there too).

Each returns the exit code: 0 = done (and, for check/audit, everything holds); 1 = an invariant or an
audited value is wrong. Bad input raises SpecvizError, which the command line prints in one line (exit 2).
"""
from __future__ import annotations

import json

import numpy as np

from specviz import algorithms
from specviz.base.errors import SpecvizError
from specviz.inputs.scenario import load_scenario


def _labels(s, tokens) -> str:
    return " ".join(s.label(int(t)) for t in tokens)


def _step_lines(run) -> list[str]:
    """One line per trace event a student should see: the same caption the pages and the export show."""
    from specviz.replay.captions import caption, plain
    from specviz.replay.events import typed_events

    s = run.scenario
    lines = []
    for ev in typed_events(run.trace.events if run.trace else []):
        where = f"req {ev.request} " if len(s.requests) > 1 else ""
        lines.append(where + plain(caption(ev, s, "en")))
    return lines


def _result_json(run) -> dict:
    s = run.scenario
    out = {"scenario": s.name, "algorithm": s.algorithm, "backend": run.backend,
           "result": {k: np.asarray(v).tolist() for k, v in run.result.items() if k != "draft_probs"},
           "requests": []}
    for c in run.commits:
        out["requests"].append({
            "request": c.request, "accept_rows": c.accept_rows, "num_correct_drafts": c.num_correct_drafts,
            "accept_len": c.accept_len, "outputs": [s.label(t) for t in c.output_tokens],
            "committed_rows": [s.label(t) for t in c.committed_tokens], "committed_positions": c.committed_positions,
            "discarded_nodes": c.discarded_nodes, "next_root": s.label(c.next_root), "new_seq_len": c.new_seq_len})
    out["warnings"] = run.warnings
    return out


def cmd_run(args) -> int:
    from specviz.replay.engine import run_scenario

    s = load_scenario(args.file)
    run = run_scenario(s, args.backend)
    if args.json:
        print(json.dumps(_result_json(run), indent=2, ensure_ascii=False))
        return 0
    print(f"{s.title or s.name}  [{s.algorithm}, backend {args.backend}, semantics {s.semantics}]")
    for b in range(len(s.requests)):
        t = s.tree(b)
        print(f"request {b}: nodes {_labels(s, t.tokens)}; parents {list(t.parents)}; prefix {s.requests[b].seq_len}")
    print(f"W (num_speculative_tokens) = {s.width}, n = {s.n}")
    print("\nsteps:")
    for line in _step_lines(run):
        print("  " + line)
    print("\nresult:")
    r = run.result
    if algorithms.get(s.algorithm).family == "dspark":
        print(f"  correct_len   {np.asarray(r['correct_len']).tolist()}  (before the window cap: {np.asarray(r['raw_correct_len']).tolist()})")
        print(f"  bonus         {[s.label(int(x)) for x in r['bonus']]}")
        print(f"  commit_lens   {np.asarray(r['commit_lens']).tolist()}")
        print(f"  new_seq_lens  {np.asarray(r['new_seq_lens']).tolist()}")
        print(f"  cap_trim_lens {np.asarray(r['cap_trim_lens']).tolist()}")
        for b, row in enumerate(r["out_tokens"]):
            m = int(r["commit_lens"][b])
            print(f"  out_tokens[{b}] {' '.join(s.label(int(x)) for x in row[:m])} | stale (not output): {[int(x) for x in row[m:]]}")
    else:
        print(f"  accept_index      {np.asarray(r['accept_index']).tolist()}")
        print(f"  accept_token_num  {np.asarray(r['accept_token_num']).tolist()}  (accepted drafts)")
        print(f"  accept_lens       {[c.accept_len for c in run.commits]}  (= accept_token_num + 1)")
        print(f"  predicts          {np.asarray(r['predicts']).tolist()}  (rows never written keep {s.predicts_init})")
    for c in run.commits:
        pre = f"  request {c.request}: " if len(run.commits) > 1 else "  "
        print(f"{pre}outputs {_labels(s, c.output_tokens)} | committed rows {_labels(s, c.committed_tokens)} "
              f"(rows {c.accept_rows}, positions {c.committed_positions}) | next root {s.label(c.next_root)} | "
              f"new_seq_len {c.new_seq_len}")
    for w in run.warnings:
        print(f"  warning: {w}")
    return 0


def cmd_check(args) -> int:
    from specviz.replay.invariants import check_invariants

    from specviz.algorithms.backends import get_backend

    backends = [b.strip() for b in args.backends.split(",") if b.strip()] if args.backends else ["numpy"]
    for name in backends:
        get_backend(name)  # an unknown or unusable backend is bad input (exit 2), not a failed invariant
    s = load_scenario(args.file)
    results = check_invariants(s, backends=tuple(backends))
    bad = 0
    for name, ok, detail in results:
        print(f"{'ok  ' if ok else 'FAIL'} {name}{'' if ok else ': ' + detail}")
        bad += not ok
    print(f"{len(results) - bad} passed, {bad} failed")
    return 1 if bad else 0


def cmd_audit(args) -> int:
    from specviz.rooms.audit import audit_file

    report = audit_file(args.file, getattr(args, "scenario", None))
    print(report.summary())
    return 0 if report.ok else 1


def cmd_convert(args) -> int:
    """Show a scenario's trees in SGLang's forms (retrieve_* arrays, and the EAGLE rollout when expressible)."""
    from specviz.inputs.model import NotExpressible

    s = load_scenario(args.file)
    for b in range(len(s.requests)):
        t = s.tree(b)
        ri, nt, ns = t.retrieve_arrays(b)
        print(f"request {b}: retrieve_index {ri.tolist()} retrieve_next_token {nt.tolist()} retrieve_next_sibling {ns.tolist()}")
        try:
            e = t.to_eagle(args.topk)
            print(f"  EAGLE rollout: topk={e.topk} depth={e.depth} num_draft_tokens={e.num_draft_tokens} "
                  f"parent_list={list(e.parent_list)} selected_index={list(e.selected_index)} draft_tokens={_labels(s, e.draft_tokens)}")
        except NotExpressible as exc:
            print(f"  not expressible as an EAGLE rollout: {exc.detail}")
    return 0


def cmd_export(args) -> int:
    from specviz.rooms import export
    from specviz.replay.engine import run_scenario
    from specviz.replay.playframes import frames_for

    outs = [(flag, getattr(args, flag)) for flag in ("html", "json", "pytest", "svg", "png") if getattr(args, flag)]
    if not outs:
        raise SpecvizError("export", "name at least one file: --html, --json, --pytest, --svg or --png")
    s = load_scenario(args.file)
    for flag, path in outs:
        if flag == "html":
            body = export.animation_html(s, args.lang)
        elif flag == "json":
            body = export.scenario_json(s)
        elif flag == "pytest":
            body = export.pytest_file(s)
        else:
            dot = frames_for(s, run_scenario(s, "numpy"), args.lang)[-1].dot
            body = export.dot_to_svg(dot) if flag == "svg" else export.dot_to_png(dot)
        try:
            with open(path, "wb") as fh:
                fh.write(body if isinstance(body, bytes) else body.encode("utf-8"))
        except OSError as exc:
            raise SpecvizError(f"--{flag}", f"cannot write {path}: {exc.strerror or exc}") from None
        print(f"wrote {path}")
    return 0
