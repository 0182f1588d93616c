"""The command line: ``specviz app``, ``specviz serve`` and ``specviz run|check|audit|convert|export FILE``.

``specviz`` is the console command of an installed package (``pip install .``); ``python -m
specviz`` is the same command from a checkout. The FILE subcommands are in ``specviz.app.cli_files``; the
app, serve and doctor commands and the parser are here.

Exit codes: 0 = done (and, for check/audit, everything holds); 1 = an invariant or an audited
value is wrong; 2 = bad input (one line on stderr naming the field and the fix, never a traceback).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

from specviz.app.cli_files import cmd_audit, cmd_check, cmd_convert, cmd_export, cmd_run
from specviz.base.errors import BackendUnavailable, SpecvizError


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
                # No magic: no page uses it, and it was most of compiling a page for a visit (.streamlit/config.toml).
                "--runner.magicEnabled": "false",
                # Every element sent whole, never as a reference to the browser's cache (whose two views
                # drifted apart under bursts of clicks: "Cached ForwardMsg MISS"; .streamlit/config.toml).
                "--global.minCachedMessageSize": "1e18",
                # No source-file watcher (it walks the app's folder and follows every module: .streamlit/config.toml).
                "--server.fileWatcherType": "none"}


def app_command(extra: list[str]) -> list[str]:
    """The command line that ``specviz app`` executes: ``streamlit run`` through ``specviz.app.ui.worker``
    (``extra``: Streamlit flags)."""
    from specviz.base.paths import app_script

    script = app_script()
    if not script.is_file():
        raise SpecvizError("app", f"{script} is missing: reinstall specviz (pip install .) or run from a checkout")
    extra = [a for a in extra if a != "--"]
    given = {a.split("=", 1)[0] for a in extra if a.startswith("--")}
    # Streamlit through specviz.app.ui.worker: it warms the process up (imports, backends, the default scenarios)
    # before the server answers, so no student's first visit waits for that.
    cmd = [sys.executable, "-m", "specviz.app.ui.worker", "run", str(script)]
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
        from specviz.base.limits import MALLOC_ENV  # (read by glibc at start: it must be in the new process's environment)

        env = {**MALLOC_ENV, **os.environ}  # the user's own setting wins
        os.execve(sys.executable, cmd, env)  # Streamlit takes this process: Ctrl-C and container signals reach it directly
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 130


def cmd_serve(args, extra) -> int:
    from specviz.app.serve import serve

    return serve(args.workers, args.address, args.port, haproxy=args.haproxy, extra=extra, command=app_command)


def cmd_doctor(args) -> int:
    """Which Streamlit runtime patches (specviz/app/runtime) are active on the installed Streamlit; exit 1 if one is not."""
    from specviz.app import runtime as app_runtime

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


def _scenario_arg(value: str) -> str:
    """FILE as given; a bare preset name (``running_example`` or ``running_example.json``) that is no
    file here names the preset shipped with specviz, so ``specviz run running_example`` works anywhere."""
    if os.path.exists(value) or "/" in value or os.sep in value:
        return value
    from specviz.base.paths import scenario_dir

    preset = scenario_dir() / (value if value.endswith(".json") else value + ".json")
    return str(preset) if preset.is_file() else value


def _preset_names() -> str:
    from specviz.base.paths import scenario_dir

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
    p = sub.add_parser("doctor", help="say which Streamlit runtime patches (specviz/app/runtime) are active here")
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
