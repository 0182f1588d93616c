"""The package installs and works away from the checkout; the CLI's help and docs point inside the repo.

* The wheel (built offline, without build isolation, from a copy of the sources) carries
  ``app.py``, ``pages/`` and ``scenarios/`` under ``specviz/_app/``, the ``kernels`` package, the
  ``specviz`` console command and the requirement ranges of requirements.txt.
* Unpacked into a folder away from the repository, ``specviz.base.paths`` finds the app there, ``python
  -m specviz run`` works, and ``python -m specviz app`` serves ``/_stcore/health``.
* ``specviz check --backends ...,triton`` without ``TRITON_INTERPRET=1`` (and without a GPU) is bad
  input: exit 2 and a line saying what to set. ``audit --help`` documents the input format.
* Every relative link in README.md and docs/*.md resolves inside the repository (files and
  heading anchors); nothing points at ``../shared``.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from specviz.app.cli import APP_DEFAULTS, app_command
from tests.support.cli import cli

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "requirements.txt", "app.py",
           "specviz", "kernels", "pages", "scenarios", "static"]


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRITON_INTERPRET")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    pytest.importorskip("setuptools", minversion="68")
    pytest.importorskip("wheel")
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(p, src / name)
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-w", str(out), str(src)], capture_output=True, text=True, timeout=300, cwd=src)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (whl,) = out.glob("specviz-*.whl")
    return whl


@pytest.fixture(scope="module")
def site(wheel, tmp_path_factory) -> Path:
    """The wheel unpacked into a folder that is not the checkout (what pip puts in site-packages)."""
    d = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(d)
    return d


def test_wheel_carries_the_app_the_presets_and_the_console_command(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = next(z.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
        entry = next(z.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    want = {"specviz/_app/app.py", "specviz/base/paths.py", "specviz/app/cli.py", "kernels/triton_backend.py",
            "specviz/_app/scenarios/examples/audit_example.json",
            # the step player's page and the Graphviz it loads in the browser when the server has no dot
            "specviz/_app/static/player.js", "specviz/_app/static/player.css", "specviz/_app/static/player_streamlit.js",
            "specviz/_app/static/prob_tables.js",  # the chain and target-only pages' editable p/q tables
            "specviz/_app/static/graphviz.umd.js", "specviz/_app/static/graphviz.umd.js.LICENSE.txt"}
    want |= {f"specviz/_app/pages/{p.name}" for p in (ROOT / "pages").glob("*.py")}
    want |= {f"specviz/_app/scenarios/{p.name}" for p in (ROOT / "scenarios").glob("*.json")}
    want |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "specviz").rglob("*.py")}  # subpackages too (specviz.rooms.audit)
    assert want <= names, sorted(want - names)
    assert not [n for n in names if n.startswith(("tests/", "specviz/_app/tests"))]
    assert re.search(r"^specviz = specviz\.app\.cli:main$", entry, re.M)
    requires = re.findall(r"^Requires-Dist: (.+)$", meta, re.M)
    assert "torch>=2.6" in requires
    assert any(r.startswith("triton") and "<3.9" in r and 'sys_platform == "linux"' in r for r in requires)
    assert not any("==" in r.split(";")[0] for r in requires), "users get ranges; exact versions live in constraints.txt"


def test_installed_package_runs_away_from_the_checkout(site, tmp_path):
    env = _clean_env(PYTHONPATH=str(site))
    probe = subprocess.run([sys.executable, "-c", "import specviz, specviz.base.paths as p; print(specviz.__file__); "
                            "print(p.app_root()); print(len(list(p.scenario_dir().glob('*.json'))))"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    pkg_file, root, presets = probe.stdout.split()
    assert Path(pkg_file).is_relative_to(site) and Path(root) == site / "specviz" / "_app"
    assert int(presets) == len(list((ROOT / "scenarios").glob("*.json")))
    run = subprocess.run([sys.executable, "-m", "specviz", "run", "running_example"],  # a preset by name, from anywhere
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "accept_index      [[0, 1, 3]]" in run.stdout


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_specviz_app_serves_from_the_installed_package(site, tmp_path):
    port = _free_port()
    log = tmp_path / "app.log"
    env = _clean_env(PYTHONPATH=str(site), TRITON_INTERPRET="1")
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "specviz", "app", "--server.port", str(port),
                                 "--server.fileWatcherType", "none"], cwd=tmp_path, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        deadline, ok = time.monotonic() + 90, False
        while time.monotonic() < deadline and proc.poll() is None and not ok:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as resp:
                    ok = resp.status == 200
            except OSError:
                time.sleep(0.3)
        assert ok, log.read_text()[-3000:]
        text = log.read_text()
        assert str(site / "specviz" / "_app" / "app.py") in text  # the command line it printed
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_app_command_uses_the_readme_flags_unless_overridden():
    cmd = app_command([])
    assert cmd[1:4] == ["-m", "specviz.app.ui.worker", "run"] and cmd[4].endswith("app.py")  # streamlit run, warmed up
    for flag, value in APP_DEFAULTS.items():
        assert cmd[cmd.index(flag) + 1] == value
    mine = app_command(["--server.address", "0.0.0.0", "--server.port=8502"])
    assert mine.count("--server.address") == 1 and mine[-3:] == ["--server.address", "0.0.0.0", "--server.port=8502"]


def test_checkout_config_and_app_flags_agree_on_the_safety_and_speed_settings():
    """.streamlit/config.toml (read by `streamlit run app.py` from a checkout) says what `specviz app`
    passes as flags; among them no element is sent as a reference to the browser's message cache
    (its two views drifted apart under bursts of slider steps: "Cached ForwardMsg MISS", 3 bursts of
    10 before, 0 of 10 after: benchmarks/README.md)."""
    import tomllib

    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    for flag, value in APP_DEFAULTS.items():
        section, option = flag[2:].split(".")
        if flag in ("--server.address",):  # a checkout's config leaves the address to Streamlit
            continue
        assert str(cfg[section][option]).lower() == str(value).lower() or float(cfg[section][option]) == float(value), flag
    assert float(APP_DEFAULTS["--global.minCachedMessageSize"]) >= 1e15


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "specviz", *args], cwd=ROOT, env=env or _clean_env(),
                          capture_output=True, text=True, timeout=120)


def test_check_with_triton_but_no_interpreter_is_bad_input():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present: Triton runs without the interpreter here")
    proc = _cli("check", "scenarios/running_example.json", "--backends", "numpy,triton")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "triton" in line and "TRITON_INTERPRET=1" in line
    assert _cli("check", "scenarios/running_example.json", "--backends", "numpy,cuda").returncode == 2


def test_help_documents_audit_input_app_port_and_triton():
    audit = cli("audit", "--help").stdout  # (in this process: tests.support.cli)
    for text in ('"scenario_file"', '"claimed"', '"scenario"', "accept_index", "docs/audit_format.md",
                 "scenarios/examples/audit_example.json"):
        assert text in audit
    assert "http://localhost:8501" in cli("app", "--help").stdout
    check = cli("check", "--help").stdout
    assert "docs/SEMANTICS.md" in check and "TRITON_INTERPRET=1" in check and "shared" not in check


def test_the_shipped_audit_example_names_the_first_wrong_value(monkeypatch):
    monkeypatch.chdir(ROOT)
    proc = cli("audit", "scenarios/examples/audit_example.json")
    assert proc.returncode == 1
    assert "First error: accept_index[0][2]: got 2, expected 3." in proc.stdout


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def test_doc_links_resolve_inside_the_repository():
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert (ROOT / "docs" / "README.md") in docs
    bad = []
    for doc in docs:
        text = doc.read_text()
        if "../shared" in text or "/work/" in text:
            bad.append(f"{doc.name}: points outside the repository")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
                continue
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            if not dest.is_relative_to(ROOT) or not dest.exists():
                bad.append(f"{doc.name}: {target} does not exist")
                continue
            if anchor and dest.suffix == ".md":
                anchors = {_slug(h) for h in re.findall(r"^#+ (.+)$", dest.read_text(), re.M)}
                if anchor not in anchors:
                    bad.append(f"{doc.name}: {target} names no heading of {dest.name}")
    assert not bad, bad
