"""Result caches bounded in bytes, not entries (issue 19: a cache of 64 entries of 1 GB each is 64 GB).

``bounded_cache(share)`` replaces ``st.cache_data(max_entries=...)`` on the pages. Like
st.cache_data it is shared by every session of the server process and hands each caller its own
unpickled copy (no session can change what another reads). Unlike it, every cached value is
stored pickled and counted in bytes:

* all caches together hold at most ``TOTAL_BYTES`` (``SPECVIZ_CACHE_MB``, default 96 MB);
* one cache (one function) at most ``share`` of that, so no page holds more than its share;
* a value larger than ``MAX_ENTRY_BYTES`` is returned but not kept.

Least recently used entries go first. No streamlit here: the module is plain Python, so tests can
measure it directly.
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
import threading
from collections import OrderedDict

TOTAL_BYTES = int(float(os.environ.get("SPECVIZ_CACHE_MB", "96")) * (1 << 20))
MAX_ENTRY_BYTES = 8 << 20

_LOCK = threading.Lock()
_STORE: OrderedDict = OrderedDict()  # (function name, key digest) -> pickled bytes, least recent first
_SHARED: dict = {}  # the same keys -> the object itself, for caches with copies=False
_USED: dict = {}  # function name -> bytes held
_REGISTRY: dict = {}


def held_bytes(name: str | None = None) -> int:
    """Bytes held by one cache (``name``: "file.py:qualname") or by all of them."""
    with _LOCK:
        return sum(_USED.values()) if name is None else _USED.get(name, 0)


def _evict(name: str, limit: int) -> None:
    """Drop least recently used entries of ``name`` until it holds <= limit, then of anyone until the total fits."""
    for key in [k for k in _STORE if k[0] == name]:
        if _USED.get(name, 0) <= limit:
            break
        _USED[name] -= len(_STORE.pop(key))
        _SHARED.pop(key, None)
    while _STORE and sum(_USED.values()) > TOTAL_BYTES:
        key, blob = _STORE.popitem(last=False)
        _SHARED.pop(key, None)
        _USED[key[0]] -= len(blob)


def bounded_cache(share: float = 0.25, copies: bool = True):
    """Decorator: cache a pure function's results (pickled) under a byte budget.

    ``share``: the fraction of TOTAL_BYTES this function may hold. ``copies=False``: every caller gets the
    one cached object, not its own unpickled copy (for values its callers only read; unpickling a step
    player's frames was ~5% of a class's server CPU); it is still counted by its pickled size. Arguments must be picklable
    (strings, numbers, tuples, numpy arrays, frozen dataclasses); the key is a digest of them.
    The wrapper has ``.clear()`` (this function's entries) like st.cache_data's, and
    ``.contains(*args)``: whether a call would be a hit (pages charge the work budget for misses only).
    """
    def wrap(fn):
        # The file as well as the name: pages run as scripts, so two pages' ``_monte_carlo`` share a module name.
        name = f"{os.path.basename(fn.__code__.co_filename)}:{fn.__qualname__}"
        limit = int(TOTAL_BYTES * share)

        def key_of(args, kwargs):
            try:
                return name, hashlib.sha256(pickle.dumps((args, sorted(kwargs.items())), protocol=5)).hexdigest()
            except Exception:  # noqa: BLE001  an unpicklable argument: no caching, same result
                return None

        @functools.wraps(fn)
        def cached(*args, **kwargs):
            key = key_of(args, kwargs)
            if key is None:
                return fn(*args, **kwargs)
            with _LOCK:
                blob = _STORE.get(key)
                if blob is not None:
                    _STORE.move_to_end(key)
                    if not copies and key in _SHARED:
                        return _SHARED[key]
            if blob is not None:
                return pickle.loads(blob)
            value = fn(*args, **kwargs)
            try:
                blob = pickle.dumps(value, protocol=5)
            except Exception:  # noqa: BLE001  an unpicklable result: returned, not kept
                return value
            if len(blob) <= min(MAX_ENTRY_BYTES, limit):
                with _LOCK:
                    old = _STORE.pop(key, None)
                    _SHARED.pop(key, None)
                    if old is not None:
                        _USED[name] -= len(old)
                    _STORE[key] = blob
                    if not copies:
                        _SHARED[key] = value
                    _USED[name] = _USED.get(name, 0) + len(blob)
                    _evict(name, limit)
            return value if not copies else pickle.loads(blob)  # the caller's own copy, as a later hit would get

        def clear() -> None:
            with _LOCK:
                for key in [k for k in _STORE if k[0] == name]:
                    _USED[name] -= len(_STORE.pop(key))
                    _SHARED.pop(key, None)

        def contains(*args, **kwargs) -> bool:
            """True when a call with these arguments would be a cache hit (no work: no budget to charge)."""
            key = key_of(args, kwargs)
            with _LOCK:
                return key is not None and key in _STORE

        cached.clear = clear
        cached.contains = contains
        cached.cache_name = name
        _REGISTRY[name] = cached
        return cached
    return wrap


def clear_all() -> None:
    with _LOCK:
        _STORE.clear()
        _SHARED.clear()
        _USED.clear()
