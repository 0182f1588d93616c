"""The step player's data as a page's rerun sent it (AppTest): every frame of the walk, its start step."""
from __future__ import annotations

import json


def players(at) -> list[dict]:
    """The data of every step player on the page (``specviz.app.ui.player.show``), in page order."""
    from specviz.app.ui import player

    out = []
    for el in at.get("bidi_component"):
        if el.proto.component_name != "specviz.player":
            continue
        sent = json.loads(el.proto.json or el.proto.mixed.json)
        data = player.data_of(sent)
        assert data is not None, "the player's frames are no longer in this process"
        out.append(data)
    return out
