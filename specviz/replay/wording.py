"""Words for what the numpy reference records as codes: the terminal distribution's source and the
warnings, in English or 简体中文, naming tokens by the scenario's labels.

The reference keeps an English sentence on each event (for Python's warnings and the CLI) and,
beside it, a ``code`` with the numbers it needs (token ids, slot, row, V). Every page, the step
captions and the export word an event from these, so no English sentence with raw token ids reaches
a Chinese page:

    residual_source("chain_residual", "zh")               -> "被拒绝位置所在行的 residual relu(p − q)"
    warning_sentence(typed_warning, scenario, "en", esc)  -> "request 0 slot 1: the Draft proposed A with q = 0 ..."
    run_warnings(run, "zh", esc)                          -> every warning of a run, worded (one per event)

``esc`` escapes each token label for where the text goes (``safety.md_text`` on a page). No streamlit here.
"""
from __future__ import annotations

from specviz.inputs.scenario import Scenario

# code -> (English, 简体中文)
SOURCES = {
    "plain_target_row": ("the target row (every level accepted: plain p)", "Target 行（每一层都被接受：直接用 p）"),
    "buffer_residual": ("relu(p − work buffer): the rejected siblings' mass removed",
                        "relu(p − 工作缓冲)：去掉被拒绝兄弟节点的质量"),
    "buffer_empty": ("relu(p − work buffer) = the plain target row (nothing was rejected at this node)",
                     "relu(p − 工作缓冲) = 原始 Target 行（此节点没有被拒绝的子节点）"),
    "chain_bonus_row": ("target row after the last slot (every draft accepted: bonus from plain p)",
                        "最后一个位置之后的 Target 行（全部 Draft 被接受：bonus 直接从 p 采样）"),
    "chain_residual": ("residual relu(p − q) at the rejected slot's row", "被拒绝位置所在行的 residual relu(p − q)"),
}


def _plain(text: str) -> str:
    return text


def residual_source(code: str | None, lang: str = "en", fallback: str = "") -> str:
    """What the terminal distribution is, in ``lang``; ``fallback`` (the event's English) for an unknown code."""
    if code not in SOURCES:
        return fallback
    en, zh = SOURCES[code]
    return zh if lang == "zh" else en


def warning_sentence(code: str | None, request: int, node: int | None, params: dict, s: Scenario, lang: str = "en",
                     esc=_plain, fallback: str = "") -> str:
    """One warning in ``lang``, tokens named by the scenario's labels. ``fallback`` (the event's
    English) for an unknown code."""
    z = lang == "zh"

    def t(en, zh, **fmt):
        return (zh if z else en).format(**fmt)

    def tok(i) -> str:
        return esc(s.label(int(i)))

    V = int(params.get("vocab_size", s.vocab_size))
    if code == "chain_q_zero":
        rule = (t("SGLang 0.5.23 rejects it: acceptance needs 0 < q ≤ 1", "SGLang 0.5.23 会拒绝它：接受要求 0 < q ≤ 1")
                if params.get("semantics", "0.5.23") == "0.5.23" else
                t("earlier releases accept it when p > 0 (here p = {p:.3f})", "更早的版本在 p > 0 时接受它（此处 p = {p:.3f}）",
                  p=float(params.get("p", 0.0))))
        return t("request {b}, slot {s}: the Draft proposed {x} with q = 0, which a real Draft cannot do; {r}.",
                 "请求 {b}，位置 {s}：Draft 以 q = 0 提出了 {x}，真实的 Draft 不会这样做；{r}。",
                 b=request, s=params.get("slot", node), x=tok(params.get("token", 0)), r=rule)
    if code == "chain_no_mass":
        return t("request {b}: the residual at row {k} has no mass (p = q); SGLang then emits token V-1 = {x}.",
                 "请求 {b}：第 {k} 行的 residual 没有质量（p = q）；SGLang 此时输出 token V-1 = {x}。",
                 b=request, k=params.get("row", node), x=tok(V - 1))
    if code == "target_only_no_mass":
        if params.get("last_valid_fallback"):
            return t("request {b}: the terminal distribution at node {i} has no mass; SGLang then emits the last token "
                     "with mass, else token V-1 = {x}.",
                     "请求 {b}：节点 {i} 处的终止分布没有质量；SGLang 此时输出最后一个有质量的 token，若没有则输出 token V-1 = {x}。",
                     b=request, i=node, x=tok(V - 1))
        return t("request {b}: the terminal distribution at node {i} has no mass; SGLang then emits token V-1 = {x}.",
                 "请求 {b}：节点 {i} 处的终止分布没有质量；SGLang 此时输出 token V-1 = {x}。", b=request, i=node, x=tok(V - 1))
    if code == "unlinked_node":
        return t("request {b}, node {i}: its parent candidate is not selected, so the node stays unlinked and unreachable "
                 "(SGLang's CUDA builder prints `invalid eagle tree`); its mask row and position are undefined in SGLang.",
                 "请求 {b}，节点 {i}：它的父候选没有被选中，因此该节点不会被链接，也无法到达（SGLang 的 CUDA 构建器会打印 "
                 "`invalid eagle tree`）；它在 SGLang 中的掩码行与 position 未定义。", b=request, i=node)
    return esc(fallback) if fallback else ""


def event_warning(ev, s: Scenario, lang: str = "en", esc=_plain) -> str:
    """``warning_sentence`` for a typed warning event (``specviz.replay.events.Warning_``)."""
    return warning_sentence(ev.code, ev.request, ev.node, ev.params, s, lang, esc, fallback=ev.message)


def run_warnings(run, lang: str = "en", esc=_plain) -> list[str]:
    """Every warning of ``run`` (an ``engine.Run``), worded in ``lang`` from its trace's warning events;
    the recorded English messages when the run has no trace."""
    trace = getattr(run, "trace", None)
    out, worded = [], set()
    for e in (trace.events if trace is not None else ()):
        if e.kind == "warning":
            d = e.data
            params = {k: v for k, v in d.items() if k not in ("message", "code")}
            out.append(warning_sentence(d.get("code"), e.request, e.node, params, run.scenario, lang, esc,
                                        fallback=str(d.get("message", ""))))
            worded.add(str(d.get("message", "")))
    # a warning raised outside the trace (none today) still shows, in the reference's English
    return out + [esc(w) for w in run.warnings if w not in worded]
