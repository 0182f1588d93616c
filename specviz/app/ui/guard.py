"""User mistakes become ``st.error`` naming the field (``guard``, ``show_error``); never a traceback.
"""
from __future__ import annotations

import contextlib

from streamlit.runtime.scriptrunner_utils.exceptions import ScriptControlException
import streamlit as st

from specviz.base.errors import SpecvizError
from specviz.base.safety import md_message

# -------------------------------------------------------------------------------------------
# Errors
# -------------------------------------------------------------------------------------------

def show_error(exc: Exception) -> None:
    """st.error naming the field (SpecvizError) or the kind of failure (anything else)."""
    if isinstance(exc, SpecvizError):
        show_field_error(exc.field, exc.detail)
    else:
        show_field_error(type(exc).__name__, str(exc))


def show_field_error(field: str, detail: str) -> None:
    """st.error "**field**: detail"; the detail may quote a user's label, so it stays text."""
    st.error(f"**{md_message(field)}**: {md_message(detail)}", icon=":material/warning:")


def defer_error(key: str, exc: SpecvizError) -> None:
    """In a widget callback: keep the error for the page's next run (a callback cannot draw it)."""
    st.session_state[key] = (exc.field, exc.detail)


def show_deferred_error(key: str) -> None:
    """Where the inputs are drawn: the error a callback kept under ``key``, once."""
    if key in st.session_state:
        show_field_error(*st.session_state.pop(key))


@contextlib.contextmanager
def guard():
    """Run a block; a SpecvizError (or any other failure) becomes st.error, never a traceback.

    The rest of the block is skipped; the page goes on after it and the user's edits are kept.
    """
    try:
        yield
    except SpecvizError as exc:
        show_error(exc)
    except ScriptControlException:  # st.rerun / st.stop pass through
        raise
    except Exception as exc:  # noqa: BLE001  the page must never show a traceback
        show_error(exc)


def rerun_view() -> None:
    """``st.rerun()`` for an edit made in a page's scenario fragment: during a fragment run, rerun that
    fragment only (the page around it does not depend on the edit); in a full run, the whole app (a
    fragment-scoped rerun is not allowed there). A plain ``st.rerun()`` in a fragment reruns the whole
    app a second time per edit (issue 31: ~half of a chain edit's server CPU)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    st.rerun(scope="fragment" if ctx is not None and ctx.fragment_ids_this_run else "app")
