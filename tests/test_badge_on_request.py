"""The "all backends agree" badge on a CPU server: the Triton interpreter is compared on request.

Running Triton's kernels under the interpreter cost 0.015-0.03 s of CPU per new scenario, every student's
every edit (benchmarks/README, "The badge on request"). By default the badge compares the compiled
backends and says which usable one it did not compare; its button compares that one too, for the rest
of the session. It never says "all backends agree" for a backend that did not run.
"""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def triton_calls(monkeypatch):
    """Count the runs of the Triton backend (the badge's comparison calls get_backend('triton'))."""
    import specviz.algorithms.backends as backends
    from specviz.app.ui import backend_cache as bc
    from specviz.app.ui import bounded_cache

    if not bc.backends_loaded(120) or "triton" not in bc.usable_backends() or not bc.interpreted("triton"):
        pytest.skip("needs Triton under the interpreter (a CPU server)")
    calls = []
    real_get = backends.get_backend

    def get(name):
        if name == "triton":
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


def test_greedy_badge_leaves_the_triton_interpreter_to_a_button(triton_calls):
    at = AppTest.from_file(str(ROOT / "pages/greedy.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    assert not triton_calls, "the badge ran Triton under the interpreter on a page visit"
    ok = _successes(at)
    assert any(x.startswith("The compared backends agree") and "torch" in x and "triton" not in x for x in ok), ok
    assert not any("All backends agree" in x for x in ok), ok  # never claimed for a backend that did not run
    assert any("Not compared yet: triton" in str(c.value) for c in at.caption)
    assert _row_of(at, "w_badge_all::") == ["caption", "button"]  # one horizontal block, not 2 columns (3 blocks)
    at.button(key="w_badge_all::").click().run()
    assert not at.exception, at.exception
    assert triton_calls, "the button did not compare Triton"
    assert any(x.startswith("All backends agree") and "triton" in x for x in _successes(at)), _successes(at)
    # the session keeps asking for it: the next scenario (another target) is compared with Triton too
    before = len(triton_calls)
    at.button(key="w_q_root").click().run()
    assert len(triton_calls) > before and any(x.startswith("All backends agree") for x in _successes(at))


def test_tree_builder_build_tree_badge_leaves_the_triton_interpreter_to_a_button(triton_calls):
    at = AppTest.from_file(str(ROOT / "pages/tree_builder.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    assert not triton_calls
    assert any(x.startswith("The compared backends agree") and "build_tree" in x for x in _successes(at)), _successes(at)
    key = next(b.key for b in at.button if b.key.startswith("w_badge_all::"))
    at.button(key=key).click().run()
    assert triton_calls and any(x.startswith("All backends agree") for x in _successes(at)), _successes(at)


def test_the_chosen_backend_is_always_compared(triton_calls):
    """A student who runs Triton (interpreter) as the page's backend sees it compared without asking."""
    from specviz.app.ui.state import widget_key

    at = AppTest.from_file(str(ROOT / "pages/greedy.py"), default_timeout=120).run()
    at.selectbox(key=widget_key("sv_backend", at.session_state)).select("triton").run()
    assert not at.exception, at.exception
    assert any(x.startswith("All backends agree") and "triton" in x for x in _successes(at)), _successes(at)
