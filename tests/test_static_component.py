"""specviz.app.ui.static_component: the loader of our Components v2 elements asks for every file the module
needs at once (a first visit pays one round trip for them, not one per file), before it imports the module, and
holds nothing but our own static paths."""
from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("streamlit")
from streamlit import config  # noqa: E402

from specviz.app.ui import static_component as sc  # noqa: E402


@pytest.fixture
def base_url_path():
    """Set server.baseUrlPath for one test (the loader reads it when it is built)."""
    old = config.get_option("server.baseUrlPath")

    def set_to(value: str):
        config.set_option("server.baseUrlPath", value)

    yield set_to
    config.set_option("server.baseUrlPath", old)


def test_the_loader_names_every_file_and_preloads_before_the_import(base_url_path):
    base_url_path("")
    js = sc.loader_js("player_streamlit.js", ("player.js", "player.css"))
    files = json.loads(re.search(r"const FILES = (\[.*?\]);", js).group(1))
    assert files == ["/app/static/player_streamlit.js", "/app/static/player.js", "/app/static/player.css"]
    body = js[js.index("export default"):]
    assert body.index("preload();") < body.index("await import(")  # asked for together, then imported
    assert 'import(new URL("/app/static/player_streamlit.js"' in body
    assert "'modulepreload'" in js and "l.as = 'style'" in js  # a module is preloaded as one, the stylesheet as a style


def test_the_loader_is_one_text_with_only_the_paths_filled_in(base_url_path):
    """Two loaders differ only in their JSON-encoded paths: nothing else is interpolated."""
    base_url_path("")

    def template(script, also):
        js = sc.loader_js(script, also)
        for url in dict.fromkeys(sc.static_url(f) for f in (script, *also)):
            js = js.replace(json.dumps(url), "URL")
        return js

    assert template("player_streamlit.js", ("player.js", "player.css")) == template("prob_tables.js", ("a.css", "b.mjs"))
    assert sc.loader_js("x.js", ("x.js",)).count('"/app/static/x.js"') == 2  # listed once, imported once


@pytest.mark.parametrize("name", ["../secret.js", "a/b.js", "https://evil.example/x.js", 'x".js', "x.js</script>",
                                  "x.py", "", ".js", "x.js\n", "x.css;", "${x}.js"])
def test_only_plain_static_file_names_are_accepted(name):
    with pytest.raises(ValueError, match="plain file name of static/"):
        sc.loader_js("player_streamlit.js", (name,))
    with pytest.raises(ValueError, match="plain file name of static/"):
        sc.loader_js(name)


def test_the_paths_follow_server_base_url_path(base_url_path):
    base_url_path("/course/specviz/")
    js = sc.loader_js("player_streamlit.js", ("player.js", "player.css"))
    files = json.loads(re.search(r"const FILES = (\[.*?\]);", js).group(1))
    assert files == ["/course/specviz/app/static/player_streamlit.js", "/course/specviz/app/static/player.js",
                     "/course/specviz/app/static/player.css"]
    assert 'import(new URL("/course/specviz/app/static/player_streamlit.js"' in js
    assert '"/app/static/' not in js


def test_the_player_preloads_its_module_import_and_stylesheet():
    """The files the player's module loads are the ones the player's loader names."""
    from pathlib import Path

    from specviz.app.ui import player

    static = Path(__file__).resolve().parents[1] / "static"
    host = (static / "player_streamlit.js").read_text(encoding="utf-8")
    needed = set(re.findall(r'from "\./([^"]+)"', host)) | set(re.findall(r'new URL\("([^"]+\.(?:js|css))"', host))
    needed.discard("graphviz.umd.js")  # 800 KB, only where the browser lays figures out: loaded when needed
    assert needed == {"player.js", "player.css"}
    sc._REGISTERED.pop("specviz.player", None)
    calls = []
    real = sc.loader_js
    try:
        sc.loader_js = lambda script, also=(): calls.append((script, also)) or real(script, also)
        player.component()
    finally:
        sc.loader_js = real
        sc._REGISTERED.pop("specviz.player", None)
    assert calls == [("player_streamlit.js", ("player.js", "player.css"))]
