"""One app server (``specviz app``, each ``specviz serve`` worker): ``python -m specviz.app.ui.worker ARGV``
runs ``streamlit ARGV`` after ``warm_up`` (what the pages import, torch / Triton / the kernels, the default
scenarios' results), with the runtime patches (``specviz.app.runtime.PATCHES``: click_queue, failover, wakeups,
widget_guard, state_lookup, static_files, config_polling, page_base) installed before any session (static_files and
page_base must be: the server builds its static route when it starts).

A worker serves students who may arrive at any moment (or reconnect from a worker that died): by
then the "all backends agree" badge has what it needs, and no page waits for the import. It lives
in the ui layer because it starts the ui's backend loader (``specviz.app.serve`` only launches it).
"""
from __future__ import annotations

import sys
import time


def page_modules(pages_dir) -> list[str]:
    """Every module the page scripts import (read from their source, not run)."""
    import ast

    names = []
    for f in sorted(pages_dir.glob("*.py")):
        try:
            tree = ast.parse(f.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.append(node.module)
                names += [f"{node.module}.{a.name}" for a in node.names]  # a submodule imported by name
    return list(dict.fromkeys(names))


def warm_up(pages_dir=None, wait_s: float = 300.0) -> float:
    """Before the server answers its health check: import what the pages import, load the backends, and
    compute each slot's default scenario (its run on every backend, the "all backends agree"
    comparison, the greedy walk's frames; the other step players' figures) into the process-wide caches. A student's first visit then
    waits for none of it: on the 2-core machine the server's first run of a page went from 0.6 s
    (1.8 s with Streamlit's file watcher) to ~0.1 s (benchmarks/README.md, "First visit").
    Returns the seconds it took."""
    import importlib

    from specviz.app.ui import backend_cache as bc
    from specviz.app.ui.scenarios import ROOT, SCENARIO_DIR, SLOTS

    t0 = time.monotonic()
    bc.start_loading_backends()
    for name in page_modules(pages_dir or ROOT / "pages"):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001  a name, not a module (``from x import function``), or optional
            pass
    bc.backends_loaded(wait=wait_s)
    from specviz.replay.engine import scenario_key
    from specviz.inputs.scenario import load_scenario, scenario_from_json
    from specviz.render.svg import dots_to_svgs
    from specviz.replay import playframes
    from specviz.app.ui import player

    FRAMES = {"chain": playframes.chain_frames, "target_only": playframes.target_only_frames,
              "dspark": playframes.dspark_frames}

    names = tuple(bc.usable_backends())
    for slot, preset in SLOTS.items():
        try:
            key = scenario_key(load_scenario(SCENARIO_DIR / f"{preset}.json"))
            for b in names:
                bc._run(key, b)
            bc._compare(key, names)
            bc._compare(key, tuple(b for b in names if not bc.on_request(b)))  # the badge's default (bc.ALL_KEY)
            frames = []
            if slot == "tree":
                for lang in ("en", "zh"):
                    frames += bc._greedy_frames(key, "numpy", lang, 0)
            elif slot in FRAMES:
                run = bc._run(key, "numpy")
                run.scenario = scenario_from_json(key)
                for lang in ("en", "zh"):
                    frames += FRAMES[slot](run.scenario, run, lang)
            if frames and player.layout_mode() == "server":  # the step player's figures, laid out by dot and cached
                dots_to_svgs(list(dict.fromkeys(f.dot for f in frames)))
        except Exception:  # noqa: BLE001  a slot its pages compute differently: they will do it themselves
            pass
    # The tab icon: drawn once per process (PIL's import and the drawing), 0.21 s that the first visitor's
    # run paid (greedy page, 2 cores, load ~2.3).
    from specviz.app.ui.theme import favicon_url

    favicon_url()
    return time.monotonic() - t0


class _DropMessage:
    """A logging filter that drops records whose message starts with ``prefix``."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def filter(self, record) -> bool:
        return not record.getMessage().startswith(self.prefix)


def main(argv: list[str]) -> None:
    import logging

    # Streamlit warns "No runtime found" for each st.cache_data a module declares before the server runs:
    # true, and harmless here (the caches are looked up again when called), so not in a lecturer's log.
    quiet = logging.getLogger("streamlit.runtime.caching.cache_data_api")
    no_runtime = _DropMessage("No runtime found")
    quiet.addFilter(no_runtime)
    from specviz.app import runtime as app_runtime
    from specviz.app.ui import heapdump
    from specviz.app.ui.backend_cache import start_loading_backends

    heapdump.install()  # only with SPECVIZ_HEAPDUMP set (benchmarks/bench_links.py --heap)
    from specviz.app.ui.memory import start_trimmer

    start_trimmer()  # freed memory back to the system after sessions end (issue 35 item 3)
    start_loading_backends()
    # Before the first session connects (app.py installs them too, but only once a page has run here):
    # a tab that fails over to this worker straight after it (re)started keeps its first edit.
    app_runtime.install()
    if len(argv) >= 2 and argv[0] == "run":  # the app's pages, for the base URL a deep link's index.html names
        from specviz.app.runtime import page_base

        page_base.use_pages_of(argv[1])
    print(f"specviz: warmed up in {warm_up():.1f} s (imports, backends, the default scenarios)", file=sys.stderr, flush=True)
    quiet.removeFilter(no_runtime)
    # app.py routes every page (st.navigation): a deep link as the server's first request runs through it at
    # once, not first as an old-style pages/ script that then reruns (theme.route_through_app).
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
    from streamlit.web import cli

    sys.argv = ["streamlit", *argv]
    sys.exit(cli.main())


if __name__ == "__main__":
    main(sys.argv[1:])
