"""One set of limits, read by the scenario schema, the app's widgets and the engine.

A value the schema accepts must be one every widget can show (a slider that ends below it stops
the page with StreamlitValueAboveMaxError) and one the engine can run within the server's budget.
So each bound is written once, here, and the three layers import it (no streamlit, numpy or
torch in this module).
"""
from __future__ import annotations

# -- trees -----------------------------------------------------------------------------------------
MAX_TREE_NODES = 64  # the most nodes a drawn tree (or chain) may have: beyond that nothing can be read on screen
MAX_DEPTH = 16  # the deepest drawn tree (levels below the root)
MAX_TOPK = MAX_TREE_NODES - 1  # an EAGLE form's topk: the root may have every other node as a child
MAX_CHILDREN = MAX_TREE_NODES - 1

# -- requests ------------------------------------------------------------------------------------------
MAX_SEQ_LEN = 10**9  # tokens already in KV; the app never allocates anything of this size (the mask's prefix is described)
# Coins (uniform_samples, coin_final) lie in [0, MAX_COIN]; the sliders end at MAX_COIN with COIN_STEP.
MAX_COIN = 0.9999
COIN_STEP = 0.0001
COIN_FORMAT = "%.4f"
# Thresholds (threshold_single, threshold_acc) lie in [0, 1] as in SGLang (t_acc = max(threshold_acc, 1e-9)).
MIN_THRESHOLD = 0.0
MAX_THRESHOLD = 1.0
THRESHOLD_STEP = 0.01

# -- memory: what a page may allocate for one request ----------------------------------------------
# A full_mask of n x (seq_len + n) booleans is never allocated by the app: the all-True prefix is
# described (reference.tree.FullMask, build_tree_described). Backends are compared on an allocated mask only
# up to this many cells; above it they are compared in qlen_only mode (the same tree part,
# positions and links at the real seq_len).
MAX_MASK_CELLS = 1 << 22  # 4 MB of bool per backend

# -- the decoding loop ---------------------------------------------------------------------------------
LOOP_MAX_PROMPT_CHARS = 400
LOOP_MAX_TOPK = 4
LOOP_MAX_DEPTH = 6
LOOP_MAX_ROUNDS = 64  # (the page's sliders end at these; LoopSettings.checked() allows more for the API)
# Work of one run of the loop page (the loop and its two proofs), in Target token positions,
# estimated from the inputs before it starts (specviz.rooms.loop.budget.loop_work): ~50 us of CPU per
# position on the 2-core dev machine, so one run stays under ~10 s of CPU (the session budget,
# ui.heavy.SESSION_BUDGET_S, is 20 s a minute). The defaults cost ~19k; the maximal sliders with a
# 340-character prompt ~3.4 M (115 s of CPU before this bound).
LOOP_MAX_WORK = 200_000

# -- text ---------------------------------------------------------------------------------------------
MAX_LABEL_CHARS = 32  # a token label is drawn inside a node box
MAX_NAME_CHARS = 80
MAX_TITLE_CHARS = 200
MAX_DESCRIPTION_CHARS = 4000

# -- the server process -----------------------------------------------------------------------------
# In the environment of every Streamlit worker (specviz app, specviz serve, the image, the pods): at most 2
# glibc malloc arenas, so memory freed after sessions end is reused instead of held in one half-empty arena
# per script thread (issue 35 item 3; specviz/app/ui/memory.py trims the rest).
MALLOC_ENV = {"MALLOC_ARENA_MAX": "2"}
