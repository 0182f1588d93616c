"""``specviz ARGS`` in the test process: the CLI's ``main`` (what ``python -m specviz`` and the ``specviz``
script run) with its exit code, stdout and stderr, like ``subprocess.run``. A subprocess costs ~0.6 CPU-s of
imports per call; tests that must see a new process (the entry point itself, ``serve``) still start one."""
from __future__ import annotations

import contextlib
import io
import types
import warnings


def cli(*args: str) -> types.SimpleNamespace:
    """returncode, stdout, stderr of ``specviz ARGS`` run through ``main`` here. A warning is printed to stderr
    as a fresh interpreter prints it (pytest would record it instead); an uncaught exception propagates, so a
    test fails where a traceback would have failed it."""
    from specviz.app.cli import main

    out, err = io.StringIO(), io.StringIO()

    def show(message, category, filename, lineno, file=None, line=None):
        err.write(warnings.formatwarning(message, category, filename, lineno, line))

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.simplefilter("default")
        warnings.showwarning = show
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return types.SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())
