"""User mistakes become ``st.error`` naming the field (``guard``, ``show_error``); never a traceback.
"""
from __future__ import annotations

import contextlib

from streamlit.runtime.scriptrunner_utils.exceptions import ScriptControlException
import streamlit as st

from specviz.errors import SpecvizError

# -------------------------------------------------------------------------------------------
# Errors
# -------------------------------------------------------------------------------------------

def show_error(exc: Exception) -> None:
    """st.error naming the field (SpecvizError) or the kind of failure (anything else)."""
    if isinstance(exc, SpecvizError):
        st.error(f"**{exc.field}**: {exc.detail}", icon=":material/warning:")
    else:
        st.error(f"**{type(exc).__name__}**: {exc}", icon=":material/warning:")


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
