"""The two languages: the article's terms (``term``) and a page's own sentences (``tr``).

The language lives in one session key, ``sv_lang`` (``LANG_KEY``), that every page reads.
"""
from __future__ import annotations

import threading

import streamlit as st

from specviz.base.safety import no_autolink

LANGS = {"en": "English", "zh": "简体中文"}

# -------------------------------------------------------------------------------------------
# Language
# -------------------------------------------------------------------------------------------

# The article's terms, in both languages. Pages use ``term("accept_index")`` for these and
# ``tr(en, zh)`` for their own sentences.
TERMS = {
    "draft": ("Draft", "Draft（草稿）"),
    "verify": ("Target Verify", "Target Verify（目标模型验证）"),
    "accept": ("Accept", "Accept（接受）"),
    "output": ("Output", "输出"),
    "kv": ("KV", "KV"),
    "bonus": ("bonus", "bonus（奖励 token）"),
    "root": ("root", "根节点"),
    "node": ("node", "节点"),
    "row": ("row", "行"),
    "token": ("token", "token"),
    "accept_index": ("accept_index", "accept_index"),
    "accept_lens": ("accept_lens", "accept_lens"),
    "num_correct_drafts": ("num_correct_drafts", "num_correct_drafts"),
    "predicts": ("predicts", "predicts"),
    "target_predict": ("target_predict", "target_predict"),
    "accepted": ("accepted", "已接受"),
    "rejected": ("rejected", "已拒绝"),
    "pending": ("pending", "待定"),
    "discarded": ("discarded", "丢弃"),
    "committed": ("committed", "提交"),
    "backend": ("Backend", "后端"),
    "language": ("Language", "语言"),
    "scenario": ("Scenario", "场景"),
    "step": ("Step", "步骤"),
    "first_child": ("first child", "第一个子节点"),
    "next_sibling": ("next sibling", "下一个兄弟节点"),
    "next_root": ("next root", "下一轮的根"),
    "raw_tensors": ("Raw tensors (named and shaped as in SGLang)", "原始张量（名称与形状同 SGLang）"),
}


LANG_KEY = "sv_lang"
_RUN = threading.local()  # (the script run, its language): one per script thread


def _this_run():
    """What marks the script run this thread is in: Streamlit gives its run context a new ``cursors`` dict
    at the start of every run (``ScriptRunContext.reset``); None outside a script run."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return None if ctx is None else getattr(ctx, "cursors", None)


def lang() -> str:
    """The chosen language: ``"en"`` or ``"zh"``.

    Read once per script run: ``tr`` and ``term`` ask for it a few hundred times a rerun, and each session
    state read is a lock, a key check and a widget-metadata lookup (benchmarks/README.md, "cpu8: server
    CPU per edit, stop 43"). Whatever writes the language calls ``forget_lang()`` (``state.set_value``
    and ``state.widget`` do), so a change is seen from the next call on, in the same run."""
    run = _this_run()
    memo = getattr(_RUN, "memo", None)
    if run is not None and memo is not None and memo[0] is run:
        return memo[1]
    value = st.session_state.get(LANG_KEY, "en")
    _RUN.memo = None if run is None else (run, value)  # holds the run's dict: no other run can reuse its id
    return value


def forget_lang() -> None:
    """Read the language again at the next ``lang()`` (call where it is written)."""
    _RUN.memo = None


def tr(en: str, zh: str | None = None, **fmt) -> str:
    """The text in the chosen language (``zh`` falls back to ``en``); ``fmt`` fills ``{}`` fields.

    Text values are filled in with ``safety.no_autolink``: a bare URL or e-mail address in a value
    (a scenario name, an error detail) never becomes a link wherever the text is drawn. Markdown
    in a value is the caller's to escape (``md_text``) where the text is markdown."""
    text = zh if (lang() == "zh" and zh) else en
    if not fmt:
        return text
    return text.format(**{k: no_autolink(v) if isinstance(v, str) else v for k, v in fmt.items()})


def term(key: str) -> str:
    """An article term (``TERMS``) in the chosen language."""
    en, zh = TERMS.get(key, (key, key))
    return zh if lang() == "zh" else en


def semantics_label(value: str) -> str:
    """How a semantics choice reads: the release number as is, "earlier" in the chosen language."""
    return tr("earlier", "更早版本") if value == "earlier" else value
