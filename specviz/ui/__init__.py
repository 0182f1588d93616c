"""The Streamlit layer shared by every page (``specviz.ui.common``). Pages import it as ``ui``:

    from specviz.ui import common as ui
"""
