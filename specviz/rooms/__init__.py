"""The side rooms, each built on the pipeline below: the decoding loop, the three engines
(SGLang, vLLM, transformers), the audit, the pitfall gallery, export, shareable links and
Jupyter's display. May import everything below (base .. replay); never app.
"""
