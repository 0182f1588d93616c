"""The app: the Streamlit helpers the pages share (ui), Streamlit's internals patched in one
place (runtime), serving N workers behind HAProxy (serve) and the command line (cli). The
top of specviz: may import every package; only pages/ and app.py import it.
"""
