"""The suite's long tests are collected first (tests/conftest.py, ``LONG_FIRST``), so that under
``--dist worksteal`` none of them starts late and leaves the other worker idle at the end of the run."""
from __future__ import annotations

import importlib
from types import SimpleNamespace

from tests import conftest


def test_long_tests_are_moved_to_the_front_in_their_order_the_rest_kept_in_order():
    names = ["tests/test_a.py::test_one", conftest.LONG_FIRST[1] + "[chromium]", "tests/test_b.py::test_two",
             conftest.LONG_FIRST[0], "tests/test_c.py::test_three[x]"]
    items = [SimpleNamespace(nodeid=n) for n in names]
    conftest.pytest_collection_modifyitems(None, items)
    assert [it.nodeid for it in items] == [names[3], names[1], names[0], names[2], names[4]]


def test_every_long_test_named_exists():
    """A renamed or deleted test must leave the list too (else it silently stops being moved)."""
    for name in conftest.LONG_FIRST:
        path, func = name.split("::")
        module = importlib.import_module(path[:-3].replace("/", "."))
        assert callable(getattr(module, func, None)), name
