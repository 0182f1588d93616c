"""Where the app's files are: the same answer in a checkout, an editable install and a wheel.

The repository keeps ``app.py``, ``pages/`` and ``scenarios/`` beside the ``specviz`` package. A
wheel carries copies of them in ``specviz/_app/`` (see setup.py). ``app_root()`` returns the
directory that holds all three, so that ``specviz app`` and the preset lists work from any
working directory.
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


def app_root() -> Path:
    """The directory holding ``app.py``, ``pages/`` and ``scenarios/``."""
    bundled = _PACKAGE / "_app"
    if (bundled / "app.py").is_file():
        return bundled  # installed from a wheel
    return _PACKAGE.parent  # a checkout, or `pip install -e .`


def app_script() -> Path:
    """``app.py``, the Streamlit entry point."""
    return app_root() / "app.py"


def scenario_dir() -> Path:
    """The preset scenarios (``scenarios/*.json``)."""
    return app_root() / "scenarios"
