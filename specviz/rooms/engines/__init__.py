"""Same law, three engines (issue 22): SGLang 0.5.23, vLLM 0.33.0 and Hugging Face transformers on
the same p, q and random numbers.

- ``chain``: the inputs, the random numbers from one seed, the presets (each edge case), chi-square;
- ``rules``: specviz's description of each engine's accept test and terminal token;
- ``vllm_engine``: loads vLLM's rejection-sampler file by path (stand-ins documented there);
- ``adapters``: runs each engine's own code from its installed package;
- ``compare``: slot-by-slot comparison, the differences and the rule behind each, Monte Carlo.
"""
