"""Shareable state: the whole scenario, page, language and animation step in one URL query value.

    state = ShareState(page="greedy", lang="zh", slot="tree", scenario=s, step_key="greedy", step=4)
    token = encode_state(state)            # compact JSON -> zlib -> urlsafe base64 (no padding)
    url = share_url("http://host:8501", state)   # http://host:8501/greedy?s=<token>
    decode_state(token) == state           # validated; bad input raises SpecvizError, never a traceback

The token is refused when it is longer than ``MAX_TOKEN_CHARS`` (16 KB), when it is not base64,
not zlib, inflates beyond ``MAX_JSON_BYTES`` (a zip bomb), is not JSON, or holds an invalid
scenario. No streamlit here (``specviz.app.ui.share_ui`` wires it to ``st.query_params``).
"""
from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import zlib
from dataclasses import dataclass, field
from urllib.parse import quote

from specviz.base.errors import SpecvizError
from specviz.base.safety import loads_json
from specviz.inputs.scenario import Scenario, scenario_from_dict

QUERY_KEY = "s"
SHARE_VERSION = 1
MAX_TOKEN_CHARS = 16 * 1024  # encoded length limit (browsers and proxies cut long URLs)
MAX_JSON_BYTES = 256 * 1024  # inflated length limit
LANGS = ("en", "zh")
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
MAX_STEP = 100_000

# Page extras a link may carry: name -> (type, bound). A page reads only these, already checked;
# a new extra is added here (an unknown one refuses the link, naming it).
EXTRA_FIELDS = {
    "req": (int, 64),       # greedy / tree builder: the request shown (0 <= req < 64)
    "sel": (int, 64),       # tree builder: the selected node
    "stop": (int, 64),      # guided tour: the stop
    "wrong": (bool, None),  # batch page: show the wrong (gather -1) variant
    "pitfall": (str, 40),   # pitfall gallery: the pitfall's key (a name)
    "text": (str, 4000),    # audit: the pasted outputs
    "present": (bool, None),  # any page: presentation mode (a link made in it opens in it)
    "chain": ("chain", None),  # three engines: the chain's JSON (checked by specviz.rooms.engines.chain.from_json)
    "loop": ("loop", None),    # decoding loop: the page's inputs (checked by check_loop_inputs and share_ui)
}

# The decoding loop page's inputs a link carries: name -> (type, low, high) or a tuple of choices.
# The bounds are the page's own widget bounds (specviz.base.limits), so a link can never hand a widget
# a value it refuses; LoopSettings.checked() then judges the combination, as for a student's edit.
LOOP_TRIALS = (100, 200, 400, 800)


def _loop_fields() -> dict:
    from specviz.base.limits import LOOP_MAX_DEPTH, LOOP_MAX_PROMPT_CHARS, LOOP_MAX_ROUNDS, LOOP_MAX_TOPK

    most = LOOP_MAX_TOPK + (LOOP_MAX_DEPTH - 1) * LOOP_MAX_TOPK ** 2 + 1
    return {"prompt": (str, 0, LOOP_MAX_PROMPT_CHARS), "algorithm": ("greedy", "target_only", "chain"),
            "topk": (int, 1, LOOP_MAX_TOPK), "depth": (int, 1, LOOP_MAX_DEPTH), "n": (int, 2, most),
            "temperature": (float, 0.1, 2.0), "seed": (int, 0, 2**31 - 1), "rounds": (int, 1, LOOP_MAX_ROUNDS),
            "t_acc": (float, 0.05, 1.0), "trials": LOOP_TRIALS, "run_mc": (bool, 0, 1), "cost": (float, 0.0, 0.5),
            "mistakes": (list, 0, 8)}


def check_loop_inputs(value, field_name: str = "link.extra.loop") -> dict:
    """The decoding loop page's inputs from a link, each checked against the page's widget bounds.
    Raises SpecvizError naming the field."""
    if not isinstance(value, dict):
        raise SpecvizError(field_name, "must be an object of the decoding loop's inputs")
    fields = _loop_fields()
    out = {}
    for key, v in value.items():
        name = f"{field_name}.{str(key)[:40]}"
        if key not in fields:
            raise SpecvizError(name, f"is not an input of the decoding loop (known: {', '.join(fields)})")
        spec = fields[key]
        if not isinstance(spec[0], type):   # a tuple of choices
            if isinstance(v, bool) or v not in spec:
                raise SpecvizError(name, f"is {str(v)[:40]!r}: choose one of {', '.join(map(str, spec))}")
        elif spec[0] is bool:
            if not isinstance(v, bool):
                raise SpecvizError(name, "must be true or false")
        elif spec[0] is str:
            if not isinstance(v, str) or len(v) > spec[2]:
                raise SpecvizError(name, f"must be a text of at most {spec[2]} characters")
        elif spec[0] is list:   # mistake names: their spelling here; that they exist, in share_ui (the loop is a layer above)
            if not isinstance(v, list) or len(v) > spec[2] or not all(isinstance(m, str) and _NAME_RE.match(m) for m in v):
                raise SpecvizError(name, "must be a list of mistake names (lower-case letters, digits and _)")
        else:
            ok_type = (int,) if spec[0] is int else (int, float)
            if isinstance(v, bool) or not isinstance(v, ok_type) or not (spec[1] <= v <= spec[2]) or v != v:
                raise SpecvizError(name, f"is {str(v)[:40]!r}: it must be a number from {spec[1]} to {spec[2]}"
                                         + (" (a whole number)" if spec[0] is int else ""))
            v = spec[0](v)   # a float slider refuses an int value: 1 -> 1.0
        out[key] = v
    return out


