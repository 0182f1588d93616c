"""Fixtures for the app tests: a live ``streamlit run app.py`` server and Debian's chromium.

``app_server``  (session) starts ``streamlit run app.py --server.headless true --server.address
                127.0.0.1 --server.port <free port>`` once, waits for ``/_stcore/health`` and yields
                the base URL ("http://127.0.0.1:PORT"); the server is stopped at the end.
``open_page``   (function) ``open_page(page, url_path)`` navigates and waits until the app has
                finished running (stApp present, status widget gone).
``screenshot_dir``  artifacts/screenshots/ (created; ignored by git).

Parallel runs (pytest-xdist, ``-n 2`` in the README's test command): each worker is its own
pytest session, so it starts one Streamlit server (``app_server``) and one browser (pytest-
playwright's session ``browser``) and shares them among its tests. Ports are free ports of
127.0.0.1 chosen per server (with a retry should another worker take one first), temporary files
come from ``tmp_path`` (per worker), and each worker keeps its own hypothesis example database
(``.hypothesis/examples-<worker>``) so that two processes never write one directory.

pytest-playwright's ``browser_type_launch_args`` is overridden to launch /usr/bin/chromium (never
``playwright install``); the viewport is projector-sized and tall, because Streamlit's main area
scrolls on its own and ``full_page=True`` does not extend a screenshot.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # "gw0", "gw1", ... under pytest-xdist, else None

if XDIST_WORKER:
    from hypothesis import settings as _hyp_settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    _hyp_settings.register_profile(
        "xdist-worker", database=DirectoryBasedExampleDatabase(str(ROOT / ".hypothesis" / f"examples-{XDIST_WORKER}")))
    _hyp_settings.load_profile("xdist-worker")
CHROMIUM = os.environ.get("SPECVIZ_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1600, "height": 2400}


# The suite's longest tests (stop 41's fresh-clone durations: the sm_90 compile, 93 compiles then, ~70 CPU-s in one
# process, 117-230 s of wall under load; 60 compiles since 9e08166), collected first. Under ``--dist worksteal`` an idle worker takes tests still queued on the
# other, never a running one: the compile sat at item 715 of 1537 and started at 471 s of a 588 s run, the last
# test of its worker, the other one idle for its last 25 s. Started first, the short tests behind these fill both
# workers until the end.
LONG_FIRST = (
    "tests/test_kernels_compile.py::test_kernels_compile_for_sm90",
    "tests/test_serve.py::test_serve_two_workers_behind_haproxy",
    "tests/test_engines_words.py::test_every_listed_difference_is_real_and_its_reason_matches_the_engines_runs",
    "tests/test_engines.py::test_each_engine_passes_chi_square",
    "tests/test_packaging.py::test_specviz_app_serves_from_the_installed_package",
)


@pytest.hookimpl(trylast=True)  # after pytest's own reordering (tests grouped by session-scoped parameters)
def pytest_collection_modifyitems(config, items):
    rank = {name: k for k, name in enumerate(LONG_FIRST)}
    first = sorted((it for it in items if it.nodeid.split("[")[0] in rank), key=lambda it: rank[it.nodeid.split("[")[0]])
    if first:
        chosen = set(map(id, first))
        items[:] = first + [it for it in items if id(it) not in chosen]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_health(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode} before it was healthy")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"streamlit at {url} was not healthy within {timeout:.0f} s")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def start_app_server(log: Path, attempts: int = 3, script: str = "app.py", extra_env: dict | None = None,
                     worker: bool = False):
    """A headless ``streamlit run app.py`` (or ``script``, with ``extra_env`` added) on a free port of 127.0.0.1;
    yields its base URL. ``worker``: through ``specviz.app.ui.worker`` (warm-up and every runtime patch installed
    before the server starts), as ``specviz app`` runs it.

    A free port is free only until someone binds it: under pytest-xdist another worker may take it
    between ``_free_port`` and Streamlit's bind. A server that exits before it is healthy is tried
    again on a new port (``attempts`` times in all)."""
    env = dict(os.environ, TRITON_INTERPRET=os.environ.get("TRITON_INTERPRET", "1"),
               STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", **(extra_env or {}))
    for attempt in range(1, attempts + 1):
        port = _free_port()
        cmd = [sys.executable, "-m", "specviz.app.ui.worker" if worker else "streamlit", "run", script,
               "--server.headless", "true",
               "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
               "--server.fileWatcherType", "none"]
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_health(url, proc)
        except RuntimeError as exc:
            _stop(proc)
            if proc.returncode is not None and attempt < attempts and "exited" in str(exc):
                continue  # most likely the port was taken meanwhile: try another
            raise RuntimeError(f"{exc}\n--- server log ---\n{log.read_text()}") from None
        break
    try:
        yield url
    finally:
        _stop(proc)


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """Base URL of a headless ``streamlit run app.py`` on a free port of 127.0.0.1."""
    with start_app_server(tmp_path_factory.mktemp("streamlit") / "server.log") as url:
        yield url


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's chromium, headless, with nothing that reaches the network."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM}: apt-get install -y chromium")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": VIEWPORT, "device_scale_factor": 1}


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    d = ROOT / "artifacts" / "screenshots"
    d.mkdir(parents=True, exist_ok=True)
    return d


_SCRIPT_STATE = "document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state')"

# Added to every page of pytest-playwright's ``context`` and of the session ``browser`` (below): counts what the
# page sends over its websockets (a rerun request is one message) and every change of the app's script-run
# state (a run starting or ending), and notes when the last of either happened (``__svLastActivity``), so that
# ``wait_for_app`` can tell "a run was asked for or has happened since the page last settled" from "nothing is
# coming" instead of waiting a fixed time to see whether a run starts.
RUN_WATCH_JS = """
(() => {
  if (window.__svSends !== undefined) return;
  window.__svSends = 0; window.__svChanges = 0; window.__svSettledSends = 0; window.__svSettledChanges = 0;
  window.__svLastActivity = performance.now();
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    window.__svSends += 1; window.__svLastActivity = performance.now(); return send.call(this, data);
  };
  const watch = () => new MutationObserver(records => {
    window.__svChanges += records.length; window.__svLastActivity = performance.now();
  })
    .observe(document.documentElement, {subtree: true, attributes: true, attributeFilter: ["data-test-script-state"]});
  if (document.documentElement) watch(); else document.addEventListener("DOMContentLoaded", watch);
})();
"""
# How long ``wait_for_app`` waits, when the page has sent nothing since it last settled, for a send that an
# input may still make (Streamlit sends a widget's change on commit: a click, Enter, a slider's key).
QUIET_MS = 400


def wait_for_app(page, timeout: float = 60_000, start_timeout: float = 1_500) -> None:
    """Wait until the app has rendered and finished its script run.

    A run caused by the last action (a click) may start a moment after it. Pages of pytest-playwright's
    ``context`` and of the session's ``browser`` carry ``RUN_WATCH_JS`` and so know whether one can come:
    the wait for it ends as soon as a run has started or happened since the page last settled here, or,
    when the page has run once and sent nothing since it settled, after ``QUIET_MS``; at most it lasts
    ``start_timeout`` ms (something was sent that starts no run). A page without it waits up to
    ``start_timeout`` ms for the app to leave the idle state. Then: idle again (``data-test-script-state``
    = notRunning, no "Running..." status widget), no skeleton left, and 250 ms for the last drawing.
    """
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    started = (f"{_SCRIPT_STATE} !== 'notRunning' || window.__svChanges > window.__svSettledChanges"
               f" || (window.__svChanges > 0 && window.__svSends === window.__svSettledSends"
               f" && performance.now() - t0 >= {QUIET_MS})")
    try:
        if page.evaluate("() => window.__svSends !== undefined"):
            page.wait_for_function(f"t0 => {started}", arg=page.evaluate("() => performance.now()"),
                                   timeout=start_timeout)
        else:
            page.wait_for_function(f"() => {_SCRIPT_STATE} !== 'notRunning'", timeout=start_timeout)
    except Exception:  # noqa: BLE001  no run started: the page is already settled
        pass
    # Idle; what the page had sent and seen by then is what the next call compares with (a message sent
    # after this, even while the lines below wait, is waited for by the next call).
    page.wait_for_function(
        f"() => {{ const idle = {_SCRIPT_STATE} === 'notRunning'"
        " && !document.querySelector('[data-testid=\"stStatusWidget\"]');"
        " if (idle && window.__svSends !== undefined) {"
        " window.__svSettledSends = window.__svSends; window.__svSettledChanges = window.__svChanges; }"
        " return idle; }", timeout=timeout)
    page.wait_for_selector('[data-testid="stMainBlockContainer"], [data-testid="block-container"]', timeout=timeout)
    # Lazily loaded elements (tables, toggles, charts) show a skeleton until their code arrives.
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stSkeleton\"], [data-testid=\"stSkeletonElement\"], "
        "[data-testid=\"stAppSkeleton\"]')", timeout=timeout)
    page.wait_for_timeout(250)


@pytest.fixture(scope="session")
def _worker_context(browser, browser_context_args):
    """One browser context per worker for every test's ``page``: a new context is a new, empty HTTP cache, so
    each test's first page load fetched Streamlit's whole frontend again (chromium's CPU is most
    of a browser test's; one context: 14-20% fewer CPU-s on four browser files, stop 41). Its pages get
    ``RUN_WATCH_JS`` from the session ``browser`` (below)."""
    ctx = browser.new_context(**browser_context_args)
    yield ctx
    ctx.close()


@pytest.fixture
def context(_worker_context):
    """The worker's context (``_worker_context``); what a test leaves in it that a later test could see (cookies,
    Streamlit's localStorage: sidebar width, nav state, theme) is cleared after the test, the HTTP cache kept."""
    yield _worker_context
    clear_context(_worker_context)


def clear_context(ctx) -> None:
    """Close the context's pages, clearing each one's localStorage / sessionStorage first, and its cookies."""
    for pg in list(ctx.pages):
        with contextlib.suppress(Exception):
            if pg.url.startswith("http"):
                pg.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
        pg.close()
    ctx.clear_cookies()


@pytest.fixture
def page(context):
    """A new page (tab) of the worker's context: a new Streamlit session, as a new context gave."""
    return context.new_page()


@pytest.fixture(scope="session")
def browser(browser):
    """pytest-playwright's browser; the contexts and pages a test makes itself (its own window size or server)
    get ``RUN_WATCH_JS`` too."""
    new_context, new_page = browser.new_context, browser.new_page

    def watched(make):
        def new(*args, **kwargs):
            made = make(*args, **kwargs)
            made.add_init_script(RUN_WATCH_JS)
            return made
        return new

    browser.new_context, browser.new_page = watched(new_context), watched(new_page)
    return browser


@pytest.fixture
def open_page(app_server):
    """``open_page(page, url_path="")`` loads app_server/url_path in the Playwright page and waits."""
    def go(page, url_path: str = ""):
        page.goto(f"{app_server}/{url_path}", wait_until="domcontentloaded")
        wait_for_app(page)
        return page
    return go


try:  # pytest-playwright provides ``browser`` and ``page``; without it, tests that need them skip, saying why
    import playwright  # noqa: F401
except ImportError:
    _NO_PLAYWRIGHT = "needs playwright and pytest-playwright (pip install -c constraints.txt -r requirements-dev.txt)"

    @pytest.fixture(scope="session")
    def browser():
        pytest.skip(_NO_PLAYWRIGHT)

    @pytest.fixture
    def page():
        pytest.skip(_NO_PLAYWRIGHT)


def open_sidebar_boxes(at, export_key: str | None = None):
    """Open the sidebar's boxes (share, export, scenario load / save) for the next run, as a user's click
    does: their content is drawn only while they are open (``specviz.app.ui.state.lazy_expander``).
    ``export_key``: the page's export key (``f"{page}_export"`` unless the page names another)."""
    from specviz.app.ui.scenarios import SLOTS

    at.session_state["w_share_open"] = True
    if export_key:
        at.session_state[f"w_{export_key}_open"] = True
    for slot in list(SLOTS) + ["audit", "quiz", "pitfalls", "engines"]:
        at.session_state[f"w_io_open::{slot}"] = True
    return at


# -- with and without Graphviz's dot --------------------------------------------------------------------

GRAPHVIZ_COMMANDS = {"dot", "neato", "twopi", "circo", "fdp", "sfdp", "patchwork", "osage"}


def path_without_dot(folder: Path) -> str:
    """A PATH of one folder that links every command of the current PATH except Graphviz's (a machine
    without the Debian graphviz package, such as the GPU test machine)."""
    folder.mkdir()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            target = os.path.join(d, name)
            if name in GRAPHVIZ_COMMANDS or name.startswith("dot_") or (folder / name).exists():
                continue
            if os.path.isfile(target) and os.access(target, os.X_OK):
                (folder / name).symlink_to(target)
    path = str(folder)
    assert shutil.which("dot", path=path) is None
    return path


@pytest.fixture(scope="session")
def no_dot_path(tmp_path_factory) -> str:
    """``path_without_dot``, made once a session (about a thousand links, a few ms)."""
    return path_without_dot(tmp_path_factory.mktemp("nodot") / "bin")


@pytest.fixture(params=["dot", "no dot"])
def dot_or_not(request, monkeypatch) -> str:
    """Runs a test twice: with this machine's PATH (skipped where ``dot`` is not installed: the other run is
    that machine) and with ``no_dot_path``, where figures are laid out by the browser's Graphviz in
    WebAssembly. ``SPECVIZ_LAYOUT`` is cleared, so the layout follows ``dot`` as it does for a user."""
    monkeypatch.delenv("SPECVIZ_LAYOUT", raising=False)
    if request.param == "no dot":
        monkeypatch.setenv("PATH", request.getfixturevalue("no_dot_path"))
    elif shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed here; the 'no dot' run covers this machine")
    return request.param
