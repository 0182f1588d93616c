"""One ``specviz serve`` worker: ``python -m specviz.ui.worker ARGV`` runs ``streamlit ARGV`` with
torch / Triton / the kernels importing in a background thread from the start, and the click queue
and failover replay (``specviz.ui.click_queue``, ``specviz.ui.failover``) installed before any session.

A worker serves students who may arrive at any moment (or reconnect from a worker that died): by
then the "all backends agree" badge has what it needs, and no page waits for the import. It lives
in the ui layer because it starts the ui's backend loader (``specviz.serve`` only launches it).
"""
from __future__ import annotations

import sys


def main(argv: list[str]) -> None:
    from specviz.ui import click_queue, failover, wakeups
    from specviz.ui.backend_cache import start_loading_backends

    start_loading_backends()
    # Before the first session connects (app.py installs them too, but only once a page has run here):
    # a tab that fails over to this worker straight after it (re)started keeps its first edit.
    click_queue.install()
    failover.install()
    wakeups.install()
    from streamlit.web import cli

    sys.argv = ["streamlit", *argv]
    sys.exit(cli.main())


if __name__ == "__main__":
    main(sys.argv[1:])
