"""specviz: the Accept stage of speculative decoding, made visible. ``streamlit run app.py``.

The router only: it lists the pages (each file in ``pages/``, included when it exists) and
leaves every widget to the pages and ``specviz.ui.common``.
"""
import os
import sys
from pathlib import Path

# The Triton interpreter must be on before anything imports triton when there is no CUDA GPU.
if "TRITON_INTERPRET" not in os.environ and "triton" not in sys.modules and not any(Path("/dev").glob("nvidia[0-9]*")):
    os.environ["TRITON_INTERPRET"] = "1"

import streamlit as st  # noqa: E402

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

# (file, English title, Chinese title, icon), in teaching order.
PAGES = [
    ("pages/overview.py", "Overview", "概览", ":material/home:"),
    ("pages/tree_builder.py", "Tree builder", "构建验证树", ":material/account_tree:"),
    ("pages/greedy.py", "Greedy accept", "贪心接受", ":material/check_circle:"),
    ("pages/chain_rejection.py", "Chain rejection sampling", "链式拒绝采样", ":material/casino:"),
    ("pages/target_only.py", "Target-only tree sampling", "仅目标模型的树采样", ":material/forest:"),
    ("pages/dspark.py", "DSpark chain", "DSpark 链", ":material/linear_scale:"),
    ("pages/batch_kv.py", "Batch and KV commit", "批处理与 KV 提交", ":material/view_list:"),
]


def main() -> None:
    st.set_page_config(page_title="specviz: the Accept stage", page_icon=":material/check_circle:", layout="wide")
    zh = st.session_state.get("sv_lang", "en") == "zh"
    listed = {p for p, *_ in PAGES}
    pages = [st.Page(str(HERE / f), title=(t_zh if zh else t_en), icon=icon, default=(i == 0))
             for i, (f, t_en, t_zh, icon) in enumerate(PAGES) if (HERE / f).exists()]
    # Any further page file (e.g. one added later) is listed too, after the known ones.
    for f in sorted((HERE / "pages").glob("[!_]*.py")):
        rel = f"pages/{f.name}"
        if rel not in listed:
            pages.append(st.Page(str(f), title=f.stem.replace("_", " ").capitalize()))
    if not pages:
        st.error("No page files found in pages/.")
        return
    st.navigation(pages).run()


main()
