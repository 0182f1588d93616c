"""What to call a scenario on screen, in file names and in titles: derived, never stored.

A scenario keeps the ``name`` of the preset it was loaded from when someone edits it (the tree
builder, the coin and probability editors). Once its inputs differ from that preset's, calling it
"running_example" beside another tree is false. ``origin`` compares the live scenario with the
preset of the same name on every call, so the words follow the inputs:

    origin(s)          -> Origin(name="running_example", preset=True, edited=True)
    display_name(s)    -> "running_example (edited)"     ("已修改的 running_example" in zh)
    file_stem(s)       -> "running_example_edited"       (export file names, test function names)

A scenario whose name is not a preset's (loaded from a file, a link) is called by its own name.
No streamlit here.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from specviz.inputs.scenario import Scenario


@dataclass(frozen=True)
class Origin:
    name: str  # the scenario's own name (a preset's when it was loaded from one)
    preset: bool  # the name is one of the presets in scenarios/
    edited: bool  # ... and the inputs differ from that preset's


@functools.lru_cache(maxsize=64)
def _preset(name: str) -> Scenario | None:
    from specviz.base.paths import scenario_dir
    from specviz.inputs.scenario import load_scenario

    path = scenario_dir() / f"{name}.json"
    if not name or "/" in name or "\\" in name or name.startswith(".") or not path.is_file():
        return None
    try:
        return load_scenario(path)
    except Exception:  # noqa: BLE001  a broken preset file names nothing: the scenario keeps its own name
        return None


def origin(s: Scenario) -> Origin:
    """Where ``s`` comes from: a preset (unchanged or edited), or its own name."""
    from specviz.inputs.edits import same_inputs

    p = _preset(s.name)
    if p is None:
        return Origin(s.name, False, False)
    return Origin(s.name, True, not same_inputs(s, p))


def is_edited(s: Scenario) -> bool:
    """True when ``s`` carries a preset's name but not that preset's inputs."""
    return origin(s).edited


def display_name(s: Scenario, lang: str = "en") -> str:
    """The name to show: "running_example", or "running_example (edited)" once the inputs differ."""
    o = origin(s)
    if not o.edited:
        return o.name
    return f"已修改的 {o.name}" if lang == "zh" else f"{o.name} (edited)"


def file_stem(s: Scenario) -> str:
    """An ASCII file-name stem: the name's letters and digits (others become "_"), "_edited" added
    when the inputs differ from the preset of that name."""
    stem = "".join(ch if (ch.isascii() and ch.isalnum()) else "_" for ch in s.name).strip("_") or "scenario"
    return stem + "_edited" if is_edited(s) else stem
