"""Errors and warnings that specviz shows to a person.

Every user mistake becomes a ``SpecvizError`` that names the field, the value, the rule and
the fix. The app shows it with ``st.error``; the CLI prints it on one line and exits 2.
"""
from __future__ import annotations


class SpecvizError(ValueError):
    """Bad input. ``field`` names the argument or scenario field at fault."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.detail = message
        super().__init__(f"{field}: {message}")


class SpecvizWarning(UserWarning):
    """Degenerate but legal input (q = 0 for a proposed token, a residual with no mass, ...)."""


class BackendUnavailable(RuntimeError):
    """A backend that cannot run here; the message names the reason and the alternatives."""
