"""The "all backends agree" badge on a CPU server: the backends that run on its CPU are compared on request.

Running Triton's kernels under the interpreter cost 0.015-0.03 s of CPU per new scenario, and torch
without a GPU ~2 ms (a tenth of an edit's server CPU), every student's every edit (benchmarks/README,
"The badge on request" and "cpu9"). By default the badge compares what is cheap here and says which
usable backends it did not compare; its button compares them too, for the rest of the session. It
never says "agree" for a backend that did not run, nor at all when only the reference ran.
"""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def triton_calls(monkeypatch):
    """Count the runs of the Triton and torch backends (the badge's comparison calls get_backend(name))."""
    import specviz.algorithms.backends as backends
    from specviz.app.ui import backend_cache as bc
    from specviz.app.ui import bounded_cache

    if not bc.backends_loaded(120) or not {"triton", "torch"} <= set(bc.usable_backends()) \
            or not (bc.on_request("triton") and bc.on_request("torch")):
        pytest.skip("needs Triton under the interpreter and torch without a GPU (a CPU server)")
    calls = []
    real_get = backends.get_backend

    def get(name):
        if name in ("triton", "torch"):
            calls.append(name)
        return real_get(name)

    monkeypatch.setattr(backends, "get_backend", get)
    bounded_cache.clear_all()  # the comparisons are cached per scenario
    yield calls
    bounded_cache.clear_all()


def _row_of(at, key: str) -> list[str]:
    """The element types in the block that holds widget ``key``, which must be one horizontal container."""
    from streamlit.proto.Block_pb2 import Block

    def find(node):
        for child in (node.children.values() if isinstance(node.children, dict) else node.children):
            if getattr(child, "key", None) == key:
                return node
            if getattr(child, "children", None) is not None and (found := find(child)) is not None:
                return found
        return None

    block = find(at._tree)
    assert block.proto.WhichOneof("type") == "flex_container", block.proto
    assert block.proto.flex_container.direction == Block.FlexContainer.Direction.HORIZONTAL
    return [child.type for child in block.children.values()]


def _successes(at) -> list[str]:
    return [str(x.value) for x in at.success]


def test_greedy_badge_leaves_the_cpu_backends_to_a_button(triton_calls):
    at = AppTest.from_file(str(ROOT / "pages/greedy.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    assert not triton_calls, "the badge ran torch or Triton on the CPU on a page visit"
    ok = _successes(at)
    assert not any("agree" in x for x in ok), ok  # only the reference ran: nothing is claimed
    assert any("Not compared yet: torch, triton" in str(c.value) for c in at.caption), [c.value for c in at.caption]
    assert _row_of(at, "w_badge_all::") == ["caption", "button"]  # one horizontal block, not 2 columns (3 blocks)
    at.button(key="w_badge_all::").click().run()
    assert not at.exception, at.exception
    assert {"torch", "triton"} <= set(triton_calls), "the button did not compare torch and Triton"
    assert any(x.startswith("All backends agree") and "torch" in x and "triton" in x for x in _successes(at)), _successes(at)
    assert not any("Not compared yet" in str(c.value) for c in at.caption)
    # the session keeps asking for it: the next scenario (another target) is compared with both too
    before = len(triton_calls)
    at.button(key="w_q_root").click().run()
    assert len(triton_calls) > before and any(x.startswith("All backends agree") for x in _successes(at))


def test_tree_builder_build_tree_badge_leaves_the_cpu_backends_to_a_button(triton_calls):
    at = AppTest.from_file(str(ROOT / "pages/tree_builder.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    assert not triton_calls
    assert not any("agree" in x for x in _successes(at)), _successes(at)
    key = next(b.key for b in at.button if b.key.startswith("w_badge_all::"))
    assert "build_tree" in key
    at.button(key=key).click().run()
    assert triton_calls and any(x.startswith("All backends agree") and "build_tree" in x for x in _successes(at)), _successes(at)


@pytest.mark.parametrize("chosen, left", [("triton", "torch"), ("torch", "triton")])
def test_the_chosen_backend_is_always_compared(triton_calls, chosen, left):
    """A student who runs torch or Triton as the page's backend sees it compared without asking; the
    other stays on request, and the badge says so."""
    from specviz.app.ui.state import widget_key

    at = AppTest.from_file(str(ROOT / "pages/greedy.py"), default_timeout=120).run()
    at.selectbox(key=widget_key("sv_backend", at.session_state)).select(chosen).run()
    assert not at.exception, at.exception
    ok = _successes(at)
    assert any(x.startswith("The compared backends agree") and chosen in x and left not in x for x in ok), ok
    assert any(f"Not compared yet: {left}" in str(c.value) for c in at.caption), [c.value for c in at.caption]


def test_the_reference_is_not_run_again_when_nothing_is_compared_with_it(triton_calls, monkeypatch):
    """With every other backend on request, the badge's comparison would run only the reference, again
    (the page has its result): it runs nothing (~0.2-0.5 ms of CPU per new scenario)."""
    import specviz.algorithms.backends as backends
    from specviz.replay import engine

    calls = []
    real_compare, real_get = engine.compare_backends, backends.get_backend
    monkeypatch.setattr(engine, "compare_backends", lambda *a, **k: calls.append("compare_backends") or real_compare(*a, **k))
    monkeypatch.setattr(backends, "get_backend", lambda name: calls.append(name) or real_get(name))
    for page in ("pages/greedy.py", "pages/tree_builder.py", "pages/chain_sampling.py"):
        at = AppTest.from_file(str(ROOT / page), default_timeout=120).run()
        assert not at.exception, at.exception
        assert any("Not compared yet: torch, triton" in str(c.value) for c in at.caption), page
    assert calls == [], calls  # the pages' own runs use the reference module directly (engine.call_algorithm)
