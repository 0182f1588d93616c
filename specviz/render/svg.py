"""DOT -> SVG on the server with Graphviz's ``dot`` (no layout work left to the browser).

``st.graphviz_chart`` lays the graph out in the browser on every rerun (a WebAssembly Graphviz),
which costs a visible fraction of a second per click on a classroom PC. Here ``dot`` runs once
per distinct DOT text (cached), and a whole animation's frames go through ONE ``dot`` process
(``dot`` reads several graphs from one input and writes one SVG document per graph).
"""
from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import time
from collections import OrderedDict

_CACHE: OrderedDict[str, str] = OrderedDict()
_CACHE_MAX = 2048  # distinct DOT texts kept (a frame's SVG is ~2-30 KB)
_TIMEOUT_S = 20.0


_DOT_SEEN: dict = {}  # PATH -> (monotonic time of the look, found)
_DOT_RECHECK_S = 5.0


def have_dot() -> bool:
    """True when Graphviz's ``dot`` binary is on PATH. The answer is reused for a few seconds (each page
    asks several times a rerun, and a PATH search was 8% of a class's server CPU); a ``dot`` installed
    while the app runs is seen within ``_DOT_RECHECK_S``."""
    path = os.environ.get("PATH")
    now = time.monotonic()
    seen = _DOT_SEEN.get(path)
    if seen is None or now - seen[0] > _DOT_RECHECK_S:
        seen = _DOT_SEEN[path] = (now, shutil.which("dot", path=path) is not None)
    return seen[1]


def _remember(dot: str, svg: str) -> None:
    _CACHE[dot] = svg
    _CACHE.move_to_end(dot)
    while len(_CACHE) > _CACHE_MAX:
        _CACHE.popitem(last=False)


def _strip(svg: str) -> str:
    """The <svg> element alone (no XML prolog or DOCTYPE), so documents can be split and embedded."""
    start = svg.find("<svg")
    return svg[start:].strip() if start >= 0 else svg.strip()


def _documents(out: bytes) -> list[str]:
    """The SVG documents in ``dot -Tsvg``'s output for several graphs (each starts with its XML prolog).

    ``dot`` numbers the graphs of one input (``<g id="graph0">``, then ``page0,1_graph0``, ...; the long-lived process
    counts on across batches): every document gets ``graph0``, so a figure's SVG depends on its DOT text only
    (``markup.inline_svg`` drops the title of ``graph0``, Graphviz's graph name)."""
    docs = [d for d in re.split(r"(?=<\?xml )", out.decode("utf-8", errors="replace")) if d.strip()]
    return [re.sub(r'<g id="[^"]*graph\d+" class="graph"', '<g id="graph0" class="graph"', d, count=1) for d in docs]


