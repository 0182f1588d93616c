"""Root conftest: the Triton interpreter must be switched on before triton is first imported."""
import os

os.environ.setdefault("TRITON_INTERPRET", "1")
