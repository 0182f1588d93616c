"""Untrusted text stays data: the one place each escaping and bounding rule lives.

Everything that comes from outside (share links, uploaded or CLI files, pasted arrays, token
labels, titles, descriptions) passes through one of these before it reaches markup, DOT, a
script, generated Python, ``int()`` or ``json.loads``:

    html_text(x)            text for HTML (element content or a quoted attribute; markdown-inert too)
    md_text(x) / md_prose(x)  a label / a title or description inside Streamlit markdown
    table_cell(x)           a cell of a table Streamlit renders as markdown (st.table)
    no_autolink(x)          bare URLs / e-mail addresses never become links (all the above apply it)
    visible_text(x)         control and bidi characters shown as escapes (the schema's one validation point)
    plotly_text(x)          a label for plotly (which reads <a>, <span style>, <br> in text)
    dot_quote(x)            a DOT double-quoted string (never an HTML-like <...> label)
    json_for_script(obj)    JSON that is safe inside <script> (no </script>, <!--, U+2028/9)
    bounded_int(text, ...)  int() that refuses too many digits before converting
    loads_json(text, ...)   json.loads with a size, nesting-depth and integer-digit limit checked first (linear scan)
    read_text_file(path, ...)  a regular file's UTF-8 text, at most max_bytes, read once

No streamlit, numpy or torch here. Every refusal is a SpecvizError naming the field.
"""
from __future__ import annotations

import json
import os
import re
import stat

from specviz.base.errors import SpecvizError

MAX_JSON_DEPTH = 16  # a scenario nests 5 deep (requests[b].target_probs[i][j]); an audit paste 4
MAX_INT_DIGITS = 20  # token ids, lengths and seq_len fit in far fewer; Python's own limit (4300) raises a traceback


# --------------------------------------------------------------------------------------------
# Markup
# --------------------------------------------------------------------------------------------

# One pass: the HTML specials, and the characters a markdown renderer would read inside HTML
# that Streamlit hands to it (links, images, emphasis, code) as numeric character references.
_HTML_TABLE = {ord("&"): "&amp;", ord("<"): "&lt;", ord(">"): "&gt;", ord('"'): "&quot;", ord("'"): "&#x27;",
               **{ord(c): f"&#{ord(c)};" for c in "[]()!*_`~\\#|$:"}}


# Streamlit's markdown (remark-gfm) turns bare "http://...", "www.x" and "a@b.c" in *text* into
# links, after escapes and character references are decoded, so no escaping stops it. A WORD
# JOINER (U+2060, invisible, zero width) after the scheme's letters, after "www" and after "@"
# breaks the pattern: the text reads the same and is never a link (copying it gives no usable URL).
WORD_JOINER = "\u2060"
_AUTOLINK = re.compile(r"(?i)(?<=[a-z])(?=:)|(?<=www)(?=\.)|(?<=@)")


def no_autolink(value) -> str:
    """``value`` with every spot where an autolink could start broken by an invisible word joiner."""
    return _AUTOLINK.sub(WORD_JOINER, str(value))


def html_text(value) -> str:
    """``value`` as text in HTML (content or a quoted attribute): ``& < > " '`` escaped, and the
    markdown-active characters too (Streamlit's markdown reads inside its HTML), so the browser
    shows the text exactly and nothing in it becomes a tag, link, image, autolink or emphasis."""
    return no_autolink(value).translate(_HTML_TABLE)


_DOT_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def dot_quote(value) -> str:
    """``value`` as one DOT double-quoted string, shown literally by Graphviz.

    Backslashes are doubled (so ``\\N``, ``\\G``, ``\\l`` escapes cannot be spelt), quotes
    escaped, a newline becomes Graphviz's centred line break, other control characters are
    dropped. The result always starts with a quote, so Graphviz never reads it as an HTML-like
    ``<...>`` label, and no attribute or statement can be closed from inside it.
    """
    text = _DOT_CONTROL.sub("", str(value).replace("\r\n", "\n").replace("\r", "\n"))
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def json_for_script(obj) -> str:
    """JSON text that can sit inside ``<script>...</script>`` (any type) unchanged in meaning.

    ``<``, ``>``, ``&`` and the line separators U+2028 / U+2029 become ``\\uXXXX`` escapes,
    so no ``</script>``, ``<!--`` or HTML entity can appear; JSON.parse reads the same value.
    """
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_UNSAFE[m.group(0)], text)