class _DotServer:
    """One long-lived ``dot -Tsvg`` process per server process, fed graphs on its standard input.

    Starting ``dot`` (exec, loading its plugins) cost ~0.02 s of CPU for each new figure: most of a tree
    edit's layout and a third of its server CPU. A running ``dot`` lays a small tree out in ~0.3 ms. After
    each batch it gets one more, empty graph (``_END``): its document ends the answer. Anything unusual
    (a message on stderr, a count that does not match, no answer within ``_TIMEOUT_S``, a dead process)
    ends this process and ``layout`` returns None: the caller runs one ``dot`` for the batch as before,
    and the next batch starts a new process. A forked child (``specviz serve`` workers) starts its own."""

    END = "digraph sv_end_of_batch {}"
    MAX_GRAPHS = 5000  # a fresh process now and then: no slow growth of one dot's memory

    def __init__(self):
        import threading

        self.lock = threading.Lock()
        self.proc = None
        self.pid = None  # the process that started it (a fork must not share its pipes)
        self.graphs = 0

    def _start(self):
        self.proc = subprocess.Popen(["dot", "-Tsvg"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, bufsize=0)
        self.pid, self.graphs = os.getpid(), 0

    def _stop(self):
        proc, self.proc = self.proc, None
        if proc is not None and self.pid == os.getpid():
            try:
                proc.kill()
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass

    def layout(self, todo: list[str]) -> list[str] | None:
        import select
        import threading

        with self.lock:
            try:
                if self.proc is None or self.pid != os.getpid() or self.proc.poll() is not None or self.graphs > self.MAX_GRAPHS:
                    self._stop()
                    self._start()
                proc = self.proc
                data = ("\n".join([*todo, self.END]) + "\n").encode("utf-8")
                # A batch larger than the pipe holds is written by a thread while we read (dot answers as it
                # reads). One that fits half the pipe, the common case (a figure, an edit's frames), is written
                # at once: dot read the last batch to its end marker, so at most its last newline is left in the
                # pipe and the write cannot block; a thread per batch cost ~0.1 ms of CPU and a GIL hand-over
                # before dot saw anything.
                if len(data) <= self._pipe_size(proc) // 2:
                    writer = None
                    self._write(proc, data)
                else:
                    writer = threading.Thread(target=self._write, args=(proc, data), daemon=True)
                    writer.start()
                out, deadline = bytearray(), time.monotonic() + _TIMEOUT_S
                end = b"<title>sv_end_of_batch</title>"
                while not (end in out and out.rstrip().endswith(b"</svg>")):
                    left = deadline - time.monotonic()
                    ready = select.select([proc.stdout, proc.stderr], [], [], max(0.0, left))[0] if left > 0 else []
                    if not ready or proc.stderr in ready:
                        raise RuntimeError("dot wrote to stderr, or no answer")
                    chunk = os.read(proc.stdout.fileno(), 1 << 16)
                    if not chunk:
                        raise RuntimeError("dot exited")
                    out += chunk
                if writer is not None:
                    writer.join(timeout=1)
                docs = _documents(bytes(out))
                if len(docs) != len(todo) + 1:
                    raise RuntimeError("dot answered another number of documents")
                self.graphs += len(todo)
                return docs[:-1]
            except (OSError, ValueError, RuntimeError):
                self._stop()
                return None

    @staticmethod
    def _pipe_size(proc) -> int:
        """Bytes dot's stdin pipe holds (Linux's F_GETPIPE_SZ; elsewhere 0: every batch by a thread)."""
        try:
            import fcntl

            return int(fcntl.fcntl(proc.stdin.fileno(), fcntl.F_GETPIPE_SZ))
        except (ImportError, AttributeError, OSError, ValueError):
            return 0

    @staticmethod
    def _write(proc, data: bytes) -> None:
        try:
            proc.stdin.write(data)
            proc.stdin.flush()
        except (OSError, ValueError):
            pass  # the reader sees the process gone or silent


_DOT_SERVER = _DotServer()


def dots_to_svgs(dots: list[str]) -> list[str]:
    """SVG text for each DOT text, in order; one ``dot`` process for all the uncached ones.

    Raises RuntimeError when ``dot`` is missing or fails (callers fall back to the browser).
    """
    todo = list(dict.fromkeys(d for d in dots if d not in _CACHE))
    if todo:
        if not have_dot():
            raise RuntimeError("Graphviz 'dot' is not installed")
        docs = _DOT_SERVER.layout(todo)
        if docs is None:  # the long-lived process could not (an error, a warning, a timeout): one process, as before
            proc = subprocess.run(["dot", "-Tsvg"], input="\n".join(todo).encode("utf-8"), capture_output=True,
                                  timeout=_TIMEOUT_S, check=False)
            docs = _documents(proc.stdout)
            if proc.returncode != 0 or len(docs) != len(todo):
                raise RuntimeError(f"dot failed ({proc.returncode}): {proc.stderr.decode('utf-8', 'replace')[:300]}")
        for d, svg in zip(todo, docs):
            _remember(d, _strip(svg))
    out = []
    for d in dots:
        svg = _CACHE[d]
        _CACHE.move_to_end(d)
        out.append(svg)
    return out


def dot_to_svg(dot: str) -> str:
    """SVG text of one DOT text (cached by the text)."""
    return dots_to_svgs([dot])[0]


def svg_data_url(svg: str) -> str:
    """``data:image/svg+xml;base64,...``: shown through <img>, an SVG can run no script."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def svg_size_pt(svg: str) -> tuple[float, float]:
    """(width, height) in points from the root element's attributes (0, 0 when absent)."""
    m = re.search(r'<svg[^>]*\bwidth="([\d.]+)pt"[^>]*\bheight="([\d.]+)pt"', svg)
    return (float(m.group(1)), float(m.group(2))) if m else (0.0, 0.0)
