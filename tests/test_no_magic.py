"""Streamlit's "magic" is off (runner.magicEnabled = false, in .streamlit/config.toml and `specviz app`'s flags):
compiling a page for a visit then skips its AST pass. That is only safe while no page relies on it, i.e. holds
no bare expression that magic would have written to the page."""
from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from specviz.app.cli import APP_DEFAULTS

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


def magic_lines(source: str) -> list[int]:
    """Lines of the bare expressions that magic would write: every expression statement except a call, a
    docstring, a yield or an await (a bare value is otherwise a no-op)."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.add(id(first))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and id(node) not in docstrings
            and not isinstance(node.value, (ast.Call, ast.Yield, ast.YieldFrom, ast.Await))]


def test_magic_is_off_for_a_checkout_and_for_specviz_app():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert cfg["runner"]["magicEnabled"] is False
    assert APP_DEFAULTS["--runner.magicEnabled"] == "false"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_no_page_relies_on_magic(script):
    lines = magic_lines(script.read_text(encoding="utf-8"))
    assert not lines, (f"{script.name} lines {lines}: a bare expression shows nothing with magic off; "
                       "write it with st.write(...) or remove it")


def test_the_check_sees_what_magic_would_write():
    src = '"""doc"""\nimport streamlit as st\nx = 1\nx\n"text"\nst.write(x)\ndef f():\n    """doc"""\n    x + 1\n'
    assert magic_lines(src) == [4, 5, 9]
