"""The numpy reference: the specification in code (SEMANTICS.md), and the only backend that
records trace events. Functions take numpy arrays, torch tensors or nested lists and return
numpy arrays; ``specviz.algorithms.backends.get_backend("numpy")`` wraps them to return torch tensors.
May import specviz.base only; kernels/ and every package above build on it.
"""
from specviz.reference.dspark import (build_out_tokens, cap_correct_len, dspark_accept_greedy, dspark_accept_sampling, dspark_bonus_at,
                     finalize_accept_lens)
from specviz.reference.montecarlo import sample_many
from specviz.reference.sampling import (eagle_sample, fill_bonus_tokens, gather_accept_tokens, raw_gather, target_probs_from_logits,
                       top_k_renorm, top_p_renorm)
from specviz.reference.tree import TREE_MASK_MODES, FullMask, build_tree, build_tree_described, parent_nodes, tree_mask_matrix
from specviz.reference.chain_sampling import chain_rejection_sampling
from specviz.reference.target_only import tree_sampling_target_only
from specviz.reference.verify import inverse_cdf, verify_tree_greedy

API_FUNCTIONS = (
    "build_tree", "verify_tree_greedy", "tree_sampling_target_only", "chain_rejection_sampling",
    "target_probs_from_logits", "eagle_sample", "fill_bonus_tokens", "dspark_accept_greedy",
    "dspark_accept_sampling", "cap_correct_len", "finalize_accept_lens", "build_out_tokens", "sample_many",
)

__all__ = list(API_FUNCTIONS) + ["TREE_MASK_MODES", "parent_nodes", "tree_mask_matrix", "inverse_cdf", "FullMask", "build_tree_described",
                                 "gather_accept_tokens", "raw_gather", "top_k_renorm", "top_p_renorm", "dspark_bonus_at"]
