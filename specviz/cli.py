"""The command line: ``specviz app``, ``specviz serve`` and ``specviz run|check|audit|convert|export FILE``.

``specviz`` is the console command of an installed package (``pip install .``); ``python -m
specviz`` is the same command from a checkout.

Exit codes: 0 = done (and, for check/audit, everything holds); 1 = an invariant or an audited
value is wrong; 2 = bad input (one line on stderr naming the field and the fix, never a traceback).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from . import algorithms
from .errors import BackendUnavailable, SpecvizError
from .scenario import load_scenario


def _labels(s, tokens) -> str:
    return " ".join(s.label(int(t)) for t in tokens)


def _step_lines(run) -> list[str]:
    """One line per trace event a student should see: the same caption the pages and the export show."""
    from .captions import caption, plain
    from .events import typed_events

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
    from .engine import run_scenario

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
    from .invariants import check_invariants

    from .backends import get_backend

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
    from .audit import audit_file

    report = audit_file(args.file, getattr(args, "scenario", None))
    print(report.summary())
    return 0 if report.ok else 1


def cmd_convert(args) -> int:
    """Show a scenario's trees in SGLang's forms (retrieve_* arrays, and the EAGLE rollout when expressible)."""
    from .model import NotExpressible

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


# Flags `specviz app` passes to `streamlit run` unless the user gives them: the README's flags, and
# no usage statistics (a checkout's .streamlit/config.toml says the same, but Streamlit reads that
# file only from the working directory).
APP_DEFAULTS = {"--server.headless": "true", "--server.address": "127.0.0.1", "--browser.gatherUsageStats": "false",
                # The safety settings of .streamlit/config.toml, which Streamlit reads only from the working directory.
                "--server.maxUploadSize": "2", "--client.showErrorDetails": "type",
                # static/ beside app.py (Graphviz in WebAssembly for the step player) served at /app/static/.
                "--server.enableStaticServing": "true",
                # No full gc.collect(2) after every rerun (0.25-0.3 s of GIL per click with torch loaded).
                "--runner.postScriptGC": "false",
                # A rerun waits for the running script's next yield point instead of stopping it at once
                # (in a callback, too, which lost the edit it was applying: .streamlit/config.toml).
                "--runner.fastReruns": "false",
                # Every element sent whole, never as a reference to the browser's cache (whose two views
                # drifted apart under bursts of clicks: "Cached ForwardMsg MISS"; .streamlit/config.toml).
                "--global.minCachedMessageSize": "1e18",
                # No source-file watcher (it walks the app's folder and follows every module: .streamlit/config.toml).
                "--server.fileWatcherType": "none"}


def app_command(extra: list[str]) -> list[str]:
    """The command line that ``specviz app`` executes: ``streamlit run`` through ``specviz.ui.worker``
    (``extra``: Streamlit flags)."""
    from .paths import app_script

    script = app_script()
    if not script.is_file():
        raise SpecvizError("app", f"{script} is missing: reinstall specviz (pip install .) or run from a checkout")
    extra = [a for a in extra if a != "--"]
    given = {a.split("=", 1)[0] for a in extra if a.startswith("--")}
    # Streamlit through specviz.ui.worker: it warms the process up (imports, backends, the default scenarios)
    # before the server answers, so no student's first visit waits for that.
    cmd = [sys.executable, "-m", "specviz.ui.worker", "run", str(script)]
    for flag, value in APP_DEFAULTS.items():
        if flag not in given:
            cmd += [flag, value]
    return cmd + extra


def cmd_app(args, extra) -> int:
    cmd = app_command(extra)
    print(f"specviz app: {' '.join(cmd[3:])}", file=sys.stderr)
    sys.stderr.flush()
    sys.stdout.flush()
    if os.name == "posix":
        from .limits import MALLOC_ENV  # (read by glibc at start: it must be in the new process's environment)

        env = {**MALLOC_ENV, **os.environ}  # the user's own setting wins
        os.execve(sys.executable, cmd, env)  # Streamlit takes this process: Ctrl-C and container signals reach it directly
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 130


def cmd_serve(args, extra) -> int:
    from .serve import serve

    return serve(args.workers, args.address, args.port, haproxy=args.haproxy, extra=extra, command=app_command)


def cmd_doctor(args) -> int:
    """Which Streamlit runtime patches (specviz/app_runtime) are active on the installed Streamlit; exit 1 if one is not."""
    from . import app_runtime

    version = app_runtime.streamlit_version()
    checked = ", ".join(app_runtime.CHECKED_ON)
    print(f"streamlit {version} (the runtime patches were checked on {checked})")
    rows = app_runtime.status()
    for r in rows:
        state = "active" if r["installed"] else "NOT ACTIVE (shape check failed: Streamlit's own behaviour applies)"
        print(f"  {r['name']:<12} {state}\n               {r['summary']}\n               upstream: {r['upstream']}")
    off = [r["name"] for r in rows if not r["installed"]]
    if off:
        print(f"{len(off)} of {len(rows)} patches are not active on streamlit {version}: install a checked version "
              f"(pip install -c constraints.txt streamlit)")
    return 1 if off else 0


_HELP_BACKENDS = ("Backends: numpy (the reference), torch, triton. Without a CUDA GPU the Triton backend "
                  "needs TRITON_INTERPRET=1 in the environment (the kernels then run under the Triton "
                  "interpreter on the CPU), e.g.  TRITON_INTERPRET=1 specviz run FILE --backend triton")

_EPILOG_APP = """Starts `streamlit run app.py --server.headless true --server.address 127.0.0.1
--browser.gatherUsageStats false` from the installed package, from any directory. Open
http://localhost:8501 (Streamlit's default port). Any further flag goes to Streamlit, e.g.
  specviz app --server.port 8502
  specviz app --server.address 0.0.0.0      (listen on every interface: a server or a container)