# Markdown characters that start emphasis, links, images, code, headings, lists, tables, HTML.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&])")


def md_text(value) -> str:
    """``value`` as literal text inside Streamlit markdown (st.markdown, st.caption, labels).

    Every markdown-active character is backslash-escaped, so a label cannot become a link, an
    image, emphasis, a heading or (where HTML were allowed) a tag; bare URLs are not autolinked
    (``no_autolink``). Newlines become spaces. The one helper for table cells too (``table_cell``).
    """
    return _MD_SPECIAL.sub(r"\\\1", no_autolink(value).replace("\r", " ").replace("\n", " "))


def table_cell(value):
    """A value for a table that Streamlit renders as markdown (st.table): strings as ``md_text``,
    numbers and other values unchanged."""
    return md_text(value) if isinstance(value, str) else value


_PROSE_SPECIAL = re.compile(r"([\\\[\]<>!&])")


def md_prose(value) -> str:
    """User prose (a scenario title or description) for Streamlit markdown: emphasis and code
    spans keep working, but no link, image, autolink or tag can form (``[ ] ! < > &`` escaped, bare
    URLs broken by ``no_autolink``)."""
    return _PROSE_SPECIAL.sub(r"\\\1", no_autolink(value))


_MESSAGE_SPECIAL = re.compile(r"([<>&])|\]\(")


def md_message(value) -> str:
    """An error message for Streamlit markdown (st.error): it may quote a user's label, so no link,
    image, autolink or tag can form (``<``, ``>``, ``&`` and the ``](`` of a link escaped); brackets
    such as ``target_probs[1]`` stay as written."""
    return _MESSAGE_SPECIAL.sub(lambda m: "\\" + m.group(1) if m.group(1) else "]\\(", no_autolink(value).replace("\n", " "))


# Control characters (C0 but tab/newline where allowed, DEL, C1) and the bidirectional overrides,
# isolates and marks that reorder what a reader sees (U+202E turns "exe.txt" into "txt.exe").
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]")
_INVISIBLE_ALL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]")


def _escape_char(m) -> str:
    c = m.group(0)
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x00": "\\0"}
    return named.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def visible_text(value, keep_lines: bool = False) -> str:
    """``value`` with control and bidi characters written as visible escapes (``\\n``, ``\\x1b``,
    ``\\u202e``): a label or name reads as what it holds, never reorders or hides text.
    ``keep_lines``: newlines and tabs stay (a description is prose)."""
    pattern = _INVISIBLE if keep_lines else _INVISIBLE_ALL
    text = str(value)
    return pattern.sub(_escape_char, text.replace("\r\n", "\n") if keep_lines else text)


def plotly_text(value) -> str:
    """A label for a plotly figure: plotly reads a subset of HTML in its texts (``<a href>``,
    ``<span style>``, ``<br>``, ``<b>``) and entities, also in an exported HTML file; escaped here
    so it shows literally."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _plotly_args(value):
    if isinstance(value, str):
        return plotly_text(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, (str, list, tuple)) for v in value):
        return type(value)(_plotly_args(v) for v in value)
    if isinstance(value, dict):
        return {k: _plotly_args(v) for k, v in value.items()}
    return value


def plotly_safe(figure_fn):
    """Decorator for a function that builds a plotly figure from labels: every text argument (a
    string, a sequence of strings, a dict of words) is passed through ``plotly_text`` first, so no
    label becomes a link, a style or a line break in the app or in the exported HTML file.
    Numbers and arrays pass unchanged; the function's own markup (``<b>``, ``<br>``) stays markup."""
    import functools

    @functools.wraps(figure_fn)
    def safe(*args, **kwargs):
        return figure_fn(*(_plotly_args(a) for a in args), **{k: _plotly_args(v) for k, v in kwargs.items()})
    return safe


