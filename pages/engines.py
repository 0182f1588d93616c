"""Three engines: SGLang 0.5.23, vLLM 0.33.0 and Hugging Face transformers on the same p, q and
random numbers, slot by slot (issue 22). Each engine's own code runs (specviz.rooms.engines.adapters);
specviz's description of its rule explains the verdict; the slots where engines differ are
highlighted with the rule that makes them differ; a Monte Carlo per engine shows the same law.
Widgets only: the maths lives in specviz.rooms.engines.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from specviz.rooms.engines import chain as C
from specviz.rooms.engines import chain_presets as CP
from specviz.rooms.engines import compare as K
from specviz.rooms.engines import rules as R
from specviz.base.errors import SpecvizError
from specviz.base.safety import md_message, md_text
from specviz.app.ui import common as ui
from specviz.app.ui import heavy
from specviz.app.ui import share_ui
from specviz.app.ui.bounded_cache import bounded_cache

KEY = "engines"
SRC = "sv_engines_json"      # the chain's JSON (the source of truth; a non-widget key)
ERR = "sv_engines_err"
tr = ui.tr

st.set_page_config(layout="wide")
share_ui.load_shared_state()  # a shared link (?s=...) sets the language and the chain before any widget
ui.page_setup(KEY, slot=None)
linked = share_ui.link_arrived(KEY)
if linked and "chain" in linked:   # (already checked by share_ui.check_page_extras: it parses as the editor's JSON)
    st.session_state[SRC] = C.to_json(C.from_json(linked["chain"]))
    for k in (ERR, "w_engines_json", "w_engines_seed"):
        st.session_state.pop(k, None)

if SRC not in st.session_state:
    st.session_state[SRC] = C.to_json(CP.preset("equality"))

st.title(tr("Three engines: same law, different draws", "三个引擎：同一分布，不同抽样"))
st.caption(tr(
    "The same chain (p, q, draft tokens) and the same random numbers go through SGLang 0.5.23, vLLM 0.33.0 and "
    "Hugging Face transformers, each running its own code from its own package. Slots where the engines differ are "
    "highlighted, with the rule that makes them differ. The Monte Carlo below shows that every engine still samples p.",
    "同一条链（p、q、draft token）和同一组随机数依次送入 SGLang 0.5.23、vLLM 0.33.0 和 Hugging Face transformers，"
    "每个引擎都运行自己安装包里的代码。引擎结果不同的位置会高亮，并给出造成差异的规则。下方的蒙特卡洛实验表明每个引擎仍按 p 采样。"))


# ---------------------------------------------------------------------------------------------
# Presets: every edge one click away
# ---------------------------------------------------------------------------------------------

def _load_preset(name: str) -> None:
    st.session_state[SRC] = C.to_json(CP.preset(name))
    st.session_state.pop(ERR, None)
    st.session_state.pop("w_engines_json", None)
    st.session_state.pop("w_engines_seed", None)


items = list(CP.PRESETS.items())
cols = st.columns(4) + st.columns(4)  # two rows: every label readable at 1280 px
for col, (name, (_fn, (en, zh))) in zip(cols, items):
    col.button(tr(en, zh), key=f"w_engines_preset_{name}", on_click=_load_preset, args=(name,), width="stretch")


def _parse(text: str):
    try:
        return C.from_json(text), None
    except SpecvizError as exc:
        return None, exc


chain, err = _parse(st.session_state[SRC])
if chain is None:  # the stored JSON was edited into something invalid: fall back, say why
    st.error(md_message(str(err)))
    chain = CP.preset("equality")


SEED = "w_engines_seed"


def _seed_from_widget() -> int:
    """The seed box's value, checked (C.check_seed; the box is a text input holding digits). Why not
    st.number_input: a crafted websocket value (NaN, or text) for an integer number_input makes
    Streamlit's own int() conversion raise in SessionState before any page code runs, so every later
    rerun of that tab failed with "ValueError". A text input's value is never converted by Streamlit:
    anything odd arrives here and is refused as a seed error; the bad value is dropped so that the
    next rerun draws the box again from the chain (the tab keeps working)."""
    raw = st.session_state.get(SEED)
    try:
        if isinstance(raw, str):
            text = raw.strip()
            if not text.isascii() or not text.isdigit() or len(text) > 10:
                raise SpecvizError("seed", f"is {C.shown_value(raw)}; a seed is a whole number in [0, 2^31) (digits only)")
            raw = int(text)
        return C.check_seed(raw)
    except SpecvizError:
        st.session_state.pop(SEED, None)
        raise


def _set_seed() -> None:
    ch, _ = _parse(st.session_state[SRC])
    if ch is not None:
        try:
            st.session_state[SRC] = C.to_json(ch.with_(seed=_seed_from_widget()))
            st.session_state.pop("w_engines_json", None)
            st.session_state.pop(ERR, None)
        except SpecvizError as exc:
            st.session_state[ERR] = str(exc)


def _set_json() -> None:
    text = st.session_state["w_engines_json"]
    ch, exc = _parse(text)
    if ch is None:
        st.session_state[ERR] = str(exc)  # keep the last good chain; show the error
    else:
        st.session_state[SRC] = C.to_json(ch)
        st.session_state.pop(ERR, None)
        st.session_state.pop("w_engines_seed", None)


with st.expander(tr("Edit the chain (p, q, drafts, coins, seed, token names)", "编辑链（p、q、draft、硬币、种子、token 名称）")):
    if SEED in st.session_state:
        try:
            _seed_from_widget()
        except SpecvizError as exc:  # (a rerun that did not go through the callback)
            st.session_state[ERR] = str(exc)
    if SEED not in st.session_state:
        st.session_state[SEED] = str(chain.seed)
    st.text_input(tr("Seed (every engine's random numbers): a whole number from 0 to 2147483647",
                     "种子（所有引擎的随机数）：0 到 2147483647 之间的整数"), key=SEED, on_change=_set_seed)  # no max_chars: Streamlit would slice a crafted non-text value and raise
    if "w_engines_json" not in st.session_state:
        st.session_state["w_engines_json"] = st.session_state[SRC]
    st.text_area(tr("Chain as JSON: target_probs [n+1, V], draft_probs [n, V], draft_tokens [n], greedy; coins [bs, n] "
                    "or null (null: the seed's coins for all three engines)",
                    "链的 JSON：target_probs [n+1, V]、draft_probs [n, V]、draft_tokens [n]、greedy；coins [bs, n] 或 null"
                    "（null：三个引擎都用种子生成的硬币）"), key="w_engines_json", height=220, on_change=_set_json)
if st.session_state.get(ERR):
    st.error(md_message(st.session_state[ERR]))


# ---------------------------------------------------------------------------------------------
# Run the three engines
# ---------------------------------------------------------------------------------------------

@st.cache_data(show_spinner=False, max_entries=32)
def _compare(text: str, installed: tuple) -> K.Comparison:
    """``installed`` (which engines are installed now) is part of the key: an engine installed while
    the app runs is seen on the next rerun, not hidden behind a cached "not installed"."""
    del installed
    ui.ensure_triton_env()
    return K.compare(C.from_json(text))


def _installed_now() -> tuple:
    from specviz.rooms.engines import adapters as A  # noqa: PLC0415

    return tuple(sorted(e for e, (ok, _how) in A.availability().items() if ok))   # a fresh check (~2 ms), every run


with st.spinner(tr("Running the three engines' own code…", "正在运行三个引擎自己的代码……")):
    cmp = _compare(C.to_json(chain), _installed_now())

ENGINE_LABEL = {e: R.NAMES[e] for e in R.ENGINES}
def _quoted(message: str) -> str:
    """A tool's own message (English, from Python or pip) shown verbatim as inline code in either
    language: a code span is literal text in markdown (no link, image or emphasis)."""
    return "`" + " ".join(str(message).replace("`", "'").split())[:400] + "`"


missing = [v for v in cmp.views.values() if not v.available or v.error]
for v in missing:
    if v.error:
        st.warning(tr("{e}: its code failed on this chain ({m}); its column shows specviz's description only.",
                      "{e}：其代码在此链上运行失败（{m}）；该列仅显示 specviz 的规则描述。", e=ENGINE_LABEL[v.engine],
                      m=_quoted(v.error)))
    else:
        st.info(tr("{e} is not installed here ({m}): its column shows specviz's description of its rule, not its own code.",
                   "此环境未安装 {e}（{m}）：该列显示 specviz 对其规则的描述，而非其自身代码。", e=ENGINE_LABEL[v.engine],
                   m=_quoted(v.how)))

lab = chain.label


def _tok(t) -> str:
    return "—" if t is None else (lab(t) if chain.labels is None else f"{lab(t)} ({t})")


def _why(key: str) -> str:
    texts = {
        "sglang_bonus": ("bonus, inverse CDF of p", "bonus，p 的逆 CDF"),
        "sglang_inverse_cdf": ("inverse CDF of p − q", "p − q 的逆 CDF"),
        "sglang_zero_mass": ("zero mass → V−1", "质量为零 → V−1"),
        "race": ("argmax (p − q)/E", "argmax (p − q)/E"),
        "race_bonus": ("bonus, argmax p/E", "bonus，argmax p/E"),
        "vllm_zero_mass": ("zero mass → argmax 0s = 0", "质量为零 → 全零 argmax = 0"),
        "hf_zero_mass": ("0/0: multinomial raises", "0/0：multinomial 报错"),
        "argmax": ("greedy, argmax p", "贪心，argmax p"),
    }
    en, zh = texts.get(key, (key, key))
    return tr(en, zh)


def _cell(s) -> str:
    if s is None:
        return "—"
    return f"{'✓' if s.accepted else '✗'} {s.test}"


diff_cells = {(d.request, d.slot, e) for d in cmp.diffs for e in d.pair}
st.caption(tr("Each cell is the engine's test with its own numbers. SGLang accepts when **u·q < p** (and 0 < q ≤ 1); "
              "vLLM when **p/q ≥ u** (and q > 0); transformers when **u ≤ p/q**, on softmax(log p) and softmax(log q). "
              "Highlighted: where two engines differ.",
              "每个单元格是该引擎用自己的数值做的检验。SGLang 在 **u·q < p**（且 0 < q ≤ 1）时接受；vLLM 在 **p/q ≥ u**"
              "（且 q > 0）时接受；transformers 在 **u ≤ p/q** 时接受，使用 softmax(log p) 与 softmax(log q)。高亮：两个引擎不同之处。"))

for b in range(chain.bs):
    req = chain.requests[b]
    st.subheader(tr("Request {b}", "请求 {b}", b=b) + (tr(" (greedy, temperature 0)", "（贪心，温度 0）") if req.greedy else ""))
    d = cmp.draws[b]
    rows, index = [], []
    for s in range(1, chain.n + 1):
        index.append(tr("slot {s}: draft {t}", "位置 {s}：draft {t}", s=s, t=_tok(req.draft_tokens[s - 1])))
        rows.append([_cell(cmp.views[e].decisions[b].slots[s - 1] if s <= len(cmp.views[e].decisions[b].slots) else None)
                     for e in R.ENGINES])
    index.append(tr("terminal token", "终止 token"))
    rows.append([f"{_tok(cmp.views[e].decisions[b].terminal.token) if cmp.views[e].decisions[b].terminal.token is not None else tr('error', '报错')}"
                 f" — {_why(cmp.views[e].decisions[b].terminal.why)}" for e in R.ENGINES])
    index.append(tr("emitted", "输出"))
    rows.append([" ".join(_tok(t) for t in cmp.views[e].decisions[b].tokens) or tr("(raises)", "（报错）") for e in R.ENGINES])
    index.append(tr("engine's own code", "引擎自身代码"))
    own = []
    for e in R.ENGINES:
        v = cmp.views[e]
        ag = v.agrees(b)
        if v.outs is None:
            own.append(tr("not installed", "未安装") if not v.error else tr("failed", "失败"))
        elif ag is None:
            own.append(tr("not run (inline greedy path)", "未运行（内联贪心路径）"))
        elif ag:
            o = v.outs[b]
            own.append(tr("agrees: ", "一致：") + (o.error.split(":")[0] if o.error else " ".join(_tok(t) for t in o.tokens)))
        else:
            o = v.outs[b]
            own.append(tr("DIFFERS from the description: ", "与描述不同：") + (o.error or " ".join(_tok(t) for t in o.tokens)))
    rows.append(own)
    df = pd.DataFrame(rows, index=index, columns=[ENGINE_LABEL[e] for e in R.ENGINES])

    keys = [(b, s) for s in range(1, chain.n + 1)] + [(b, "terminal"), (b, "emitted"), (b, "own")]

    def _style(frame, keys=keys):
        out = pd.DataFrame("", index=frame.index, columns=frame.columns)
        for i, (bb, slot) in enumerate(keys):
            for j, e in enumerate(R.ENGINES):
                if (bb, slot, e) in diff_cells:
                    out.iat[i, j] = "background-color: #ffe08a; font-weight: 600"
        return out

    st.dataframe(df.style.apply(_style, axis=None), width="stretch",
                 column_config={"_index": st.column_config.Column(width="medium")})
    st.caption(tr("Coins u = {u}; SGLang's final coin u_final = {uf}; exponentials E = {e} (seed {s}). vLLM gets u as "
                  "float64 and 1/E; transformers draws u and E itself from torch's generator seeded {s}{own}.",
                  "硬币 u = {u}；SGLang 的最终硬币 u_final = {uf}；指数随机数 E = {e}（种子 {s}）。vLLM 接收 float64 的 u 与 1/E；"
                  "transformers 用种子 {s} 的 torch 生成器自己抽取 u 与 E{own}。",
                  u=", ".join(f"{x:.6g}" for x in d.coins), uf=f"{float(d.final):.6g}",
                  e=", ".join(f"{x:.4g}" for x in d.expo), s=d.seed,
                  own=(tr(" (its coins: {c}, not the edited ones)", "（其硬币：{c}，不是编辑后的硬币）",
                          c=", ".join(f"{x:.6g}" for x in d.seeded_coins)) if chain.coins_override is not None else "")))

st.subheader(tr("Where they differ, and why", "哪里不同，为什么"))
if not cmp.diffs:
    st.success(tr("All three engines emit the same tokens on this chain.", "在这条链上三个引擎输出相同的 token。"))
VERDICT = {"accept": ("accept", "接受"), "reject": ("reject", "拒绝"), "error": ("error", "报错")}


def _val(v: str) -> str:
    return tr(*VERDICT[v]) if v in VERDICT else _tok(int(v))


for dd in cmp.diffs:
    where = tr("slot {s}", "位置 {s}", s=dd.slot) if dd.slot != "terminal" else tr("terminal token", "终止 token")
    en, zh = K.explain(cmp, dd, label=_tok)
    comma, colon, stop = tr(", ", "，"), tr(": ", "："), tr(". ", "。")  # the language's own punctuation
    st.markdown(f"- **{md_text(ENGINE_LABEL[dd.pair[0]])} vs {md_text(ENGINE_LABEL[dd.pair[1]])}**{comma}"
                f"{md_text(tr('request', '请求'))} {dd.request}{comma}{md_text(where)}{colon}{md_text(_val(dd.a))} vs "
                f"{md_text(_val(dd.b))}{stop}{md_text(tr(en, zh))}")
st.caption(md_text(tr(
    "Two notes on what runs here. vLLM's bonus token (all drafts accepted) is an input of its rejection sampler: in a vLLM "
    "server its own Sampler draws it with its own random numbers; this page draws it as argmax p / E with the same E row "
    "the recovered token uses, so that the column can be checked. SGLang turns a greedy request in a mixed batch into "
    "top_k = 1 at temperature 1; that this keeps tied maxima (p = ½, ½ on a tie) is specviz's reading of FlashInfer's "
    "top-k renormalisation, a CUDA-only path that has not been run here: unverified.",
    "关于这里运行的内容的两点说明。vLLM 的 bonus token（全部 draft 被接受时）是其拒绝采样器的输入：在 vLLM 服务器中由它自己的 "
    "Sampler 用它自己的随机数抽取；本页用与恢复 token 相同的那一行 E 取 argmax p / E，以便核对这一列。SGLang 把混合批中的贪心请求"
    "变为温度 1、top_k = 1；这样是否保留并列的最大值（并列时 p = ½, ½）是 specviz 对 FlashInfer top-k 重新归一化的理解，"
    "那是仅限 CUDA 的路径，这里没有运行过：未经验证。")))
if any(r.greedy for r in chain.requests):
    from specviz.rooms.engines import adapters as A  # noqa: PLC0415
    if cmp.views["transformers"].available:
        st.caption(tr("transformers at temperature 0 with sampling on says: {m}", "transformers 在采样模式下遇到温度 0 会报：{m}",
                      m=md_text(A.temperature_zero_error())))
    st.caption(md_text(tr(*K.REASONS["not_run"])))


# The chain and the language travel in the page's link (the Monte Carlo runs only when pressed).
share_ui.sidebar_controls(KEY, extra={"chain": C.to_json(chain)})


# ---------------------------------------------------------------------------------------------
# Monte Carlo: different draws, same law
# ---------------------------------------------------------------------------------------------

st.subheader(tr("Different draws, same law", "不同抽样，同一分布"))
st.caption(tr("Request 0, slot 1: the draft is sampled from q, each engine decides with fresh random numbers, and we "
              "count the first token emitted. A chi-square test compares the counts with p.",
              "请求 0、位置 1：draft 按 q 采样，每个引擎用新的随机数作出决定，统计输出的第一个 token，再用卡方检验与 p 比较。"))
trials = st.select_slider(tr("Trials per engine", "每个引擎的试验次数"), options=[100, 200, 300, 500, 1000], value=200,
                          key="w_engines_trials")
if st.button(tr("Run the Monte Carlo", "运行蒙特卡洛"), key="w_engines_mc"):
    st.session_state["sv_engines_mc"] = {"json": C.to_json(chain), "trials": trials}


@bounded_cache(share=0.05)  # counted in the byte budget of every page's caches
def _mc(text: str, trials: int, engines: tuple):
    ui.ensure_triton_env()
    ch = C.from_json(text)
    r = ch.requests[0]
    return [K.monte_carlo(e, r.p()[0], r.q()[0], trials=trials, seed=ch.seed, own_code=e in engines) for e in R.ENGINES]


req_mc = st.session_state.get("sv_engines_mc")
if req_mc and req_mc["json"] == C.to_json(chain):
    installed = tuple(e for e, v in cmp.views.items() if v.available)
    results = None
    # The same per-tab budget and machine-wide slots as every heavy page (ui.heavy): a rerun with the same
    # inputs is a cache hit at once; new inputs wait their turn (the page says so) and count against the tab.
    with ui.guard(), st.spinner(tr("Sampling…", "采样中……")):
        results = heavy.cached(tr("Monte Carlo", "蒙特卡洛"), _mc, req_mc["json"], req_mc["trials"], installed)
    p0 = chain.requests[0].p()[0]
    rows = []
    for m in results or ():
        rows.append([ENGINE_LABEL[m.engine] + ("" if m.engine in installed else tr(" (description)", "（规则描述）")),
                     " ".join(str(int(c)) for c in m.counts), " ".join(f"{m.trials * x:.1f}" for x in p0),
                     f"{m.statistic:.3f}", m.df, f"{m.p_value:.4f}",
                     tr("consistent with p", "与 p 一致") if m.p_value > 1e-3 else tr("rejects p at α = 1e-3", "在 α = 1e-3 拒绝 p")])
    if results is not None:
        st.dataframe(pd.DataFrame(rows, columns=[tr("engine", "引擎"), tr("counts", "计数"), tr("expected", "期望"), "χ²",
                                                 tr("df", "自由度"), tr("p-value", "p 值"), tr("verdict", "结论")]),
                     hide_index=True, width="stretch")
else:
    st.caption(tr("Press the button to sample (the engines run under the Triton interpreter: a few seconds).",
                  "按下按钮开始采样（引擎在 Triton 解释器下运行：需要几秒钟）。"))
