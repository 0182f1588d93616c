"""Root conftest: the Triton interpreter must be switched on before triton is first imported."""
import os

os.environ.setdefault("TRITON_INTERPRET", "1")
# AppTest has no timer to redraw a page once torch / Triton are loaded: pages wait for them instead
# (specviz.app.ui.common.BADGE_WAIT_S), so every page shows its badge on its first run.
os.environ.setdefault("SPECVIZ_BADGE_WAIT_S", "300")
