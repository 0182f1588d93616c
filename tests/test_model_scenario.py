"""The drawn-tree model, its SGLang forms, and the versioned scenario format."""
import glob
import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.base.errors import SpecvizError
from specviz.inputs.model import MAX_TREE_NODES, DrawnTree, NotExpressible, chain_tree
from specviz.reference import build_tree
from specviz.inputs.scenario import Scenario, load_scenario, scenario_from_dict, scenario_from_json

PRESETS = sorted(glob.glob("scenarios/*.json"))
RUNNING = DrawnTree((-1, 0, 0, 1, 1), (5, 0, 1, 2, 3))  # R; A, B under R; C, D under A


def test_running_example_retrieve_arrays_follow_sglang_sibling_order():
    """First child = lowest node index, next sibling = next higher (SEMANTICS §0.2):
    R's first child is A (1), A's sibling B (2); A's first child C (3), C's sibling D (4)."""
    ri, nt, ns = RUNNING.retrieve_arrays()
    assert ri.tolist() == [0, 1, 2, 3, 4]
    assert nt.tolist() == [1, 3, -1, -1, -1]
    assert ns.tolist() == [-1, 2, -1, 4, -1]


def test_running_example_eagle_form_is_the_seed_rollout():
    """§0.1: topk 2, depth 2, selected_index [0, 1, 2, 3], parent_list [-1, 0, 1]."""
    e = RUNNING.to_eagle()
    assert (e.topk, e.depth, e.num_draft_tokens) == (2, 2, 5)
    assert list(e.selected_index) == [0, 1, 2, 3]
    assert list(e.parent_list) == [-1, 0, 1]
    assert DrawnTree.from_eagle(e) == RUNNING


def random_tree(draw_parents):
    return DrawnTree(tuple(draw_parents), tuple(range(len(draw_parents)))).canonical()[0]


@st.composite
def trees(draw, max_nodes=24):
    n = draw(st.integers(1, max_nodes))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    return random_tree(parents)


@settings(deadline=None, max_examples=150)
@given(trees())
def test_drawn_tree_round_trips_through_eagle_form_and_build_tree(tree):
    """Every canonical tree is an EAGLE rollout with the smallest topk that fits, and build_tree
    turns that rollout back into the same links, positions (seq_len + depth) and drawn tree."""
    e = tree.to_eagle()
    assert e.topk == max(1, max(len(tree.children(i)) for i in range(tree.n)),
                         max((len({tree.parents[i] for i in range(tree.n) if tree.depths()[i] == d}) for d in range(2, tree.max_depth + 1)), default=1))
    pl = np.asarray([e.parent_list], dtype=np.int64).reshape(1, -1)
    si = np.asarray([e.selected_index], dtype=np.int64).reshape(1, -1)
    tb = build_tree(pl, si, [7], topk=e.topk, depth=e.depth, num_draft_tokens=tree.n)
    ri, nt, ns = tree.retrieve_arrays()
    assert tb.retrieve_next_token[0].tolist() == nt.tolist()
    assert tb.retrieve_next_sibling[0].tolist() == ns.tolist()
    assert tb.positions.tolist() == [7 + d for d in tree.depths()]
    assert DrawnTree.from_eagle(e) == tree
    assert DrawnTree.from_retrieve(nt, ns, tree.tokens) == tree
    if e.topk > 1:
        with pytest.raises(NotExpressible, match="topk is"):
            tree.to_eagle(e.topk - 1)


def test_not_expressible_says_why_in_one_sentence():
    """Depth 3 with children under 3 parents (C, D, E) cannot come from topk 2 (step 2 keeps 2 beams);
    a depth-2 node before a depth-1 node cannot come from any rollout."""
    wide = DrawnTree((-1, 0, 0, 1, 1, 2, 2, 3, 4, 5), tuple(range(10)))
    assert wide.to_eagle().topk == 3
    with pytest.raises(NotExpressible, match="depth 3 has children under 3 parents but topk is 2"):
        wide.to_eagle(2)
    bushy = DrawnTree((-1, 0, 0, 0), (0, 1, 2, 3))
    with pytest.raises(NotExpressible, match="node 0 has 3 children but topk is 2"):
        bushy.to_eagle(2)
    shuffled = DrawnTree((-1, 0, 1, 0), (0, 1, 2, 3))  # node 2 (depth 2) before node 3 (depth 1)
    with pytest.raises(NotExpressible, match="comes after node"):
        shuffled.to_eagle()
    swapped = DrawnTree((-1, 0, 0, 2, 1), (0, 1, 2, 3, 4))  # depth-2 children in the wrong parent order
    with pytest.raises(NotExpressible, match="depth 2"):
        swapped.to_eagle()


