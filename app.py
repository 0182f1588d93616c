"""specviz: the Accept stage of speculative decoding, made visible. ``streamlit run app.py``.

The router only: it lists the pages (each file in ``pages/``, included when it exists) and
leaves every widget to the pages and ``specviz.app.ui.common``.
"""
import os
import sys
from pathlib import Path

# The Triton interpreter must be on before anything imports triton when there is no CUDA GPU.
if "TRITON_INTERPRET" not in os.environ and "triton" not in sys.modules and not any(Path("/dev").glob("nvidia[0-9]*")):
    os.environ["TRITON_INTERPRET"] = "1"

import streamlit as st  # noqa: E402

# app.py runs again on every rerun: no Path.resolve() here (a realpath walk, 4% of a class's server CPU)
# unless app.py was reached through a link and its pages are elsewhere.
HERE = Path(os.path.abspath(__file__)).parent
if not (HERE / "pages").is_dir():
    HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from specviz.app import runtime as app_runtime  # noqa: E402
from specviz.app.runtime import click_queue  # noqa: E402

# Streamlit runtime patches (specviz/app/runtime: click queue, failover replay, wake-up batching, widget guard); `specviz doctor`
# says which are active on this Streamlit.
app_runtime.install()

# (file names, English title, Chinese title, icon), in teaching order; the first file that exists is used.
PAGES = [
    (("overview.py",), "Overview", "概览", ":material/home:"),
    (("tour.py",), "Guided tour", "导览", ":material/tour:"),
    (("tree_builder.py",), "Tree builder", "构建验证树", ":material/account_tree:"),
    (("greedy.py",), "Greedy accept", "贪心接受", ":material/check_circle:"),
    (("chain_sampling.py", "chain_rejection.py"), "Chain rejection sampling", "链式拒绝采样", ":material/casino:"),
    (("target_only.py", "target_only_sampling.py", "tree_sampling.py"), "Target-only tree sampling", "仅目标模型的树采样",
     ":material/forest:"),
    (("dspark.py", "dspark_chain.py"), "DSpark chain", "DSpark 链", ":material/linear_scale:"),
    (("batch_kv.py",), "Batch and KV commit", "批处理与 KV 提交", ":material/view_list:"),
    (("decoding_loop.py",), "Decoding loop", "解码循环", ":material/autorenew:"),
    (("engines.py",), "Three engines", "三个引擎", ":material/compare_arrows:"),
    (("pitfalls.py",), "Pitfall gallery", "常见错误", ":material/bug_report:"),
    (("audit.py",), "Audit your outputs", "核对你的输出", ":material/fact_check:"),
    (("quiz.py",), "Quiz", "测验", ":material/quiz:"),
]


def page_file(names):
    """The first of ``names`` that exists in pages/, or None."""
    return next((HERE / "pages" / f for f in names if (HERE / "pages" / f).exists()), None)


def build_pages(zh: bool) -> list:
    pages, listed = [], set()
    for names, t_en, t_zh, icon in PAGES:
        f = page_file(names)
        if f is not None:
            listed.add(f.name)
            pages.append(st.Page(str(f), title=(t_zh if zh else t_en), icon=icon, default=not pages))
    # Any further page file (e.g. one added later) is listed too, after the known ones.
    for f in sorted((HERE / "pages").glob("[!_]*.py")):
        if f.name not in listed:
            pages.append(st.Page(str(f), title=f.stem.replace("_", " ").capitalize(), default=not pages))
    return pages


def main() -> None:
    from specviz.app.ui.theme import favicon_url, page_objects

    st.set_page_config(page_title="specviz: the Accept stage", page_icon=favicon_url(), layout="wide")
    zh = st.session_state.get("sv_lang", "en") == "zh"
    click_queue.tell_refused()  # a flood of presses from this tab: what was refused (issue 35 item 2)
    # Built again only when pages/ changes (a file added or removed changes the folder's mtime).
    pages = page_objects((zh, os.stat(HERE / "pages").st_mtime_ns), lambda: build_pages(zh))
    if not pages:
        st.error("No page files found in pages/.")
        return
    # Every page listed: past 10 pages Streamlit folds the rest behind "View more", which hid the quiz
    # and the later pages from a class once "Three engines" made 13.
    st.navigation(pages, expanded=True).run()


main()
