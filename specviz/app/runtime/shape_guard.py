"""The guard every runtime patch installs through (a helper, not a patch): import Streamlit's parts, stop
if this process already patched them, check their shape, patch, mark. Each patch module gives its
``_shape()`` and ``_patch(*parts)``; its ``install()`` is ``install_once(...)``."""
from __future__ import annotations

import logging
from typing import Callable


def install_once(what: str, marker: str, shape: Callable[[], tuple], patch: Callable[..., None],
                 log: logging.Logger) -> bool:
    """Patch Streamlit once per process; False (and one log line) if its shape is not the known one.

    ``shape()`` imports Streamlit's modules and returns ``(owner, missing, parts)``: the class that carries
    ``marker`` once patched, None or a text saying what of the known shape is missing, and the objects that
    ``patch(*parts)`` changes. ``what`` names the patch in the log line."""
    try:
        owner, missing, parts = shape()
    except ImportError as exc:  # pragma: no cover - Streamlit moved the modules
        log.warning("%s not installed: streamlit's module %s is gone", what, exc.name or exc)
        return False
    if getattr(owner, marker, False):
        return True
    if missing:
        log.warning("%s not installed: %s", what, missing)
        return False
    patch(*parts)
    setattr(owner, marker, True)
    return True


def wrap_static_handlers(routes, wrap_handler: Callable[[object, str], None]) -> None:
    """Make Streamlit's static-handler factory (``routes.create_streamlit_static_handler``) hand every
    handler it builds to ``wrap_handler(handler, directory)`` first: the patches that change how the
    frontend's files are served (static_files, page_base) each wrap it once, in either order."""
    import functools

    create = routes.create_streamlit_static_handler

    @functools.wraps(create)
    def create_streamlit_static_handler(directory: str, base_url: str | None):
        handler = create(directory=directory, base_url=base_url)
        wrap_handler(handler, directory)
        return handler

    routes.create_streamlit_static_handler = create_streamlit_static_handler