def check_chain_json(value, field_name: str = "link.extra.chain") -> str:
    """The Three engines page's chain from a link: a JSON text of bounded size here; its content is
    checked by the page's own parser (specviz.rooms.engines.chain.from_json, a layer above) in
    specviz.app.ui.share_ui.load_shared_state, before anything is applied."""
    if not isinstance(value, str) or len(value) > MAX_JSON_BYTES:
        raise SpecvizError(field_name, f"must be the chain's JSON text (at most {MAX_JSON_BYTES} characters)")
    return value


def check_extra(extra) -> dict:
    """Validate a link's page extras against EXTRA_FIELDS. Raises SpecvizError naming the field."""
    if not isinstance(extra, dict):
        raise SpecvizError("link.extra", f"is a {type(extra).__name__}: it must be an object of page values")
    out = {}
    for key, value in extra.items():
        if key not in EXTRA_FIELDS:
            raise SpecvizError(f"link.extra.{str(key)[:40]}", f"is not a page value a link carries (known: {', '.join(EXTRA_FIELDS)})")
        kind, bound = EXTRA_FIELDS[key]
        field_name = f"link.extra.{key}"
        if kind == "chain":
            value = check_chain_json(value, field_name)
        elif kind == "loop":
            value = check_loop_inputs(value, field_name)
        elif kind is bool:
            if not isinstance(value, bool):
                raise SpecvizError(field_name, f"is a {type(value).__name__}: it must be true or false")
        elif kind is int:
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < bound:
                raise SpecvizError(field_name, f"is {str(value)[:40]!r}: it must be a whole number from 0 to {bound - 1}")
        elif kind is str:
            if not isinstance(value, str) or len(value) > bound:
                raise SpecvizError(field_name, f"must be a text of at most {bound} characters")
            if key == "pitfall" and not _NAME_RE.match(value):
                raise SpecvizError(field_name, f"is {value[:40]!r}: a pitfall key is lower-case letters, digits and _")
        out[key] = value
    return out


@dataclass(frozen=True)
class ShareState:
    page: str  # page url path, e.g. "greedy" (the file name in pages/ without .py)
    lang: str = "en"
    slot: str = "tree"  # scenario slot of specviz.app.ui.common
    scenario: Scenario | None = None
    step_key: str | None = None  # which animation the step belongs to
    step: int = 0
    extra: dict = field(default_factory=dict)  # small page-specific inputs (e.g. the chosen pitfall)

    def to_dict(self) -> dict:
        d = {"v": SHARE_VERSION, "page": self.page, "lang": self.lang, "slot": self.slot, "step": int(self.step)}
        if self.scenario is not None:
            d["scenario"] = json.loads(self.scenario.to_json(indent=None))
        if self.step_key:
            d["step_key"] = self.step_key
        if self.extra:
            d["extra"] = self.extra
        return d


@functools.lru_cache(maxsize=4096)
def _pack(raw: bytes) -> str:
    """zlib level 9 + URL-safe base64: the same bytes every rerun for a view that did not change (a page
    draws a link per step, so a class would compress the same few KB hundreds of times a second)."""
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode("ascii").rstrip("=")


def encode_state(state: ShareState) -> str:
    """The URL query value for ``state``. Raises SpecvizError when it would exceed the limit."""
    return _token(state.to_dict())


def encode_steps(state: ShareState, count: int) -> list[str]:
    """``encode_state`` of ``state`` at each step 0..count-1 (a step player's links). The state's dict is
    built once: its scenario's JSON (a pydantic dump, then parsed back) was most of each link's cost,
    and only the step differs from one link to the next."""
    d = state.to_dict()
    out = []
    for k in range(count):
        d["step"] = int(k)
        out.append(_token(d))
    return out