"""

_EPILOG_SERVE = """Starts N `specviz app` workers on loopback ports and HAProxy (Debian: apt-get install haproxy)
on --address:--port in front of them: a cookie keeps each browser on its worker, websockets stay
open, health checks on /_stcore/health send nobody to a worker that is down, and a student whose
worker died reconnects to another one with the scenario from the page's share link. The HAProxy
config and the workers' logs are in a temporary folder printed at start. Ctrl-C stops everything.
  specviz serve --workers 2 --port 8501                       (this machine only)
  specviz serve --workers 2 --port 8501 --address 0.0.0.0     (a class on the network)
Any further flag goes to every worker's Streamlit.
"""

_EPILOG_RUN = _HELP_BACKENDS + """

Scenario files: the JSON format is described in docs/scenario_format.md. FILE may also name a
preset shipped with specviz, from any directory: specviz run running_example
Presets: {presets}
"""

_EPILOG_CHECK = """Recomputes the scenario with the numpy reference and checks every invariant of the semantics
(docs/SEMANTICS.md): accept_index holds the root and a parent-child path, accept_lens = k + 1,
the committed rows and outputs (the one-position shift), new_seq_lens, and, with --backends,
that every other backend returns the same integers.
Exit codes: 0 all hold, 1 an invariant fails, 2 bad input (including an unknown or unusable backend).

