"""vLLM 0.33.0's rejection-sampler Triton kernels, loaded by file path from the installed wheel.

Nothing of vLLM is copied into specviz. Either ``pip install --no-deps vllm==0.33.0`` puts the
package on disk, or ``pip download --no-deps -d .wheels vllm==0.33.0`` (what the test command does:
seconds, where unpacking the 336 MB wheel's thousands of files takes minutes) leaves the wheel in
``.wheels/`` of the repository (or the folder ``SPECVIZ_WHEELS`` names), and the one file is read
from it, unchanged, into ``.wheels/vllm-0.33.0/``. We never ``import vllm`` (its ``__init__``
pulls in the whole serving stack). We locate the file, put small stand-ins for the modules that
``vllm/v1/sample/rejection_sampler.py`` imports at its top into ``sys.modules``, and execute that
one file under a private module name. Its three kernels and their launchers then run unchanged:

- ``rejection_greedy_sample_kernel``   (launcher ``_rejection_greedy_sample``)
- ``sample_recovered_tokens_kernel``   (launcher ``_sample_recovered_tokens``)
- ``rejection_random_sample_kernel``   (launcher ``_rejection_random_sample``)

The stand-ins (everything else is the file's own code):

- ``vllm.triton_utils``: the real ``triton`` and ``triton.language`` (vLLM's module picks a
  placeholder when triton is missing; here it is present);
- ``vllm.model_executor.warmup.jit_warmup_triton_helper.triton_kernel_dispatcher_with_warmup``:
  a decorator that calls the file's dispatch function for ``(grid, constexprs)`` and launches the
  kernel with the launcher's arguments matched to the kernel's by name (``x`` -> ``x`` or
  ``x_ptr``), which is what vLLM's dispatcher does at run time, minus its ahead-of-time warm-up;
  ``DispatchSpec``, ``TritonWarmupTensor``, ``WarmupChoices``: inert placeholders used only by
  the warm-up input builders, which never run here;
- names only imported for type hints or for code paths not used here (``init_logger``,
  ``PROCESSED_LOGPROBS_MODES``, ``async_tensor_h2d``, ``LogprobsLists``, ``LogprobsTensors``,
  ``SamplerOutput``, ``MinTokensLogitsProcessor``, ``SamplingMetadata``,
  ``apply_bad_words_with_drafts``, ``apply_all_penalties``, ``apply_top_k_top_p``, ``Sampler``,
  the FLy kernels, ``SpecDecodeMetadata``, ``unconditional_to_conditional_rates``): placeholders
  that raise if ever called.

The random numbers are inputs of these kernels: ``uniform_probs`` [num_tokens] float64 (the
coins) and ``inv_q`` [batch_size, vocab_size] (one over the exponential draws, one row per
request, shared by all its positions). ``bonus_token_ids`` [batch_size, 1] is an input too (vLLM's
main Sampler draws it).
"""
from __future__ import annotations

import importlib.util
import inspect
import sys
import types
from pathlib import Path

from specviz.base.wheels import installed_version

VERSION = "0.33.0"
FILE = "v1/sample/rejection_sampler.py"
MODULE = "_specviz_vllm_rejection_sampler"


def locate() -> tuple[Path | None, str]:
    """(the rejection_sampler.py file or None, how it was found / why not)."""
    try:
        spec = importlib.util.find_spec("vllm") if "vllm" not in sys.modules or getattr(sys.modules["vllm"], "__specviz_stub__", False) is False else None
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return _from_wheel()
    version = installed_version("vllm")
    if version != VERSION:
        return None, f"vllm {version} is installed; specviz compares against exactly {VERSION}"
    path = Path(spec.submodule_search_locations[0]) / FILE
    if not path.is_file():
        return None, f"vllm {version} is installed but {FILE} is missing"
    return path, f"installed vllm {version}: {path}"


def _from_wheel() -> tuple[Path | None, str]:
    """The rejection sampler read from a downloaded ``vllm-0.33.0-*.whl`` (a zip), extracted once."""
    from specviz.base.wheels import extract  # noqa: PLC0415

    root, how = extract("vllm", VERSION, (f"vllm/{FILE}",))
    if root is None:
        return None, f"vllm=={VERSION} is not installed (pip install --no-deps vllm=={VERSION}), and {how}"
    return root / "vllm" / FILE, f"{how}: {FILE}"


def _unused(name):
    def fail(*_a, **_k):
        raise RuntimeError(f"specviz's stand-in for vllm's {name} was called; only the rejection kernels are supported")
    return fail


