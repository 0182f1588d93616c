"""Graphviz DOT for verify trees, the accept walk and the speculative-decoding loop.

Pure functions returning DOT text (``ui.graph`` has ``dot`` lay it out on the server; without
``dot`` the browser lays it out). Every node shows its token and its verify row; hovering a node shows the exact
values (``tooltip``). Colours come from ``palette`` (colour-blind safe) and every state is also
written in the node (a mark), never colour alone.
"""
from __future__ import annotations

from specviz.base.safety import dot_quote
from specviz.render.palette import FONT_FAMILY, GRAPH_FONT_SIZE, PALETTE, state_color, text_on

STATE_MARK = {"accepted": "✓", "rejected": "✗", "bonus": "★", "current": "●", "compared": "?", "discarded": "", "pending": ""}


_q = dot_quote  # every attribute value is a quoted string: never an HTML-like <...> label, never unquoted


def _attrs(**kw) -> str:
    return "[" + ", ".join(f"{k}={_q(v)}" for k, v in kw.items() if v is not None) + "]"


def _header(name: str = "tree", rankdir: str = "TB", size: str | None = None) -> list[str]:
    lines = [f"digraph {name} {{",
             f"  graph [rankdir={rankdir}, bgcolor=transparent, nodesep=0.45, ranksep=0.6, fontname={_q(FONT_FAMILY)}"
             + (f", size={_q(size)}" if size else "") + "];",
             f"  node [shape=box, style=\"rounded,filled\", fontname={_q(FONT_FAMILY)}, fontsize={GRAPH_FONT_SIZE}, "
             f"penwidth=2, margin=\"0.18,0.08\", color={_q(PALETTE['edge'])}];",
             f"  edge [color={_q(PALETTE['edge'])}, penwidth=2, arrowsize=0.9, fontname={_q(FONT_FAMILY)}, fontsize={GRAPH_FONT_SIZE - 4}];"]
    return lines


def tree_dot(parents, labels, *, rows=None, states=None, selected=None, links: bool = False, tooltips=None,
             bonus=None, bonus_label: str = "bonus", row_word: str = "row", link_words=("first child", "next sibling"),
             prefix: str = "n", cluster: str | None = None, body_only: bool = False, extra_lines=(),
             rankdir: str | None = None) -> str:
    """DOT for one tree.

    parents   [n] parent node of each node (-1 for the root, node 0)
    labels    [n] token text of each node
    rows      [n] verify row of each node (default: node id); shown under the token
    states    {node: state} with state in palette.STATES (default pending; root accepted)
    selected  a node to outline (the selection linked across views)
    links     draw SGLang's retrieve_next_token (first child, solid blue) and
              retrieve_next_sibling (next sibling, dashed) arrows instead of plain parent edges
    tooltips  {node: text} shown on hover (exact values)
    bonus     (node, token text): draw the bonus token hanging off ``node`` (orange, no row)
    rankdir   "TB" (root on top) or "LR" (root on the left); default TB up to 16 nodes, LR beyond,
              so that a wide tree (64 nodes) stays readable in a page column
    """
    n = len(parents)
    rows = list(range(n)) if rows is None else list(rows)
    states = dict(states or {})
    tooltips = tooltips or {}
    big = n > 16
    lines = [] if body_only else _header(rankdir=rankdir or ("LR" if big else "TB"))
    if big and not body_only:
        lines.append(f"  node [fontsize={GRAPH_FONT_SIZE - 2}, margin=\"0.08,0.02\", height=0.3]; graph [nodesep=0.06, ranksep=0.6];")
    if cluster is not None:
        lines.append(f"  subgraph cluster_{prefix} {{ label={_q(cluster)}; style=\"rounded,dashed\"; color=\"#999999\"; "
                     f"fontsize={GRAPH_FONT_SIZE};")
    children = {i: [c for c in range(1, n) if parents[c] == i] for i in range(n)}
    for i in range(n):
        st_ = states.get(i, "pending")
        fill = state_color(st_)
        mark = STATE_MARK.get(st_, "")
        text = (f"{labels[i]}{(' ' + mark) if mark else ''}\n{row_word} {rows[i]}" if not big
                else f"{labels[i]}{mark} · {rows[i]}")
        attrs = {"label": text, "fillcolor": fill, "fontcolor": text_on(fill), "tooltip": tooltips.get(i, text),
                 "id": f"{prefix}{i}"}
        if st_ == "discarded":
            attrs["style"] = "rounded,filled,dashed"
            attrs["color"] = "#AAAAAA"
        if i == selected:
            attrs["color"] = PALETTE["selected"]
            attrs["penwidth"] = "6"
        lines.append(f"  {prefix}{i} {_attrs(**attrs)};")
    if big and links:
        # 64 nodes: sibling arrows would hide the tree; draw parent edges, the first child's in blue.
        for i in range(1, n):
            p = parents[i]
            first = children[p][0] == i
            faded = states.get(i) == "discarded"
            color = PALETTE["current"] if first and not faded else ("#BBBBBB" if faded else None)
            lines.append(f"  {prefix}{p} -> {prefix}{i} {_attrs(color=color)};")
    elif not links:
        for i in range(1, n):
            p = parents[i]
            faded = states.get(i) == "discarded"
            lines.append(f"  {prefix}{p} -> {prefix}{i} {_attrs(color='#BBBBBB' if faded else None)};")
    else:
        for i in range(n):
            kids = children[i]
            if kids:
                lines.append(f"  {prefix}{i} -> {prefix}{kids[0]} {_attrs(color=PALETTE['current'])};")
                for a, b in zip(kids, kids[1:]):
                    lines.append(f"  {prefix}{a} -> {prefix}{b} {_attrs(style='dashed', color=PALETTE['rejected'], constraint='false')};")
                    # keep the parent above later siblings, without drawing that edge
                    lines.append(f"  {prefix}{i} -> {prefix}{b} [style=invis];")
        for i in range(n):  # siblings on one rank, in order
            kids = children[i]
            if len(kids) > 1:
                lines.append("  { rank=same; " + " -> ".join(f"{prefix}{k}" for k in kids) + " [style=invis]; }")
    if links:
        # The arrow words live in a key under the tree, never on the arrows: an edge label would
        # overlap nodes and arrows (and Chinese labels were clipped at the picture's edge).
        keys = [(link_words[0], PALETTE["current"], "solid")]
        if not big:
            keys.append((link_words[1], PALETTE["rejected"], "dashed"))
        depth = [0] * n
        for i in range(1, n):
            depth[i] = depth[parents[i]] + 1 if 0 <= parents[i] < i else 0
        deepest = max(range(n), key=lambda i: depth[i]) if n else 0
        for k, (word, color, style) in enumerate(keys):
            a, b2 = f"{prefix}key{k}a", f"{prefix}key{k}b"
            lines.append(f"  {a} [shape=point, width=0.05, color={_q(color)}, label=\"\", class=\"svkey\"]; "
                         f"{b2} {_attrs(shape='plaintext', style='', label=word, fontcolor=color, fontsize=str(GRAPH_FONT_SIZE - 2))[:-1]}, class=\"svkey\"];")
            lines.append(f"  {a} -> {b2} {_attrs(color=color, style=style, minlen='2')};")
            lines.append(f"  {{ rank=same; {a}; {b2}; }}")
            if n and not body_only and cluster is None:
                anchor = f"{prefix}bonus" if bonus is not None else f"{prefix}{deepest}"
                lines.append(f"  {anchor} -> {a} [style=invis];")
            if k:
                lines.append(f"  {prefix}key{k - 1}b -> {a} [style=invis];")
                lines.append(f"  {{ rank=same; {prefix}key{k - 1}b; {a}; }}")
    if bonus is not None:
        node, tok = bonus
        fill = state_color("bonus")
        text = f"{tok} ★\n{bonus_label}"
        battrs = _attrs(label=text, fillcolor=fill, fontcolor=text_on(fill), style="rounded,filled,bold", tooltip=f"{bonus_label}: {tok}")
        lines.append(f"  {prefix}bonus {battrs};")
        lines.append(f"  {prefix}{node} -> {prefix}bonus {_attrs(style='dashed', color=fill)};")
    lines += list(extra_lines)
    if cluster is not None:
        lines.append("  }")
    if not body_only:
        lines.append("}")
    return "\n".join(lines)