def test_edits_keep_rollout_order():
    """Adding a child to B puts it after A's children (depth-major, parents in order); moving B before A
    renumbers rows to R, B, A, ... exactly as SEMANTICS §0.1 says."""
    t = RUNNING.add_child(2, 9)
    assert t.parents == (-1, 0, 0, 1, 1, 2) and t.tokens[5] == 9
    moved = RUNNING.move_sibling(2, -1)
    assert moved.tokens == (5, 1, 0, 2, 3) and moved.parents == (-1, 0, 0, 2, 2)
    assert RUNNING.delete_subtree(1) == DrawnTree((-1, 0), (5, 1))
    assert RUNNING.add_sibling(3, 7).children(1) == [3, 4, 5]
    assert RUNNING.relabel(4, 8).tokens[4] == 8
    with pytest.raises(SpecvizError, match="root cannot be deleted"):
        RUNNING.delete_subtree(0)


@pytest.mark.parametrize("parents, match", [
    ((-1, 2, 1), "cycle"),
    ((-1, 0, 5), "not a node"),
    ((0, 0), "root"),
    ((-1, -1), "only node 0 is the root"),
    ((), "empty"),
])
def test_bad_trees_name_the_field(parents, match):
    with pytest.raises(SpecvizError, match=match) as exc:
        DrawnTree(parents, tuple(range(len(parents))))
    assert exc.value.field.startswith("tree")


def test_tree_too_large_to_draw_is_refused_with_the_limit():
    with pytest.raises(SpecvizError, match=str(MAX_TREE_NODES)):
        chain_tree(range(MAX_TREE_NODES + 1))


@pytest.mark.parametrize("path", PRESETS)
def test_preset_json_round_trips_exactly(path):
    """load -> dump -> load gives the same value, and the dump equals the file's JSON value."""
    s = load_scenario(path)
    again = scenario_from_json(s.to_json())
    assert again == s
    with open(path, encoding="utf-8") as fh:
        raw = json.load(fh)
    dumped = json.loads(s.to_json())
    assert {k: v for k, v in dumped.items() if k in raw} == raw  # requests included, nested
    assert dumped["requests"] == raw["requests"]
    assert s.description, "every preset explains what happens and why"


@settings(deadline=None, max_examples=60)
@given(trees(max_nodes=12), st.integers(0, 10**6), st.data())
def test_random_scenarios_round_trip(tree, seq_len, data):
    vocab = [f"t{i}" for i in range(max(tree.tokens) + 1)]
    preds = [vocab[data.draw(st.integers(0, len(vocab) - 1))] for _ in range(tree.n)]
    d = {"name": "r", "algorithm": "greedy", "vocab": vocab,
         "requests": [{"tree": {"parents": list(tree.parents), "tokens": [vocab[t] for t in tree.tokens]},
                       "seq_len": seq_len, "target_predict": preds}]}
    s = scenario_from_dict(d)
    assert scenario_from_json(s.to_json()) == s
    assert s.tree(0) == tree


def _base(**over):
    d = json.loads(open("scenarios/target_only_sampling.json", encoding="utf-8").read())
    d.update(over)
    return d


@pytest.mark.parametrize("mutate, field, match", [
    (lambda d: d["requests"][0]["target_probs"][2].__setitem__(0, 0.5), "requests[0].target_probs[2]", "sums to"),
    (lambda d: d["requests"][0]["tree"]["tokens"].__setitem__(3, "Q"), "requests[0].tree.tokens[3]", "not in the vocabulary"),
    (lambda d: d["requests"][0]["tree"].__setitem__("parents", [-1, 2, 1, 1, 1]), "requests[0].tree.parents", "cycle"),
    (lambda d: d["requests"][0].__setitem__("coins", [0.1, 0.2]), "requests[0].coins", "give 5 coins"),
    (lambda d: d["requests"][0]["target_probs"][0].__setitem__(0, -0.5), "requests[0].target_probs[0]", "negative"),
    (lambda d: d["requests"][0]["target_probs"][1].__setitem__(0, float("nan")), "requests[0].target_probs[1]", "NaN"),
    (lambda d: d.__setitem__("vocab", ["A", "A", "C", "D", "X", "R"]), "vocab", "twice"),
    (lambda d: d.__setitem__("version", 7), "version", "reads version 1"),
    (lambda d: d.__setitem__("colour", "red"), "colour", "not a scenario field"),
    (lambda d: d["requests"][0].pop("coin_final"), "requests[0].coin_final", "missing"),
    (lambda d: d["requests"].append(dict(d["requests"][0], tree={"parents": [-1, 0], "tokens": ["R", "A"]})), "requests[1]", "same n"),
])
def test_bad_scenarios_name_the_field(mutate, field, match):
    d = _base()
    mutate(d)
    with pytest.raises(SpecvizError, match=match) as exc:
        scenario_from_dict(d)
    assert exc.value.field.startswith(field)


def test_scenario_is_frozen_and_replace_validates():
    s = load_scenario("scenarios/running_example.json")
    with pytest.raises(Exception):
        s.name = "x"
    assert s.replace(semantics="earlier").semantics == "earlier"
    with pytest.raises(SpecvizError, match="semantics"):
        s.replace(semantics="0.4")


@pytest.mark.parametrize("path", PRESETS)
def test_preset_descriptions_exist_in_both_languages(path):
    s = load_scenario(path)
    assert s.describe("en") == s.description
    assert s.describe("zh") == s.description_zh and s.description_zh != s.description