def _dispatcher_with_warmup(*, warmup_inputs, kernel=None):
    """Stand-in for vLLM's ``triton_kernel_dispatcher_with_warmup``: launch, without warm-up."""
    del warmup_inputs

    def decorate(dispatch):
        names = list(inspect.signature(dispatch).parameters)
        kernel_params = list(inspect.signature(kernel.fn).parameters) if hasattr(kernel, "fn") else []

        def launch(*args, **kwargs):
            grid, constexprs = dispatch(*args, **kwargs)
            bound = dict(zip(names, args))
            bound.update(kwargs)
            call = {}
            for name, value in bound.items():
                target = name if name in kernel_params else name + "_ptr"
                if target in kernel_params:  # a launcher-only argument (max_spec_len of the
                    call[target] = value     # recovered kernel) only shapes the grid
            missing = [k for k in kernel_params if k not in call and k not in constexprs]
            if missing:
                raise TypeError(f"vllm kernel {dispatch.__name__} lacks arguments {missing}")
            call.update(constexprs)
            return kernel[grid](**call)

        launch.__name__ = dispatch.__name__
        launch.kernel = kernel
        return launch

    return decorate


def _install_stubs() -> None:
    import triton  # noqa: PLC0415
    import triton.language as tl  # noqa: PLC0415

    def module(name, **attrs):
        mod = types.ModuleType(name)
        mod.__path__ = []
        mod.__specviz_stub__ = True
        for k, v in attrs.items():
            setattr(mod, k, v)
        sys.modules[name] = mod
        return mod

    placeholder = type("Placeholder", (), {"__init__": lambda self, *a, **k: None})
    for pkg in ("vllm", "vllm.config", "vllm.model_executor", "vllm.model_executor.warmup", "vllm.utils", "vllm.v1",
                "vllm.v1.sample", "vllm.v1.sample.logits_processor", "vllm.v1.sample.ops", "vllm.v1.spec_decode"):
        if pkg not in sys.modules:
            module(pkg)
    module("vllm.config.model", PROCESSED_LOGPROBS_MODES=("processed_logits", "processed_logprobs"))
    module("vllm.logger", init_logger=lambda name: __import__("logging").getLogger(name))
    module("vllm.model_executor.warmup.jit_warmup", WarmupChoices=placeholder)
    module("vllm.model_executor.warmup.jit_warmup_triton_helper", DispatchSpec=tuple, TritonWarmupTensor=placeholder,
           triton_kernel_dispatcher_with_warmup=_dispatcher_with_warmup)
    module("vllm.triton_utils", tl=tl, triton=triton)
    module("vllm.utils.torch_utils", async_tensor_h2d=_unused("async_tensor_h2d"))
    module("vllm.v1.outputs", LogprobsLists=placeholder, LogprobsTensors=placeholder, SamplerOutput=placeholder)
    module("vllm.v1.sample.logits_processor.builtin", MinTokensLogitsProcessor=placeholder)
    module("vllm.v1.sample.metadata", SamplingMetadata=placeholder)
    module("vllm.v1.sample.ops.bad_words", apply_bad_words_with_drafts=_unused("apply_bad_words_with_drafts"))
    module("vllm.v1.sample.ops.penalties", apply_all_penalties=_unused("apply_all_penalties"))
    module("vllm.v1.sample.ops.topk_topp_sampler", apply_top_k_top_p=_unused("apply_top_k_top_p"))
    module("vllm.v1.sample.sampler", Sampler=type("Sampler", (), {}))
    module("vllm.v1.spec_decode.fly", apply_fly_greedy_acceptance_kernel=_unused("fly"),
           apply_fly_random_acceptance_kernel=_unused("fly"), compute_fly_entropy=_unused("fly"))
    module("vllm.v1.spec_decode.metadata", SpecDecodeMetadata=placeholder)
    module("vllm.v1.spec_decode.utils", unconditional_to_conditional_rates=_unused("unconditional_to_conditional_rates"))


_LOADED: types.SimpleNamespace | None = None


def load() -> types.SimpleNamespace:
    """vLLM's rejection-sampler module (raises ImportError with the reason when absent)."""
    global _LOADED
    if _LOADED is not None:
        return _LOADED
    path, how = locate()
    if path is None:
        raise ImportError(how)
    saved = {k: v for k, v in sys.modules.items() if k == "vllm" or k.startswith("vllm.")}
    _install_stubs()
    try:
        spec = importlib.util.spec_from_file_location(MODULE, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[MODULE] = mod  # triton resolves the kernels' globals through the module
        spec.loader.exec_module(mod)
    finally:
        # Leave no stand-in behind: a later real ``import vllm`` must not find our placeholders.
        for k in [k for k in sys.modules if k == "vllm" or k.startswith("vllm.")]:
            del sys.modules[k]
        sys.modules.update(saved)
    _LOADED = types.SimpleNamespace(source=how, version=VERSION, path=path, module=mod,
                                    greedy=mod._rejection_greedy_sample, recovered=mod._sample_recovered_tokens,
                                    random=mod._rejection_random_sample,
                                    PLACEHOLDER_TOKEN_ID=int(mod.PLACEHOLDER_TOKEN_ID.value
                                                             if hasattr(mod.PLACEHOLDER_TOKEN_ID, "value") else mod.PLACEHOLDER_TOKEN_ID))
    return _LOADED