def forest_dot(trees: list[dict], rankdir: str = "TB") -> str:
    """Several trees side by side, one cluster each (``trees``: kwargs of ``tree_dot`` plus ``cluster``)."""
    lines = _header("batch", rankdir=rankdir)
    if sum(len(t["parents"]) for t in trees) > 32:
        lines.append(f"  node [fontsize={GRAPH_FONT_SIZE - 2}, margin=\"0.08,0.02\", height=0.3]; graph [nodesep=0.06, ranksep=0.6];")
    for k, kw in enumerate(trees):
        lines.append(tree_dot(prefix=f"r{k}_", body_only=True, **kw))
    lines.append("}")
    return "\n".join(lines)


def loop_dot(words: dict, highlight: str | None = None, font_size: int = 22) -> str:
    """The Draft -> Target Verify -> Accept -> (Output, KV, next Draft) loop.

    ``words`` holds the display text of: draft, verify, accept, output, kv, next (each may have a
    second line after "\\n"); ``highlight`` names the stage to colour.
    """
    lines = _header("loop", rankdir="LR")
    lines.append(f"  graph [ranksep=0.35, nodesep=0.3]; node [fontsize={font_size}, margin=\"0.15,0.1\"]; "
                 f"edge [fontsize={font_size - 8}];")
    style = {
        "draft": ("#FFFFFF", None), "verify": ("#FFFFFF", None), "accept": (PALETTE["accepted"], None),
        "output": (PALETTE["bonus"], None), "kv": (PALETTE["compared"], None),
    }
    for key in ("draft", "verify", "accept", "output", "kv"):
        fill = style[key][0]
        pen = "5" if key == highlight else "2"
        color = PALETTE["selected"] if key == highlight else PALETTE["edge"]
        lines.append(f"  {key} {_attrs(label=words[key], fillcolor=fill, fontcolor=text_on(fill), penwidth=pen, color=color, tooltip=words[key])};")
    lines += [
        f"  draft -> verify {_attrs(label=words.get('e_tree', ''))};",
        f"  verify -> accept {_attrs(label=words.get('e_predict', ''))};",
        f"  accept -> output {_attrs(label=words.get('e_output', ''))};",
        f"  accept -> kv {_attrs(label=words.get('e_kv', ''))};",
        f"  output -> draft {_attrs(label=words.get('next', ''), style='dashed', constraint='false', color=PALETTE['bonus'])};",
        "}",
    ]
    return "\n".join(lines)