# --------------------------------------------------------------------------------------------
# Numbers and JSON
# --------------------------------------------------------------------------------------------

_INT_RE = re.compile(r"\s*[-+]?\d+\s*")


def bounded_int(text, field: str, max_digits: int = MAX_INT_DIGITS) -> int:
    """``int(text)`` for untrusted text, refusing more than ``max_digits`` digits *before* converting."""
    s = str(text)
    digits = sum(ch.isdigit() for ch in s[: max_digits + 64])
    if len(s) > max_digits + 64 or digits > max_digits:
        raise SpecvizError(field, f"has more than {max_digits} digits: a whole number this large is never valid here")
    if not _INT_RE.fullmatch(s):
        raise SpecvizError(field, f"is {s.strip()[:20]!r}: expected a whole number")
    return int(s)


_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_LONG_INT_TEMPLATE = r"(?<![\d.eE+\-])-?\d{%d,}"


def check_json_shape(text: str, field: str, max_depth: int = MAX_JSON_DEPTH, max_int_digits: int = MAX_INT_DIGITS) -> None:
    """Refuse JSON text nested deeper than ``max_depth`` or holding an integer of more digits
    than ``max_int_digits``, in one linear pass and without parsing (so json.loads can neither
    recurse too deep nor convert a 5,000-digit integer). Strings are skipped."""
    bare = _STRING_RE.sub('""', text)
    depth = 0
    for m in re.finditer(r"[\[\]{}]", bare):
        if m.group(0) in "[{":
            depth += 1
            if depth > max_depth:
                raise SpecvizError(field, f"nests brackets more than {max_depth} deep: refused (no specviz value is nested that deep)")
        else:
            depth -= 1
    m = re.search(_LONG_INT_TEMPLATE % (max_int_digits + 1), bare)
    if m:
        raise SpecvizError(field, f"holds a number of {len(m.group(0).lstrip('-'))} digits: at most {max_int_digits} "
                                  "digits are accepted")


def loads_json(text, field: str, max_chars: int, max_depth: int = MAX_JSON_DEPTH,
               max_int_digits: int = MAX_INT_DIGITS):
    """``json.loads`` for untrusted text: size, depth and integer digits checked first; any
    failure is a SpecvizError naming ``field`` (never RecursionError / ValueError)."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > max_chars:  # refuse before decoding
            raise SpecvizError(field, f"is {len(text):,} bytes long; at most {max_chars:,} are accepted")
        text = decode_utf8(text, field)
    if len(text) > max_chars:
        raise SpecvizError(field, f"is {len(text):,} characters long; at most {max_chars:,} are accepted")
    check_json_shape(text, field, max_depth, max_int_digits)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecvizError(field, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # belt and braces: the shape check should have caught these
        raise SpecvizError(field, f"cannot be read as JSON ({type(exc).__name__})") from None


def decode_utf8(data: bytes, field: str) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecvizError(field, f"is not UTF-8 text (bad byte at position {exc.start}; a file still being written, "
                                  "or a binary file): save it as UTF-8 and try again") from None


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------

def read_text_file(path, field: str, max_bytes: int) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes`` bytes.

    Refuses a directory, a device (/dev/zero, /dev/urandom), a pipe or socket, a missing file and
    anything larger, without reading more than ``max_bytes + 1`` bytes; invalid UTF-8 (e.g. a
    multi-byte character cut by a writer) is a SpecvizError, not a UnicodeDecodeError.
    """
    name = str(path)
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise SpecvizError(field, f"{name} cannot be read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise SpecvizError(field, f"{name} is a directory: give a JSON file")
        if not stat.S_ISREG(info.st_mode):
            raise SpecvizError(field, f"{name} is not a regular file (a device, pipe or socket): give a JSON file")
        if info.st_size > max_bytes:
            raise SpecvizError(field, f"{name} is {info.st_size:,} bytes; at most {max_bytes:,} are accepted")
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:  # it grew while we read it
            raise SpecvizError(field, f"{name} is larger than {max_bytes:,} bytes (still being written?): refused")
    except OSError as exc:
        raise SpecvizError(field, f"{name} cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)
    return decode_utf8(b"".join(chunks), field)
