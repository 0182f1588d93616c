"""specviz.app.runtime: the Streamlit patches in one room. requirements.txt admits only Streamlit
releases the patches were checked on; ``specviz doctor`` says which patches are active, and a patch
whose shape check fails stays out and is reported (issue 34)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

from specviz.app import runtime as app_runtime
from specviz.app.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _streamlit_requirement() -> Requirement:
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and Requirement(line).name == "streamlit":
            return Requirement(line)
    raise AssertionError("requirements.txt names no streamlit")


def test_requirements_admit_only_streamlit_minors_the_patches_were_checked_on():
    """Every release requirements.txt admits shares its major.minor with a checked one (the shape of
    private classes changes between minor releases), and every checked release is admitted."""
    spec = _streamlit_requirement().specifier
    checked = {Version(v) for v in app_runtime.CHECKED_ON}
    assert all(spec.contains(v) for v in checked), (str(spec), app_runtime.CHECKED_ON)
    minors = {(v.major, v.minor) for v in checked}
    candidates = [Version(f"1.{m}.{p}") for m in range(0, 100) for p in (0, 3)] + [Version("2.0.0"), Version("2.1.0")]
    outside = [str(v) for v in candidates if spec.contains(v) and (v.major, v.minor) not in minors]
    assert not outside, f"requirements.txt streamlit{spec} admits unchecked releases, e.g. {outside[:5]}"


def test_doctor_says_every_patch_is_active_on_the_pinned_streamlit(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for name in app_runtime.PATCHES:
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(name))
        assert line.split()[1] == "active", out
    assert "streamlit/streamlit#" in out


def test_each_patch_names_upstream_versions_effect_and_removal():
    import importlib
    for name in app_runtime.PATCHES:
        doc = importlib.import_module(f"specviz.app.runtime.{name}").__doc__
        for part in ("Upstream:", "Checked on:", "Without it:", "To drop it:"):
            assert part in doc, (name, part)


def test_a_patch_whose_shape_changed_stays_out_and_doctor_says_so():
    """A Streamlit without ScriptRequests._request_rerun_locked (simulated in a fresh process): the
    click queue is not installed, the others are, and doctor names it and exits 1."""
    code = ("from streamlit.runtime.scriptrunner_utils import script_requests as sr\n"
            "del sr.ScriptRequests._request_rerun_locked\n"
            "from specviz.app.cli import main\n"
            "raise SystemExit(main(['doctor']))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ln.startswith("  ") and ln.split()[0] in app_runtime.PATCHES}
    assert "NOT ACTIVE" in lines["click_queue"], r.stdout
    assert all(lines[n].split()[1] == "active" for n in app_runtime.PATCHES if n != "click_queue"), r.stdout
    assert f"1 of {len(app_runtime.PATCHES)} patches are not active" in r.stdout
