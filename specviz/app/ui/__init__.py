"""The Streamlit layer shared by every page (``specviz.app.ui.common``). Pages import it as ``ui``:

    from specviz.app.ui import common as ui
"""
