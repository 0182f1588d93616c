"""specviz: the Accept stage of speculative decoding (SGLang 0.5.23 semantics), made visible.

Layers, imports pointing down only: model and scenario values -> numpy reference (the spec in
code, with trace events) -> torch / Triton backends behind one registry -> frames -> renderers ->
Streamlit pages and the CLI.
"""
from specviz.base.errors import BackendUnavailable, SpecvizError, SpecvizWarning

__version__ = "0.1.0"
__all__ = ["SpecvizError", "SpecvizWarning", "BackendUnavailable", "__version__"]
