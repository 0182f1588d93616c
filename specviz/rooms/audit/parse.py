"""Pasted text -> nested lists, without ``eval``: one array (parse_array) or several named
fields (parse_claimed_text), with the size and depth limits of a paste."""
from __future__ import annotations

import json
import re

from specviz.base.errors import SpecvizError
from specviz.base.safety import bounded_int, loads_json

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
