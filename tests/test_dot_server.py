"""Figures laid out by one long-lived ``dot`` (specviz.render.svg): starting ``dot`` for each new figure cost
~0.02 s of server CPU, a third of a tree edit's (benchmarks/README, "Tree builder and greedy")."""
from __future__ import annotations

import subprocess

import pytest

from specviz.render import svg

pytestmark = pytest.mark.skipif(not svg.have_dot(), reason="needs Graphviz's dot")


def test_new_figures_do_not_start_a_dot_each(monkeypatch):
    starts = []
    real_popen, real_run = subprocess.Popen, subprocess.run

    def popen(args, *a, **k):
        starts.append(args)
        return real_popen(args, *a, **k)

    def run(args, *a, **k):
        starts.append(args)
        return real_run(args, *a, **k)

    monkeypatch.setattr(subprocess, "Popen", popen)
    monkeypatch.setattr(subprocess, "run", run)
    if hasattr(svg, "_DOT_SERVER"):
        svg._DOT_SERVER._stop()  # so this test sees the one start
    got = [svg.dot_to_svg(f"digraph {{ n{k} -> m{k} }}") for k in range(6)]
    assert all("<svg" in s and f"n{k}" in s for k, s in enumerate(got))
    assert len([s for s in starts if s[0] == "dot"]) == 1, starts


def test_a_bad_graph_is_an_error_and_the_next_one_is_drawn():
    with pytest.raises(RuntimeError, match="dot failed"):
        svg.dot_to_svg("digraph { a -> }")
    assert "<svg" in svg.dot_to_svg("digraph { after_error -> ok }")
    big = [f'digraph {{ g{k} [label="{"y" * 3000}"] }}' for k in range(60)]  # more than a pipe holds, one batch
    assert [f"g{k}" in s for k, s in enumerate(svg.dots_to_svgs(big))] == [True] * 60


def test_a_figure_is_the_same_whatever_dot_drew_before():
    """dot numbers the graphs of one input (graph0, graph1, ...): the long-lived process must not leak that
    count into a figure (markup.inline_svg drops the title of graph0 only: Graphviz's graph name showed)."""
    from specviz.app.ui import markup

    svg._DOT_SERVER._stop()
    svg.dots_to_svgs(["digraph first { a -> b }", "digraph second { c -> d }"])
    later = svg.dot_to_svg("digraph tree { x -> y }")
    assert '<g id="graph0" class="graph"' in later
    assert ">tree<" not in markup.inline_svg(later, stretch=True, max_height="1px")


def test_a_batch_that_fits_the_pipe_is_written_without_a_thread(monkeypatch):
    """A thread per batch cost ~0.1 ms of CPU and a GIL hand-over on every new figure; a batch that fits
    dot's empty stdin pipe is written at once. A larger one still goes through a writer thread."""
    import threading

    threads = []
    real_thread = threading.Thread

    def thread(*a, **k):
        threads.append(k.get("target"))
        return real_thread(*a, **k)

    monkeypatch.setattr(threading, "Thread", thread)
    svg._DOT_SERVER._stop()
    small = svg.dots_to_svgs([f"digraph small{k} {{ a{k} -> b{k} }}" for k in range(5)])
    assert all(f"a{k}" in s for k, s in enumerate(small))
    if svg._DOT_SERVER._pipe_size(svg._DOT_SERVER.proc) > 0:  # Linux: the pipe's size is known
        assert threads == [], threads
    big = [f'digraph big{k} {{ g{k} [label="{"z" * 3000}"] }}' for k in range(60)]
    assert [f"g{k}" in s for k, s in enumerate(svg.dots_to_svgs(big))] == [True] * 60
    assert threads, "a batch larger than the pipe was written without a thread"
