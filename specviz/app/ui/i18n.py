"""The two languages: the article's terms (``term``) and a page's own sentences (``tr``).

The language lives in one session key, ``sv_lang``, that every page reads.
"""
from __future__ import annotations

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


def lang() -> str:
    """The chosen language: ``"en"`` or ``"zh"``."""
    return st.session_state.get("sv_lang", "en")


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
