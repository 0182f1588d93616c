"""Audit someone else's Accept-stage outputs against the numpy reference.

Give a scenario (the inputs) and the arrays another implementation produced for it (your own
kernel, a real SGLang run): ``audit(scenario, claimed)`` recomputes everything with the
reference and reports, for the FIRST wrong value, the field, the row / slot, the expected value
and the rule it breaks in one sentence.

Auditable fields (any subset; names as in SGLang / SEMANTICS.md):

==================  =========================  ==================================================
field               shape                      meaning
==================  =========================  ==================================================
accept_index        [bs, W] (bs=1: [W])        global rows of root + accepted nodes, -1 padded
accept_token_num    [bs] (bs=1: scalar)        accepted drafts k (alias num_correct_drafts)
accept_lens         [bs]                       k + 1 (alias accept_length)
correct_len         [bs]                       DSpark: leading run of matches
commit_lens         [bs]                       k + 1 (EAGLE's accept_lens, DSpark's commit_lens)
predicts            [bs*n] or [bs, n]          token emitted after each row (accepted rows checked)
accept_tokens       [bs, W]                    predicts[accept_index] on the valid prefix, -1 beyond
outputs             per request: list          emitted tokens (accepted drafts + bonus)
out_tokens          [bs, T]                    DSpark's out_tokens
bonus               [bs]                       the last emitted token = the next root
new_seq_lens        [bs]                       seq_len + k + 1
committed_rows      per request: list          global verify rows whose KV is kept (root + accepted)
committed_tokens    per request: list          input tokens of those rows (R A C)
==================  =========================  ==================================================

Tokens may be given as ids or as vocabulary labels ("A"). Pasted text (JSON, Python lists, a
torch / numpy repr) is parsed by ``parse_array`` without ``eval``.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .engine import Run, run_scenario
from .errors import SpecvizError
from .reference import gather_accept_tokens
from .safety import bounded_int, loads_json, read_text_file
from .scenario import MAX_SCENARIO_CHARS, Scenario, load_scenario, scenario_from_dict

# ---------------------------------------------------------------------------------------------
# Result types
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditFinding:
    """One wrong value. ``index`` is the position inside the field as printed (``(b, slot)``,
    ``(row,)``, ``(b,)``); ``request`` / ``node`` / ``row`` say what to highlight in the tree."""

    field: str
    index: tuple
    expected: Any
    got: Any
    rule: str  # one sentence: what the value should be and why
    request: int | None = None
    node: int | None = None  # node id inside the request's tree to highlight
    row: int | None = None  # global verify row to highlight
    rule_zh: str = ""  # the same rule in 简体中文

    @property
    def where(self) -> str:
        return self.field + "".join(f"[{i}]" for i in self.index)

    def rule_in(self, lang: str = "en") -> str:
        return self.rule_zh if (lang == "zh" and self.rule_zh) else self.rule

    def sentence(self, lang: str = "en") -> str:
        rule = self.rule_in(lang)
        first = rule.split(" ", 1)[0]
        if not any(ch in first for ch in "_[(="):  # never capitalise an identifier (accept_index, correct_len)
            rule = rule[:1].upper() + rule[1:]
        if lang == "zh":
            return f"{self.where}：得到 {_fmt(self.got)}，应为 {_fmt(self.expected)}。{rule}"
        return f"{self.where}: got {_fmt(self.got)}, expected {_fmt(self.expected)}. {rule}"


@dataclass
class AuditReport:
    scenario: Scenario
    run: Run
    checked: list  # field names compared, in checking order
    findings: list  # [AuditFinding], at most one per field, in checking order
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def first_error(self) -> AuditFinding | None:
        return self.findings[0] if self.findings else None

    def summary(self) -> str:
        if not self.checked:
            return "NOTHING CHECKED: give at least one output field (e.g. accept_index)."
        if self.ok:
            return f"OK: {', '.join(self.checked)} match the reference for scenario {self.scenario.name!r}."
        lines = [f"WRONG: {len(self.findings)} of {len(self.checked)} fields differ from the reference "
                 f"for scenario {self.scenario.name!r}.",
                 f"First error: {self.first_error.sentence()}"]
        for f in self.findings[1:]:
            lines.append(f"Also: {f.sentence()}")
        return "\n".join(lines)


def _fmt(v) -> str:
    if isinstance(v, np.ndarray):
        v = v.tolist()
    return json.dumps(v, ensure_ascii=False) if isinstance(v, (list, tuple, str)) else str(v)


# ---------------------------------------------------------------------------------------------
# Parsing pasted arrays (no eval)
# ---------------------------------------------------------------------------------------------

MAX_PASTE_CHARS = 100_000  # ~30,000 lines of printed tensor; larger outputs are audited from a file (CLI)
MAX_PASTE_DEPTH = 8  # Accept outputs have at most 3 dimensions
_TOKEN_RE = re.compile(r"""\s*(?:
    (?P<open>[\[(])|(?P<close>[\])])|(?P<comma>,)|
    (?P<num>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan))|
    (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|
    (?P<kw>true|false|True|False|null|None)|
    (?P<ellipsis>\.\.\.)|
    (?P<word>[^\s\[\](),'"{}:;=]+)
)""", re.VERBOSE)


def parse_array(text: str, name: str = "value"):
    """Parse pasted array text into nested Python lists of ints / floats / strings.

    Accepts JSON (``[[0, 1, 3]]``), Python lists / tuples, a bare scalar, and torch / numpy
    reprs such as ``tensor([[0, 1, 3]], device='cuda:0', dtype=torch.int32)`` or
    ``array([0, 1, 3], dtype=int32)``. Never evaluates code. Raises SpecvizError naming ``name``.
    """
    if not isinstance(text, str):
        raise SpecvizError(name, f"is a {type(text).__name__}: paste the array as text")
    s = text.strip()
    if not s:
        raise SpecvizError(name, "is empty: paste an array such as [0, 1, 3]")
    if len(s) > MAX_PASTE_CHARS:
        raise SpecvizError(name, f"is {len(s)} characters long; at most {MAX_PASTE_CHARS} can be pasted")
    m = re.match(r"^(?:torch\.)?(?:tensor|array|Tensor|np\.array|numpy\.array)\s*\(", s)
    if m:
        s = _strip_call(s, m.end(), name)
    if "..." in s:
        raise SpecvizError(name, "is truncated ('...'): print the full tensor first, e.g. "
                                 "torch.set_printoptions(profile='full') or numpy.set_printoptions(threshold=10**6)")
    tokens = _tokenize(s, name)
    value, pos = _parse_value(tokens, 0, name)
    if pos != len(tokens):
        raise SpecvizError(name, f"has unexpected text after the array (near {tokens[pos][1]!r}): paste one array")
    return value


def _strip_call(s: str, start: int, name: str) -> str:
    """The first argument of ``tensor(...)`` / ``array(...)``: up to the first top-level comma or ')'."""
    depth, quote = 0, None
    for i in range(start, len(s)):
        ch = s[i]
        if quote:
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            if depth == 0:
                return s[start:i]
            depth -= 1
        elif ch == "," and depth == 0:
            return s[start:i]
    raise SpecvizError(name, "has an unclosed '(': paste the whole tensor(...) / array(...) text")


_BLANK_TAIL = re.compile(r"\s*\Z")


def _tokenize(s: str, name: str) -> list:
    """Tokens of ``s`` in one left-to-right pass (linear time)."""
    out, pos = [], 0
    while pos < len(s):
        if _BLANK_TAIL.match(s, pos):
            break
        m = _TOKEN_RE.match(s, pos)
        if not m or m.end() == pos:
            bad = s[pos:pos + 40].strip()[:20]
            raise SpecvizError(name, f"cannot be read at {bad!r} (character {pos + 1}): use numbers, quoted labels, "
                                     "[ ] and commas, e.g. [[0, 1, 3]]")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _scalar(kind: str, text: str, name: str):
    if kind == "num":
        low = text.lower().lstrip("+-")
        if low in ("inf", "nan"):
            return float(text)
        if re.fullmatch(r"[-+]?\d+", text):
            return bounded_int(text, name)
        return float(text)
    if kind == "str":
        try:
            return json.loads('"' + text[1:-1].replace('"', '\\"') + '"') if text[0] == "'" else json.loads(text)
        except json.JSONDecodeError:
            return text[1:-1]
    if kind == "word":  # a bare token label such as A or <eos>
        return text
    if kind == "kw":
        return {"true": True, "True": True, "false": False, "False": False}.get(text)
    raise SpecvizError(name, f"has {text!r} where a value was expected")


def _parse_value(tokens, pos, name):
    """One value starting at ``tokens[pos]``: iterative (an explicit stack, at most MAX_PASTE_DEPTH
    open brackets), so a deeply nested paste is a clear error, never a RecursionError."""
    stack = []  # [(items, closer, opener)]
    while True:
        if pos >= len(tokens):
            raise SpecvizError(name, f"ends too early: a {stack[-1][2] if stack else '['!r} is not closed")
        kind, text = tokens[pos]
        if kind == "open":
            if len(stack) >= MAX_PASTE_DEPTH:
                raise SpecvizError(name, f"nests brackets more than {MAX_PASTE_DEPTH} deep: Accept outputs have at most "
                                         "3 dimensions (paste one array)")
            stack.append(([], "]" if text == "[" else ")", text))
            pos += 1
            if pos < len(tokens) and tokens[pos][0] == "close":
                value, pos = _close(stack, tokens[pos][1], name), pos + 1
            else:
                continue
        else:
            value, pos = _scalar(kind, text, name), pos + 1
        # a value is complete: attach it to the open list, then consume ',' / closing brackets
        while True:
            if not stack:
                return value, pos
            stack[-1][0].append(value)
            if pos >= len(tokens):
                raise SpecvizError(name, f"ends too early: a {stack[-1][2]!r} is not closed")
            k, t = tokens[pos]
            if k == "comma":
                pos += 1
                if pos < len(tokens) and tokens[pos][0] == "close":  # trailing comma
                    k, t = tokens[pos]
                else:
                    break  # next item
            if k == "close":
                value, pos = _close(stack, t, name), pos + 1
                continue
            raise SpecvizError(name, f"has {t!r} where ',' or {stack[-1][1]!r} was expected")


def _close(stack, closer: str, name: str) -> list:
    items, want, opener = stack.pop()
    if closer != want:
        raise SpecvizError(name, f"closes {opener!r} with {closer!r}: brackets do not match")
    return items


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _bracket_balance(line: str) -> int:
    """Open minus closed brackets on one line (quoted text skipped)."""
    bare = _QUOTED.sub("", line)
    return bare.count("[") + bare.count("(") - bare.count("]") - bare.count(")")


_FIELD_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*[:=]\s*(.*)$")


def parse_claimed_text(text: str) -> dict:
    """Several pasted fields at once: a JSON object, or lines ``name = value`` / ``name: value``
    (a value may continue over the following lines, as printed tensors do)."""
    if not isinstance(text, str) or not text.strip():
        raise SpecvizError("claimed", "is empty: paste e.g. 'accept_index = [[0, 1, 3]]'")
    s = text.strip()
    if len(s) > MAX_PASTE_CHARS:
        raise SpecvizError("claimed", f"is {len(s):,} characters long; at most {MAX_PASTE_CHARS:,} can be pasted "
                                      "(paste only the Accept outputs, or audit a file with the CLI)")
    if s.startswith("{"):
        data = loads_json(s, "claimed", MAX_PASTE_CHARS, max_depth=MAX_PASTE_DEPTH + 1)
        if not isinstance(data, dict):
            raise SpecvizError("claimed", "must be a JSON object {field: array}")
        return {k: (parse_array(v, k) if isinstance(v, str) and k not in ("outputs",) else v) for k, v in data.items()}
    chunks: dict[str, list[str]] = {}
    current = None
    balance = 0  # open brackets of the current field so far (kept per line: linear time)
    for line in s.splitlines():
        m = _FIELD_LINE.match(line)
        open_chunk = current is not None and balance > 0
        if m and not open_chunk and not line.lstrip().startswith(("[", "(")):
            current = m.group(1)
            if current in chunks:
                raise SpecvizError(f"claimed.{current}", "is given twice: paste each field once")
            chunks[current] = [m.group(2)]
            balance = _bracket_balance(m.group(2))
        elif current is not None:
            chunks[current].append(line)
            balance += _bracket_balance(line)
        elif line.strip():
            raise SpecvizError("claimed", f"line {line.strip()[:30]!r} does not start with a field name: "
                                          "write 'accept_index = [[0, 1, 3]]'")
    return {k: parse_array("\n".join(v), k) for k, v in chunks.items()}


# ---------------------------------------------------------------------------------------------
# Normalising claimed values
# ---------------------------------------------------------------------------------------------

ALIASES = {"num_correct_drafts": "accept_token_num", "accept_length": "accept_lens", "accept_length_per_req": "accept_lens",
           "output_tokens": "outputs", "output": "outputs", "verified_id": "outputs", "kv_rows": "committed_rows"}
EAGLE_FIELDS = ("accept_index", "accept_token_num", "accept_lens", "commit_lens", "predicts", "accept_tokens", "outputs",
                "bonus", "new_seq_lens", "committed_rows", "committed_tokens")
DSPARK_FIELDS = ("correct_len", "commit_lens", "accept_lens", "out_tokens", "outputs", "bonus", "new_seq_lens",
                 "committed_rows", "committed_tokens")
DSPARK_SAMPLING_EXTRA = ("accept_index", "accept_token_num", "predicts")
TOKEN_FIELDS = ("predicts", "accept_tokens", "outputs", "out_tokens", "bonus", "committed_tokens")
ALL_FIELDS = tuple(dict.fromkeys(EAGLE_FIELDS + DSPARK_FIELDS))


def auditable_fields(s: Scenario) -> tuple:
    """The fields ``audit`` can check for this scenario's algorithm, in checking order."""
    if s.algorithm.startswith("dspark"):
        extra = DSPARK_SAMPLING_EXTRA if s.algorithm == "dspark_sampling" else ()
        return ("correct_len",) + extra + DSPARK_FIELDS[1:]
    return EAGLE_FIELDS


def _to_ids(s: Scenario, name: str, value):
    """Labels -> token ids (recursively); ints stay."""
    if isinstance(value, list):
        return [_to_ids(s, name, v) for v in value]
    if isinstance(value, str):
        if value in s.vocab:
            return s.vocab.index(value)
        raise SpecvizError(name, f"holds the label {value!r}, which is not in the vocabulary {s.vocab[:12]}")
    return value


def _check_ints(name: str, value):
    if isinstance(value, list):
        for v in value:
            _check_ints(name, v)
        return
    if isinstance(value, bool) or value is None:
        raise SpecvizError(name, f"holds {value!r}: give whole numbers (or token labels)")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise SpecvizError(name, f"holds {value!r}: give whole numbers (these are indices, tokens or lengths)")
    elif not isinstance(value, (int, np.integer)):
        raise SpecvizError(name, f"holds {value!r}: give whole numbers (or token labels)")


def _ints(value):
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return int(value)


def _depth(value) -> int:
    d = 0
    while isinstance(value, list):
        d += 1
        value = value[0] if value else None
    return d


def _per_request(name: str, value, bs: int) -> list:
    """[bs] field: scalar ok when bs == 1; [bs, 1] flattened."""
    if not isinstance(value, list):
        value = [value]
    if value and all(isinstance(v, list) and len(v) == 1 for v in value):
        value = [v[0] for v in value]
    if _depth(value) != 1:
        raise SpecvizError(name, f"must be one number per request ([bs] = [{bs}])")
    if len(value) != bs:
        raise SpecvizError(name, f"has {len(value)} entries but the batch has bs = {bs} requests: one per request")
    return value


def _matrix(name: str, value, bs: int, width: int | None, what: str) -> list:
    """[bs, width] field: a flat list is accepted when bs == 1."""
    if not isinstance(value, list):
        raise SpecvizError(name, f"must be a list ({what})")
    if bs == 1 and _depth(value) == 1:
        value = [value]
    if _depth(value) != 2 or any(not isinstance(r, list) for r in value):
        raise SpecvizError(name, f"must be a 2-D list [bs, ...] ({what})")
    if len(value) != bs:
        raise SpecvizError(name, f"has {len(value)} rows but the batch has bs = {bs} requests ({what})")
    if width is not None:
        for b, r in enumerate(value):
            if len(r) != width:
                raise SpecvizError(f"{name}[{b}]", f"has {len(r)} entries but should have {width} ({what})")
    return value


def _ragged(name: str, value, bs: int, what: str) -> list:
    """Per request a list of any length; a flat list is accepted when bs == 1."""
    if not isinstance(value, list):
        raise SpecvizError(name, f"must be a list ({what})")
    if bs == 1 and _depth(value) <= 1:
        value = [value]
    if len(value) != bs or any(not isinstance(r, list) for r in value):
        raise SpecvizError(name, f"must hold one list per request (bs = {bs}) ({what})")
    return value


def normalise_claimed(s: Scenario, claimed: dict) -> dict:
    """Canonical names and shapes, labels -> ids; raises SpecvizError naming the field."""
    if not isinstance(claimed, dict):
        raise SpecvizError("claimed", "must be an object {field: array}")
    allowed = auditable_fields(s)
    bs, n, W = len(s.requests), s.n, s.width
    out = {}
    for raw_name, value in claimed.items():
        name = ALIASES.get(raw_name, raw_name)
        if name == "commit_lens" and "accept_lens" in allowed and not s.algorithm.startswith("dspark"):
            name = "accept_lens"
        if name == "accept_lens" and s.algorithm.startswith("dspark"):
            name = "commit_lens"
        if name not in allowed:
            raise SpecvizError(f"claimed.{raw_name}", f"is not an output of {s.algorithm}: audit one of {', '.join(allowed)}")
        if name in out:
            raise SpecvizError(f"claimed.{raw_name}", f"is given twice (as {name!r} under another name)")
        if isinstance(value, str) and not (name in TOKEN_FIELDS and value in s.vocab):
            value = parse_array(value, raw_name)
        if name in TOKEN_FIELDS:
            value = _to_ids(s, raw_name, value)
        _check_ints(raw_name, value)
        value = _ints(value)
        if name in ("accept_token_num", "accept_lens", "commit_lens", "correct_len", "bonus", "new_seq_lens"):
            value = _per_request(raw_name, value, bs)
        elif name == "accept_index":
            width = n if s.algorithm == "dspark_sampling" else W
            value = _matrix(raw_name, value, bs, None, f"[bs, W] = [{bs}, {width}]: global rows, -1 padded")
        elif name == "accept_tokens":
            value = _matrix(raw_name, value, bs, None, f"[bs, W] = [{bs}, {W}]")
        elif name == "out_tokens":
            value = _matrix(raw_name, value, bs, None, f"[bs, T] = [{bs}, {n}]")
        elif name == "predicts":
            if _depth(value) == 2:
                value = [v for r in value for v in r]
            if _depth(value) != 1:
                raise SpecvizError(raw_name, f"must be the flat [bs*n] = [{bs * n}] list (or [bs, n])")
            if len(value) != bs * n:
                raise SpecvizError(raw_name, f"has {len(value)} entries but bs*n = {bs * n}: one per verify row, request-major")
        else:  # outputs, committed_rows, committed_tokens
            value = _ragged(raw_name, value, bs, "one list per request")
        out[name] = value
    return out


# ---------------------------------------------------------------------------------------------
# Expected values and explanations
# ---------------------------------------------------------------------------------------------


class _Ctx:
    """Everything the rule sentences need about the reference run. ``lang`` picks the language of
    the sentences ("en" or "zh"); ``t(en, zh)`` returns the one in use."""

    def __init__(self, s: Scenario, run: Run, lang: str = "en"):
        self.s, self.run = s, run
        self.lang = lang
        self.bs, self.n, self.W = len(s.requests), s.n, s.width
        self.cand = run.inputs["candidates"]  # [bs, n]
        self.res = run.result
        self.commits = run.commits
        self.dspark = s.algorithm.startswith("dspark")

    def t(self, en: str, zh: str) -> str:
        return zh if self.lang == "zh" else en

    def lab(self, tok) -> str:
        return self.s.label(int(tok))

    def row_name(self, g: int) -> str:
        word = self.t("row", "第")
        if g < 0 or g >= self.bs * self.n:
            return self.t(f"row {g}", f"第 {g} 行")
        b, i = divmod(g, self.n)
        return self.t(f"row {g} ({self.lab(self.cand[b, i])})", f"{word} {g} 行（{self.lab(self.cand[b, i])}）")

    def rows_text(self, rows) -> str:
        return "[" + ", ".join(str(r) for r in rows) + "]"

    def toks(self, ids) -> str:
        return "[" + ", ".join(self.lab(t) for t in ids) + "]"

    def level_reason(self, b: int, level: int) -> str:
        """One clause: what decided level ``level`` of request b in the reference run."""
        t = self.t
        c = self.commits[b]
        k = c.num_correct_drafts
        ev = [e for e in (self.run.trace.events if self.run.trace else []) if e.request == b]
        prev_node = c.accept_nodes[level - 1] if level - 1 < len(c.accept_nodes) else None
        prev_row = c.accept_rows[level - 1] if level - 1 < len(c.accept_rows) else None
        if level <= k:
            node = c.accept_nodes[level]
            tok = self.lab(self.cand[b, node])
            if self.s.algorithm == "greedy":
                par = self.lab(self.cand[b, prev_node])
                return t(f"at level {level} the target predicts {tok} after {self.row_name(prev_row)}, and node {node} ({tok}) "
                         f"is the first child of {par} with that token",
                         f"第 {level} 层 Target 在{self.row_name(prev_row)}之后预测 {tok}，节点 {node}（{tok}）是 {par} "
                         f"的子节点中第一个带有该 token 的")
            test = [e for e in ev if e.kind == "accept_test" and e.node == node and e.data.get("accepted")]
            if test and self.s.algorithm == "target_only":
                d = test[-1].data
                op = "<" if self.s.semantics == "0.5.23" else "<="
                if d.get("single_fired"):
                    why_en = f"p = {d['p']:.4g} >= threshold_single"
                    why_zh = f"p = {d['p']:.4g} >= threshold_single"
                else:
                    why_en = f"coin {d['coin']:.4g} {op} running sum {d['prob_acc']:.4g} / threshold_acc = {d['bound']:.4g}"
                    why_zh = f"coin {d['coin']:.4g} {op} 累计概率 {d['prob_acc']:.4g} / threshold_acc = {d['bound']:.4g}"
                return t(f"at level {level} node {node} ({tok}) is accepted because {why_en}",
                         f"第 {level} 层节点 {node}（{tok}）被接受，因为 {why_zh}")
            if test:
                d = test[-1].data
                return t(f"at slot {level} u*q = {d['u_times_q']:.4g} < p = {d['p']:.4g}, so {tok} is accepted",
                         f"第 {level} 个位置 u*q = {d['u_times_q']:.4g} < p = {d['p']:.4g}，所以 {tok} 被接受")
            if self.dspark:
                return t(f"draft {level} ({tok}) is in the leading run of matches", f"Draft {level}（{tok}）位于从头开始的连续匹配中")
            return t(f"node {node} ({tok}) is accepted at level {level}", f"节点 {node}（{tok}）在第 {level} 层被接受")
        # level > k: the walk stopped before this level
        if k == self.W - 1:
            return t(f"the depth limit W-1 = {self.W - 1} accepted drafts was reached",
                     f"已接受 W-1 = {self.W - 1} 个 Draft，达到深度上限")
        node = c.accept_nodes[-1]
        nlab = self.lab(self.cand[b, node])
        if self.s.algorithm == "greedy":
            tp = self.lab(self.run.inputs["target_predict"].reshape(-1)[c.accept_rows[-1]])
            if not self.s.tree(b).children(node):
                return t(f"node {node} ({nlab}) has no child, so the walk stops after {k} accepted drafts",
                         f"节点 {node}（{nlab}）没有子节点，遍历在接受 {k} 个 Draft 后停止")
            return t(f"the target predicts {tp} after {self.row_name(c.accept_rows[-1])} and no child of {nlab} carries {tp}, "
                     f"so the walk stops after {k} accepted drafts",
                     f"Target 在{self.row_name(c.accept_rows[-1])}之后预测 {tp}，而 {nlab} 没有带 {tp} 的子节点，"
                     f"遍历在接受 {k} 个 Draft 后停止")
        rej = [e for e in ev if e.kind == "accept_test" and not e.data.get("accepted")]
        if self.s.algorithm == "target_only":
            if not self.s.tree(b).children(node):
                return t(f"node {node} has no child, so the walk stops after {k} accepted drafts",
                         f"节点 {node} 没有子节点，遍历在接受 {k} 个 Draft 后停止")
            coin = float(self.s.requests[b].coins[node])
            return t(f"every child of {nlab} is rejected by the coin {coin:.4g}, so the walk stops after {k} accepted drafts",
                     f"{nlab} 的每个子节点都被 coin {coin:.4g} 拒绝，遍历在接受 {k} 个 Draft 后停止")
        if rej:
            d = rej[-1].data
            op = "0 < q and u*q < p" if self.s.semantics == "0.5.23" else "u*q < p"
            tok = self.lab(d["token"])
            return t(f"at slot {k + 1} u*q = {d['u_times_q']:.4g} vs p = {d['p']:.4g} fails {op}, so {tok} is rejected and "
                     f"the walk stops after {k} accepted drafts",
                     f"第 {k + 1} 个位置 u*q = {d['u_times_q']:.4g}、p = {d['p']:.4g}，不满足 {op}，所以 {tok} 被拒绝，"
                     f"遍历在接受 {k} 个 Draft 后停止")
        return t(f"the walk stops after {k} accepted drafts", f"遍历在接受 {k} 个 Draft 后停止")


def _eagle_expected(ctx: _Ctx) -> dict:
    r = ctx.res
    exp = {}
    for key in ("accept_index", "accept_token_num", "predicts"):
        if key in r:
            exp[key] = np.asarray(r[key]).astype(np.int64).tolist()
    if "accept_token_num" in r and not ctx.dspark:
        al = np.asarray(r["accept_token_num"]) + 1
        exp["accept_lens"] = al.tolist()
        exp["accept_tokens"] = gather_accept_tokens(r["predicts"], r["accept_index"], al).tolist()
    exp["outputs"] = [list(c.output_tokens) for c in ctx.commits]
    exp["bonus"] = [int(c.next_root) for c in ctx.commits]
    exp["new_seq_lens"] = [int(c.new_seq_len) for c in ctx.commits]
    exp["committed_rows"] = [list(c.accept_rows) for c in ctx.commits]
    exp["committed_tokens"] = [list(c.committed_tokens) for c in ctx.commits]
    if ctx.dspark:
        exp["correct_len"] = np.asarray(r["correct_len"]).astype(int).tolist()
        exp["commit_lens"] = np.asarray(r["commit_lens"]).astype(int).tolist()
        exp["out_tokens"] = np.asarray(r["out_tokens"]).astype(int).tolist()
    return exp


def _finding(ctx: _Ctx, name: str, got, exp) -> AuditFinding | None:
    """Compare one field; return the first wrong value with its rule, or None."""
    s, bs, n, W, t = ctx.s, ctx.bs, ctx.n, ctx.W, ctx.t
    if name == "accept_index":
        return _accept_index_finding(ctx, got, exp)
    if name in ("accept_token_num", "correct_len", "accept_lens", "commit_lens", "bonus", "new_seq_lens"):
        for b in range(bs):
            if got[b] == exp[b]:
                continue
            c = ctx.commits[b]
            k = c.num_correct_drafts
            if name == "accept_token_num":
                reason = ctx.level_reason(b, k + 1 if k + 1 < W else k)
                rule = t(f"it counts accepted drafts only (the root and the bonus are not counted): {k}, because {reason}",
                         f"它只统计被接受的 Draft（root 与 bonus 都不计入）：{k}，因为{reason}")
                if got[b] == k + 1:
                    rule = t(f"that is accept_lens; accept_token_num counts accepted drafts only, k = accept_lens - 1 = {k}",
                             f"这是 accept_lens；accept_token_num 只统计被接受的 Draft，k = accept_lens - 1 = {k}")
            elif name == "correct_len":
                rule = _correct_len_rule(ctx, b, got[b])
            elif name == "accept_lens":
                rule = t(f"accept_lens is num_correct_drafts + 1 = {k} + 1 = {k + 1} (the accepted drafts plus the bonus)",
                         f"accept_lens = num_correct_drafts + 1 = {k} + 1 = {k + 1}（被接受的 Draft 加上 bonus）")
            elif name == "commit_lens":
                rule = t(f"commit_lens is correct_len + 1 = {k} + 1 = {k + 1}: the anchor plus the accepted drafts keep their KV",
                         f"commit_lens = correct_len + 1 = {k} + 1 = {k + 1}：anchor 与被接受的 Draft 保留 KV")
            elif name == "bonus":
                e = ctx.lab(exp[b])
                if ctx.dspark and s.algorithm == "dspark_greedy":
                    rule = t(f"the bonus is target_predict[correct_len = {k}] = {e}", f"bonus 是 target_predict[correct_len = {k}] = {e}")
                elif ctx.dspark:
                    rule = t(f"the bonus is the two-level gather predicts[accept_index[{b}][correct_len = {k}]] = {e}",
                             f"bonus 由两级 gather 得到：predicts[accept_index[{b}][correct_len = {k}]] = {e}")
                else:
                    rule = t(f"the bonus is the last emitted token, predicts at the last accepted row {c.accept_rows[-1]} = {e}, "
                             f"and it becomes the next root",
                             f"bonus 是最后一个输出 token，即最后一个被接受行 {c.accept_rows[-1]} 的 predicts = {e}，它将成为下一轮的 root")
                return AuditFinding(name, (b,), ctx.lab(exp[b]), ctx.lab(got[b]), rule, b, c.accept_nodes[-1], c.accept_rows[-1])
            else:
                rule = t(f"new_seq_lens = seq_len + accept_lens = {c.seq_len} + {k + 1} = {c.new_seq_len}: the bonus has no KV yet",
                         f"new_seq_lens = seq_len + accept_lens = {c.seq_len} + {k + 1} = {c.new_seq_len}：bonus 还没有 KV")
            return AuditFinding(name, (b,), exp[b], got[b], rule, b, None, None)
        return None
    if name == "predicts":
        return _predicts_finding(ctx, got, exp)
    if name == "accept_tokens":
        for b in range(bs):
            if len(got[b]) != len(exp[b]):
                return AuditFinding(name, (b,), len(exp[b]), len(got[b]),
                                    t(f"accept_tokens has W = {W} slots per request, like accept_index",
                                      f"accept_tokens 每个请求有 W = {W} 个位置，与 accept_index 相同"), b)
            for j, (g, e) in enumerate(zip(got[b], exp[b])):
                if g == e:
                    continue
                c = ctx.commits[b]
                if e == -1:
                    raw = ctx.res["predicts"].reshape(-1)[-1]
                    rule = t(f"slot {j} is beyond accept_lens = {c.accept_len}, so it is -1",
                             f"第 {j} 个位置超出 accept_lens = {c.accept_len}，所以是 -1")
                    if g == raw:
                        rule += t(f"; {ctx.lab(g)} is predicts[-1], the last element of the whole tensor: the gather went through "
                                  f"a -1 pad. Gather only the first accept_lens slots",
                                  f"；{ctx.lab(g)} 是 predicts[-1]，即整个张量的最后一个元素：gather 穿过了 -1 填充位。"
                                  f"只 gather 前 accept_lens 个位置")
                    return AuditFinding(name, (b, j), -1, g if g < 0 else ctx.lab(g), rule, b)
                row = c.accept_rows[j]
                return AuditFinding(name, (b, j), ctx.lab(e), ctx.lab(g) if g >= 0 else g,
                                    f"accept_tokens[{b}][{j}] = predicts[accept_index[{b}][{j}] = {row}] = {ctx.lab(e)}",
                                    b, c.accept_nodes[j], row)
        return None
    if name in ("outputs", "committed_rows", "committed_tokens"):
        for b in range(bs):
            g, e = list(got[b]), list(exp[b])
            if g == e:
                continue
            c = ctx.commits[b]
            j = next((i for i, (x, y) in enumerate(zip(g, e)) if x != y), min(len(g), len(e)))
            node = c.accept_nodes[j] if j < len(c.accept_nodes) else None
            row = c.accept_rows[j] if j < len(c.accept_rows) else None
            if name == "outputs":
                if g == list(c.committed_tokens):
                    rule = t(f"{ctx.toks(g)} are the committed input tokens (root + accepted drafts); the outputs are the "
                             f"predictions at those rows, shifted by one position: {ctx.toks(e)}",
                             f"{ctx.toks(g)} 是被提交的输入 token（root + 被接受的 Draft）；输出是这些行的预测，"
                             f"错开一个位置：{ctx.toks(e)}")
                elif len(e) > 1 and g == e[1:]:
                    rule = t(f"the first output {ctx.lab(e[0])} is missing: it is the root's prediction (predicts at row "
                             f"{c.accept_rows[0]}), so the outputs are {ctx.toks(e)}",
                             f"缺少第一个输出 {ctx.lab(e[0])}：它是 root 的预测（第 {c.accept_rows[0]} 行的 predicts），"
                             f"所以输出是 {ctx.toks(e)}")
                elif len(g) == len(e) - 1 and g == e[:-1]:
                    rule = t(f"the bonus {ctx.lab(e[-1])} is missing: accept_lens = {c.accept_len} tokens are emitted, the "
                             f"accepted drafts plus the bonus",
                             f"缺少 bonus {ctx.lab(e[-1])}：共输出 accept_lens = {c.accept_len} 个 token，即被接受的 Draft 加上 bonus")
                else:
                    rule = t(f"the outputs are predicts at the accepted rows {ctx.rows_text(c.accept_rows)}: the accepted drafts "
                             f"then the bonus, {ctx.toks(e)}",
                             f"输出是被接受行 {ctx.rows_text(c.accept_rows)} 的 predicts：先是被接受的 Draft，再是 bonus，{ctx.toks(e)}")
                return AuditFinding(name, (b,), ctx.toks(e), ctx.toks(g), rule, b, node, row)
            if name == "committed_tokens":
                if g == list(c.output_tokens):
                    nr = ctx.lab(c.next_root)
                    rule = t(f"{ctx.toks(g)} are the output tokens; KV is kept for the input rows root + accepted drafts "
                             f"{ctx.toks(e)}: the root's KV is written now, the bonus {nr} gets its KV next round",
                             f"{ctx.toks(g)} 是输出 token；保留 KV 的是输入行 root + 被接受的 Draft {ctx.toks(e)}："
                             f"root 的 KV 在本轮写入，bonus {nr} 在下一轮才有 KV")
                else:
                    rule = t(f"KV is kept for the verify rows of the root and the accepted drafts: {ctx.toks(e)}",
                             f"保留 KV 的是 root 与被接受 Draft 的验证行：{ctx.toks(e)}")
                return AuditFinding(name, (b,), ctx.toks(e), ctx.toks(g), rule, b, node, row)
            # committed_rows
            if g == [r - b * n for r in e] and b > 0:
                rule = t(f"these are request {b}'s local node ids; rows are global, b*n + i = {b}*{n} + i: {ctx.rows_text(e)}",
                         f"这些是请求 {b} 的局部节点号；行号是全局的，b*n + i = {b}*{n} + i：{ctx.rows_text(e)}")
            elif g == e[1:]:
                rule = t(f"the root's row {e[0]} is missing: the root's KV does not exist yet, it is written in this verify pass",
                         f"缺少 root 的第 {e[0]} 行：root 的 KV 此前并不存在，它在本轮 Verify 中写入")
            else:
                rule = t(f"KV is kept for the root row and the accepted drafts' rows {ctx.rows_text(e)}; every other row is discarded",
                         f"保留 KV 的是 root 行与被接受 Draft 的行 {ctx.rows_text(e)}；其余行都被丢弃")
            return AuditFinding(name, (b,), e, g, rule, b, node, row)
        return None
    if name == "out_tokens":
        for b in range(bs):
            for j, (g, e) in enumerate(zip(got[b], exp[b])):
                if g != e:
                    k = ctx.commits[b].num_correct_drafts
                    if j == k:
                        rule = t(f"column correct_len = {k} holds the bonus {ctx.lab(e)}", f"第 correct_len = {k} 列存放 bonus {ctx.lab(e)}")
                    elif j < k:
                        rule = t(f"columns before correct_len = {k} hold the accepted drafts", f"correct_len = {k} 之前的列存放被接受的 Draft")
                    elif j == n - 1:
                        rule = t("the last column starts as 0 (out[:, gamma] = 0) and only the bonus is scattered",
                                 "最后一列初始为 0（out[:, gamma] = 0），只有 bonus 会被 scatter 进来")
                    else:
                        rule = t("columns after correct_len keep the stale draft tokens (only the first commit_lens entries are output)",
                                 "correct_len 之后的列保留旧的 Draft token（只有前 commit_lens 个是输出）")
                    return AuditFinding(name, (b, j), e, g, rule, b, j, b * n + j)
            if len(got[b]) != len(exp[b]):
                return AuditFinding(name, (b,), len(exp[b]), len(got[b]),
                                    t(f"out_tokens has T = {n} columns per request", f"out_tokens 每个请求有 T = {n} 列"), b)
        return None
    raise AssertionError(name)


def _accept_index_finding(ctx: _Ctx, got, exp) -> AuditFinding | None:
    n, t = ctx.n, ctx.t
    for b in range(ctx.bs):
        g, e = list(got[b]), list(exp[b])
        c = ctx.commits[b]
        valid = c.accept_rows
        root = b * n
        g_valid = [x for x in g if x != -1]
        # Whole-row diagnoses first: they explain the bug better than the first differing slot.
        if g != e:
            if g_valid == valid[1:] and len(valid) > 1:
                return AuditFinding("accept_index", (b, 0), root, g[0] if g else None,
                                    t(f"accept_index lists draft rows {ctx.rows_text(valid[1:])} only: the root's row {root} comes "
                                      f"first, because the root's prediction is the first output",
                                      f"accept_index 只列出了 Draft 行 {ctx.rows_text(valid[1:])}：root 的第 {root} 行必须排在最前，"
                                      f"因为 root 的预测就是第一个输出"), b, 0, root)
            if b > 0 and g_valid == [r - root for r in valid]:
                return AuditFinding("accept_index", (b, 0), root, g[0],
                                    t(f"accept_index[{b}] holds local node ids {ctx.rows_text(g_valid)}: accept_index holds global "
                                      f"rows b*n + i = {b}*{n} + i, so request {b}'s rows are {ctx.rows_text(valid)}",
                                      f"accept_index[{b}] 存的是局部节点号 {ctx.rows_text(g_valid)}：accept_index 存全局行号 "
                                      f"b*n + i = {b}*{n} + i，所以请求 {b} 的行是 {ctx.rows_text(valid)}"), b, 0, root)
        if len(g) != len(e) and not (ctx.s.algorithm == "dspark_sampling"):
            return AuditFinding("accept_index", (b,), len(e), len(g),
                                t(f"accept_index has W = {len(e)} slots per request (root + up to {len(e) - 1} accepted drafts), "
                                  f"-1 padded",
                                  f"accept_index 每个请求有 W = {len(e)} 个位置（root + 最多 {len(e) - 1} 个被接受的 Draft），用 -1 填充"), b)
        for j in range(min(len(g), len(e))):
            if ctx.s.algorithm == "dspark_sampling" and j >= len(valid):
                break  # SGLang leaves these entries uninitialised
            if g[j] == e[j]:
                continue
            if j == 0:
                rule = t(f"slot 0 is always the root's global row b*n = {root}: the root's prediction is the first output",
                         f"第 0 个位置总是 root 的全局行号 b*n = {root}：root 的预测就是第一个输出")
                return AuditFinding("accept_index", (b, 0), e[0], g[0], rule, b, 0, root)
            if e[j] == -1:
                rule = t(f"slots after the last accepted node are padded with -1: {ctx.level_reason(b, j)}",
                         f"最后一个被接受节点之后的位置用 -1 填充：{ctx.level_reason(b, j)}")
                return AuditFinding("accept_index", (b, j), -1, g[j], rule, b, c.accept_nodes[-1], c.accept_rows[-1])
            node = e[j] - root
            if g[j] == node and b > 0:
                rule = t(f"{g[j]} is a local node id; accept_index holds global rows b*n + i = {b}*{n} + {node} = {e[j]}",
                         f"{g[j]} 是局部节点号；accept_index 存全局行号 b*n + i = {b}*{n} + {node} = {e[j]}")
            else:
                rule = t(f"{ctx.level_reason(b, j)}, so slot {j} holds its global row {e[j]}",
                         f"{ctx.level_reason(b, j)}，所以第 {j} 个位置是它的全局行号 {e[j]}")
            return AuditFinding("accept_index", (b, j), e[j], g[j], rule, b, node, e[j])
    return None


def _predicts_finding(ctx: _Ctx, got, exp) -> AuditFinding | None:
    t = ctx.t
    for b in range(ctx.bs):
        c = ctx.commits[b]
        for j, row in enumerate(c.accept_rows):
            g, e = got[row], exp[row]
            if g == e:
                continue
            node = c.accept_nodes[j]
            own = ctx.lab(ctx.cand[b, node])
            last = j == len(c.accept_rows) - 1
            gl = f"{g}{f' ({ctx.lab(g)})' if 0 <= g < len(ctx.s.vocab) else ''}"
            if last:
                rule = t(f"predicts[{row}] is {gl}: the bonus {ctx.lab(e)} is written at the last accepted row {row} ({own})",
                         f"predicts[{row}] 是 {gl}：bonus {ctx.lab(e)} 应写在最后一个被接受的第 {row} 行（{own}）")
            elif ctx.lab(g) == own and 0 <= g < len(ctx.s.vocab):
                rule = t(f"{own} is row {row}'s own input token: predicts[g] is the token emitted AFTER row g, "
                         f"i.e. the next accepted node's token {ctx.lab(e)} (the one-position shift)",
                         f"{own} 是第 {row} 行自己的输入 token：predicts[g] 是第 g 行之后输出的 token，"
                         f"即下一个被接受节点的 token {ctx.lab(e)}（错开一个位置）")
            else:
                rule = t(f"predicts[{row}] is the token emitted after row {row}: the next accepted node's token {ctx.lab(e)}",
                         f"predicts[{row}] 是第 {row} 行之后输出的 token：下一个被接受节点的 token {ctx.lab(e)}")
            return AuditFinding("predicts", (row,), ctx.lab(e), ctx.lab(g) if g >= 0 else g, rule, b, node, row)
    return None


def _correct_len_rule(ctx: _Ctx, b: int, got: int) -> str:
    t = ctx.t
    cand = ctx.cand[b]
    k = ctx.commits[b].num_correct_drafts
    if ctx.s.algorithm == "dspark_greedy":
        tp = ctx.run.inputs["target_predict"][b]
        match = [bool(cand[i + 1] == tp[i]) for i in range(len(cand) - 1)]
        raw = int(ctx.res.get("raw_correct_len", ctx.res["correct_len"])[b])
        first_miss = match.index(False) + 1 if False in match else None
        if got == sum(match) and got != k:
            return t(f"correct_len is the length of the LEADING run of matches; {got} counts every match, but the first "
                     f"mismatch is at draft {first_miss}, so the later matches are ignored: {k}",
                     f"correct_len 是从头开始连续匹配的长度；{got} 把所有匹配都算上了，但第一个不匹配出现在 Draft {first_miss}，"
                     f"之后的匹配都被忽略：{k}")
        if raw != k:
            return t(f"the window cap min(correct_len, verify_len - 1) = min({raw}, {k}) cuts it to {k}",
                     f"窗口上限 min(correct_len, verify_len - 1) = min({raw}, {k}) 把它截为 {k}")
        if first_miss is not None:
            d, tg = ctx.lab(cand[first_miss]), ctx.lab(tp[first_miss - 1])
            return t(f"correct_len is the leading run of matches candidates[t+1] == target_predict[t]: draft {first_miss} ({d}) "
                     f"differs from target_predict[{first_miss - 1}] = {tg}, so {k}",
                     f"correct_len 是 candidates[t+1] == target_predict[t] 从头开始连续成立的长度：Draft {first_miss}（{d}）"
                     f"与 target_predict[{first_miss - 1}] = {tg} 不同，所以是 {k}")
        return t(f"correct_len is the leading run of matches candidates[t+1] == target_predict[t]: every draft matches, {k}",
                 f"correct_len 是 candidates[t+1] == target_predict[t] 从头开始连续成立的长度：所有 Draft 都匹配，{k}")
    reason = ctx.level_reason(b, k + 1 if k + 1 < ctx.n else k)
    return t(f"correct_len = accept_token_num of the chain sampler: {k}, because {reason}",
             f"correct_len 等于链式采样的 accept_token_num：{k}，因为{reason}")


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def audit(scenario: Scenario, claimed: dict, run: Run | None = None) -> AuditReport:
    """Check ``claimed`` outputs against the numpy reference for ``scenario``.

    ``claimed`` maps field names (see the module docstring; aliases accepted) to lists, ints or
    pasted text. Raises SpecvizError for malformed claims (wrong shape, unknown field); wrong
    values are findings, not errors.
    """
    if not isinstance(scenario, Scenario):
        raise SpecvizError("scenario", "must be a specviz Scenario (load it with specviz.scenario.load_scenario)")
    norm = normalise_claimed(scenario, claimed)
    run = run if run is not None else run_scenario(scenario, "numpy")
    ctx = _Ctx(scenario, run)
    ctx_zh = _Ctx(scenario, run, lang="zh")
    expected = _eagle_expected(ctx)
    checked, findings = [], []
    for name in auditable_fields(scenario):
        if name not in norm:
            continue
        checked.append(name)
        f = _finding(ctx, name, norm[name], expected[name])
        if f is not None:
            f_zh = _finding(ctx_zh, name, norm[name], expected[name])
            findings.append(dataclasses.replace(f, rule_zh=f_zh.rule if f_zh is not None else ""))
    notes = []
    if "predicts" in norm:
        notes.append("predicts is checked on the accepted rows only; the other rows keep an implementation-defined initial value.")
    return AuditReport(scenario=scenario, run=run, checked=checked, findings=findings, notes=notes)


def expected_outputs(scenario: Scenario, run: Run | None = None) -> dict:
    """The reference values of every auditable field (canonical shapes, token ids)."""
    run = run if run is not None else run_scenario(scenario, "numpy")
    exp = _eagle_expected(_Ctx(scenario, run))
    return {k: exp[k] for k in auditable_fields(scenario) if k in exp}


def row_outputs(run: Run) -> list:
    """The token each committed verify row emits, flat over global rows [bs*n] (0 elsewhere).

    EAGLE: predicts at the accepted rows; DSpark (no predicts for greedy): out_tokens[t] at row t of
    the committed prefix. Used by the shift table (input row -> output)."""
    n = run.scenario.n
    out = [0] * (len(run.commits) * n)
    for c in run.commits:
        for node, tok in zip(c.accept_nodes, c.output_tokens):
            out[c.request * n + node] = int(tok)
    return out


def load_audit_request(data: dict, base_dir: str = ".") -> tuple[Scenario, dict]:
    """{"scenario": {...}} or {"scenario_file": path} plus {"claimed": {...}} -> (Scenario, claimed)."""
    if not isinstance(data, dict):
        raise SpecvizError("audit file", "must hold a JSON object with 'scenario' (or 'scenario_file') and 'claimed'")
    extra = set(data) - {"scenario", "scenario_file", "claimed", "comment"}
    if extra:
        raise SpecvizError(f"audit file.{sorted(extra)[0]}", "is not a known key: use 'scenario' or 'scenario_file', and 'claimed'")
    if "scenario" in data and "scenario_file" in data:
        raise SpecvizError("audit file", "gives both 'scenario' and 'scenario_file': give one")
    if "scenario" in data:
        s = scenario_from_dict(data["scenario"])
    elif "scenario_file" in data:
        path = data["scenario_file"]
        if not isinstance(path, str):
            raise SpecvizError("scenario_file", "must be a path string")
        if not os.path.isabs(path):
            path = os.path.join(base_dir, path)
            if not os.path.exists(path):
                path = data["scenario_file"]
        s = load_scenario(path)
    else:
        raise SpecvizError("audit file", "needs 'scenario' (the inputs) or 'scenario_file' (a path to a scenario JSON)")
    if "claimed" not in data:
        raise SpecvizError("claimed", "is missing: give the outputs to check, e.g. {\"accept_index\": [[0, 1, 3]]}")
    claimed = data["claimed"]
    if isinstance(claimed, str):
        claimed = parse_claimed_text(claimed)
    return s, claimed


def audit_file(path) -> AuditReport:
    """Audit a JSON file {"scenario": {...} | "scenario_file": "path", "claimed": {...}} (the CLI's entry)."""
    text = read_text_file(path, "file", MAX_SCENARIO_CHARS + MAX_PASTE_CHARS)
    data = loads_json(text, "file", MAX_SCENARIO_CHARS + MAX_PASTE_CHARS)
    s, claimed = load_audit_request(data, os.path.dirname(os.path.abspath(str(path))))
    return audit(s, claimed)


# ---------------------------------------------------------------------------------------------
# Quiz: the student predicts a field before the reveal; the audit engine checks the answer
# ---------------------------------------------------------------------------------------------

QUIZ_FIELDS = ("accept_index", "outputs", "committed_rows", "correct_len")


def quiz_fields(s: Scenario) -> tuple:
    """The fields a student can predict for this scenario (in the order the page offers them)."""
    if s.algorithm.startswith("dspark"):
        return ("correct_len", "outputs", "committed_rows")
    return ("accept_index", "outputs", "committed_rows")


def check_answer(s: Scenario, field_name: str, answer_text: str, run: Run | None = None) -> AuditReport:
    """Parse a typed answer (e.g. ``[0, 1, 3]`` or ``A C X``) and audit that one field."""
    if field_name not in quiz_fields(s):
        raise SpecvizError("quiz", f"{field_name!r} cannot be asked for {s.algorithm}: ask one of {', '.join(quiz_fields(s))}")
    text = answer_text.strip() if isinstance(answer_text, str) else ""
    if not text:
        raise SpecvizError(field_name, "is empty: type your prediction first, e.g. [0, 1, 3]")
    if not text.startswith(("[", "(")) and re.fullmatch(r"[^\[\]()]+", text):
        text = "[" + ", ".join(re.split(r"[\s,]+", text.strip())) + "]"  # "A C X" or "0 1 3" -> a list
    value = parse_array(text, field_name)
    if field_name == "correct_len" and isinstance(value, list) and len(value) == 1 and not isinstance(value[0], list):
        value = value[0]
    return audit(s, {field_name: value}, run=run)


def quiz_scenario(seed: int) -> Scenario:
    """A random greedy question on a small tree (deterministic in ``seed``)."""
    rng = np.random.default_rng(int(seed))
    shapes = [
        ([-1, 0, 0, 1, 1], ["R", "A", "B", "C", "D"]),
        ([-1, 0, 0, 1, 1, 2], ["R", "A", "B", "C", "D", "E"]),
        ([-1, 0, 0, 0, 1, 2], ["R", "A", "B", "C", "D", "E"]),
        ([-1, 0, 0, 1, 1, 3, 3], ["R", "A", "B", "C", "D", "E", "F"]),
    ]
    parents, tokens = shapes[int(rng.integers(len(shapes)))]
    vocab = ["A", "B", "C", "D", "E", "F", "X", "R"]
    kids = {i: [c for c in range(len(parents)) if parents[c] == i] for i in range(len(parents))}
    predict = []
    for i in range(len(parents)):
        if kids[i] and rng.random() < 0.7:
            predict.append(tokens[kids[i][int(rng.integers(len(kids[i])))]])
        else:
            predict.append(["X", "F", "E"][int(rng.integers(3))] if rng.random() < 0.8 else "X")
    depth = [0] * len(parents)
    for i in range(1, len(parents)):
        depth[i] = depth[parents[i]] + 1
    return scenario_from_dict({
        "name": f"quiz_{int(seed)}", "title": f"Random greedy question #{int(seed)}",
        "description": "A random tree with random target predictions: predict the accepted path before the reveal.",
        "algorithm": "greedy", "vocab": vocab,
        "requests": [{"tree": {"parents": parents, "tokens": tokens}, "seq_len": int(rng.integers(5, 30)),
                      "target_predict": predict}],
        "num_speculative_tokens": max(depth) + 1})
