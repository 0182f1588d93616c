"""specviz: the Accept stage of speculative decoding (SGLang 0.5.23 semantics), made visible.

The folders are the pipeline, in ``LAYERS`` order (lowest first); a module imports its own package
and the ones listed before it, never one after (tests/test_layering.py reads ``LAYERS``):

    base        errors, limits, paths, escaping (safety), result types, input checks, the trace recorder
    reference   the numpy reference: the specification in code, the only backend that records a trace
    kernels/    (beside specviz/) the torch and Triton kernels, over the reference's types
    algorithms  the registry (where a sampler is added), the calls, the backends over kernels/, closed forms
    inputs      the verify tree as drawn, the scenario and its validation, edits, names
    render      pure figures: DOT, SVG charts, tables (no Streamlit)
    replay      run a scenario (engine), then its trace as events, frames, steps, captions, the player's frames
    rooms       the side rooms: decoding loop, engines (SGLang / vLLM / transformers), audit, pitfalls,
                export, share links, Jupyter
    app         the Streamlit helpers (ui), Streamlit's runtime patches, serving, the command line

Above them: ``pages/`` and ``app.py`` (widgets and calls only).
"""
from specviz.base.errors import BackendUnavailable, SpecvizError, SpecvizWarning

LAYERS = ("specviz.base", "specviz.reference", "kernels", "specviz.algorithms", "specviz.inputs", "specviz.render",
          "specviz.replay", "specviz.rooms", "specviz.app")

__version__ = "0.1.0"
__all__ = ["SpecvizError", "SpecvizWarning", "BackendUnavailable", "LAYERS", "__version__"]