""" + _HELP_BACKENDS + "\n"

_EPILOG_AUDIT = """FILE is a JSON object (full description: docs/audit_format.md; example:
scenarios/examples/audit_example.json):

  {
    "comment": "optional free text",
    "scenario_file": "running_example.json",   (a path inside FILE's folder; or pass --scenario)
    "claimed": {"accept_index": [[0, 1, 3]], "outputs": [["A", "C", "X"]]}
  }

Give the inputs either as "scenario_file" or inline as "scenario": {...} (a scenario object as in
docs/scenario_format.md), not both. "claimed" maps output fields to the values your
implementation produced; any subset of:
  accept_index [bs, W]   accept_token_num [bs]   accept_lens [bs]   predicts [bs*n]
  accept_tokens [bs, W]  outputs (per request)   bonus [bs]          new_seq_lens [bs]
  committed_rows / committed_tokens (per request)
  DSpark: correct_len [bs]  commit_lens [bs]  out_tokens [bs, T]
Aliases: num_correct_drafts, accept_length, verified_id. Tokens may be ids or vocabulary labels
("A"); a value may also be pasted text such as "tensor([[0, 1, 3]], dtype=torch.int32)" (parsed,
never evaluated). With one request, the batch dimension may be left out.
Exit codes: 0 everything matches, 1 a value is wrong (the first one is named with its rule),
2 bad input.
"""

_EPILOG_CONVERT = """Prints, per request, retrieve_index / retrieve_next_token / retrieve_next_sibling and, when the
tree can be drawn by an EAGLE rollout, topk, depth, parent_list and selected_index
(docs/SEMANTICS.md sections 2 and 3).
"""


_EPILOG_EXPORT = """Writes the files the app's export box offers, for slides without opening the app:
  specviz export running_example --html walk.html            the step player, one offline HTML file
  specviz export my.json --html walk_zh.html --lang zh       the same in Chinese
  specviz export running_example --json s.json --pytest test_s.py --svg tree.svg --png tree.png
--svg / --png draw the end state's figure and need Graphviz's dot (apt-get install -y graphviz).
"""


def cmd_export(args) -> int:
    from . import export
    from .engine import run_scenario
    from .playframes import frames_for

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


def _scenario_arg(value: str) -> str:
    """FILE as given; a bare preset name (``running_example`` or ``running_example.json``) that is no
    file here names the preset shipped with specviz, so ``specviz run running_example`` works anywhere."""
    if os.path.exists(value) or "/" in value or os.sep in value:
        return value
    from .paths import scenario_dir

    preset = scenario_dir() / (value if value.endswith(".json") else value + ".json")
    return str(preset) if preset.is_file() else value


def _preset_names() -> str:
    from .paths import scenario_dir

    return ", ".join(sorted(p.stem for p in scenario_dir().glob("*.json"))) or "(none found)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="specviz", description="The Accept stage of speculative decoding, SGLang 0.5.23 semantics.",
        epilog="Documentation: docs/README.md in the repository. `python -m specviz ...` is the same command.")
    sub = parser.add_subparsers(dest="command", required=True)
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("app", help="start the Streamlit app (http://localhost:8501); further flags go to Streamlit",
                       epilog=_EPILOG_APP, formatter_class=fmt)
    p.set_defaults(fn=None)
    p = sub.add_parser("serve", help="serve the app from N worker processes behind HAProxy (one address, every core)",
                       epilog=_EPILOG_SERVE, formatter_class=fmt)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="Streamlit worker processes (default: one per CPU core)")
    p.add_argument("--port", type=int, default=8501, help="the port students open (default 8501)")
    p.add_argument("--address", default="127.0.0.1",
                   help="the address HAProxy listens on (default 127.0.0.1; 0.0.0.0 for a class on the network)")
    p.add_argument("--haproxy", default=None, help="the haproxy executable (default: haproxy on PATH, /usr/sbin/haproxy)")
    p.set_defaults(fn=None)
    p = sub.add_parser("run", help="run a scenario and print the steps and the result",
                       epilog=_EPILOG_RUN.format(presets=_preset_names()), formatter_class=fmt)
    p.add_argument("file", type=_scenario_arg, help="a scenario JSON file (docs/scenario_format.md) or a preset name")
    p.add_argument("--backend", default="numpy", choices=("numpy", "torch", "triton"),
                   help="numpy (default), torch, or triton (needs a CUDA GPU or TRITON_INTERPRET=1)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("check", help="recompute a scenario and verify every invariant of docs/SEMANTICS.md",
                       epilog=_EPILOG_CHECK, formatter_class=fmt)
    p.add_argument("file", type=_scenario_arg, help="a scenario JSON file (docs/scenario_format.md) or a preset name")
    p.add_argument("--backends", default="",
                   help="comma-separated backends to compare with the reference, e.g. numpy,torch,triton "
                        "(triton needs a CUDA GPU or TRITON_INTERPRET=1)")
    p.set_defaults(fn=cmd_check)
    p = sub.add_parser("audit", help="check someone else's outputs against the reference; names the first wrong value",
                       description="Check the Accept-stage outputs of another implementation (your kernel, a real "
                                   "SGLang run) against the numpy reference.",
                       epilog=_EPILOG_AUDIT, formatter_class=fmt)
    p.add_argument("file", help="an audit JSON file: {\"scenario_file\" | \"scenario\", \"claimed\"} (see below)")
    p.add_argument("--scenario", default=None, metavar="SCENARIO.json",
                   help="the scenario file to audit against (read wherever it is; replaces the file's scenario_file)")
    p.set_defaults(fn=cmd_audit)
    p = sub.add_parser("convert", help="show the SGLang forms of a scenario's trees", epilog=_EPILOG_CONVERT, formatter_class=fmt)
    p.add_argument("file", type=_scenario_arg, help="a scenario JSON file (docs/scenario_format.md) or a preset name")
    p.add_argument("--topk", type=int, default=None)
    p.set_defaults(fn=cmd_convert)
    p = sub.add_parser("export", help="write the step player as one offline HTML file, the scenario JSON, a pytest file, the figure",
                       epilog=_EPILOG_EXPORT, formatter_class=fmt)
    p.add_argument("file", type=_scenario_arg, help="a scenario JSON file (docs/scenario_format.md) or a preset name")
    p.add_argument("--html", metavar="OUT.html", help="the step player, self-contained, plays offline")
    p.add_argument("--json", metavar="OUT.json", help="the scenario file")
    p.add_argument("--pytest", metavar="OUT.py", help="a ready-to-run pytest file checking the reference's outputs")
    p.add_argument("--svg", metavar="OUT.svg", help="the end state's figure as SVG (needs dot)")
    p.add_argument("--png", metavar="OUT.png", help="the end state's figure as PNG (needs dot)")
    p.add_argument("--lang", default="en", choices=("en", "zh"), help="the player's language (default en)")
    p.set_defaults(fn=cmd_export)
    p = sub.add_parser("doctor", help="say which Streamlit runtime patches (specviz/app_runtime) are active here")
    p.set_defaults(fn=cmd_doctor)
    args, extra = parser.parse_known_args(argv)
    try:
        if args.command == "app":
            return cmd_app(args, extra)
        if args.command == "serve":
            return cmd_serve(args, extra)
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return args.fn(args)
    except SpecvizError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BackendUnavailable as exc:
        print(f"error: backend: {exc}", file=sys.stderr)
        return 2
