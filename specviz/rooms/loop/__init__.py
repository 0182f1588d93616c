"""Accept inside the loop: a tiny Target and Draft decode with build_tree's mask and positions and commit KV by accept_index.

Streamlit-free. ``model`` (the transformer with an explicit-mask, explicit-position forward and a
KV cache), ``train`` (deterministic training on the project's own text; committed weights),
``decode`` (the loop), ``proofs`` (the four proofs as functions), ``metrics`` (acceptance metrics).
"""
