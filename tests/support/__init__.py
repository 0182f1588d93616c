"""Test-only helpers shared by tests/ and benchmarks/: random and fidelity case generators, the SGLang
oracle helpers (issue 34: test code out of the product), and the tests' client of Streamlit's websocket
protocol (st_protocol). Nothing in specviz/, kernels/ or pages/ imports this package; it is not installed
with the wheel. Import it as ``tests.support`` with the repository root on sys.path (pytest's rootdir
conftest and the benchmarks' own sys.path line put it there)."""