def _token(d: dict) -> str:
    raw = json.dumps(d, separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode("utf-8")
    token = _pack(raw)
    if len(token) > MAX_TOKEN_CHARS:
        raise SpecvizError("link", f"would be {len(token)} characters long; at most {MAX_TOKEN_CHARS} fit in a link: "
                                   "save the scenario as a JSON file and share that instead")
    return token


DEFAULT_PAGE = "overview"  # app.py's first page: Streamlit serves it at "/" only ("/overview" says "Page not found")


def page_path(page: str) -> str:
    """The URL path of a page: ``/<page>``, or ``/`` for the default page."""
    return "/" if page == DEFAULT_PAGE else f"/{quote(page)}"


def share_url(base: str, state: ShareState) -> str:
    """``base`` (e.g. ``http://127.0.0.1:8501``) + ``/<page>?s=<token>`` (``/?s=`` for the default page)."""
    return f"{base.rstrip('/')}{page_path(state.page)}?{QUERY_KEY}={encode_state(state)}"


def decode_state(token) -> ShareState:
    """Validate and decode a query value. Raises SpecvizError (field "link") for anything malformed."""
    if isinstance(token, (list, tuple)):
        token = token[0] if len(token) == 1 else None
    if not isinstance(token, str) or not token.strip():
        raise SpecvizError("link", "holds no state: the '?s=' value is empty")
    token = token.strip()
    if len(token) > MAX_TOKEN_CHARS:
        raise SpecvizError("link", f"is {len(token)} characters long; at most {MAX_TOKEN_CHARS} are accepted: "
                                   "this link is too large (share the scenario JSON file instead)")
    if not re.fullmatch(r"[A-Za-z0-9_\-]+={0,2}", token):
        raise SpecvizError("link", "is damaged: it holds characters that a specviz link never contains "
                                   "(copy the whole link again)")
    try:
        packed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise SpecvizError("link", "is damaged: it is not valid base64 (copy the whole link again)") from None
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(packed, MAX_JSON_BYTES + 1)
    except zlib.error:
        raise SpecvizError("link", "is damaged: its compressed data cannot be read (copy the whole link again)") from None
    if len(raw) > MAX_JSON_BYTES or inflater.unconsumed_tail:
        raise SpecvizError("link", f"inflates to more than {MAX_JSON_BYTES} bytes: refused (too large)")
    if not inflater.eof:
        raise SpecvizError("link", "is cut short: its compressed data ends early (copy the whole link again)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecvizError("link", "is damaged: its content is not JSON (not UTF-8 text)") from None
    try:
        data = loads_json(text, "link", MAX_JSON_BYTES)
    except SpecvizError as exc:
        raise SpecvizError("link", f"is damaged: its content {exc.detail.replace('is not valid JSON', 'is not JSON')}") from None
    return state_from_dict(data)


def state_from_dict(data) -> ShareState:
    if not isinstance(data, dict):
        raise SpecvizError("link", "does not hold a specviz state object")
    if data.get("v") != SHARE_VERSION:
        raise SpecvizError("link.v", f"is {data.get('v')!r}: this specviz reads share links of version {SHARE_VERSION}")
    unknown = set(data) - {"v", "page", "lang", "slot", "scenario", "step_key", "step", "extra"}
    if unknown:
        raise SpecvizError(f"link.{sorted(unknown)[0]}", "is not a share-link field")
    page = data.get("page")
    if not isinstance(page, str) or not _NAME_RE.match(page):
        raise SpecvizError("link.page", f"is {page!r}: a page name is lower-case letters, digits and _")
    lang = data.get("lang", "en")
    if lang not in LANGS:
        raise SpecvizError("link.lang", f"is {lang!r}: use one of {', '.join(LANGS)}")
    slot = data.get("slot", "tree")
    if not isinstance(slot, str) or not _NAME_RE.match(slot):
        raise SpecvizError("link.slot", f"is {slot!r}: a slot name is lower-case letters, digits and _")
    step = data.get("step", 0)
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= MAX_STEP:
        raise SpecvizError("link.step", f"is {step!r}: the animation step is a whole number >= 0")
    step_key = data.get("step_key")
    if step_key is not None and (not isinstance(step_key, str) or not _NAME_RE.match(step_key)):
        raise SpecvizError("link.step_key", f"is {step_key!r}: a step key is lower-case letters, digits and _")
    extra = check_extra(data.get("extra", {}))
    scenario = None
    if "scenario" in data:
        try:
            scenario = scenario_from_dict(data["scenario"])
        except SpecvizError as exc:
            raise SpecvizError(f"link.scenario.{exc.field}", exc.detail) from None
    return ShareState(page=page, lang=lang, slot=slot, scenario=scenario, step_key=step_key, step=step, extra=extra)
