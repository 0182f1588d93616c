"""Run a scenario and replay its trace: the engine (inputs -> the chosen backend's result ->
the commit view), typed events, frames, the one replay (steps), captions and words, the
invariants, and the step player's data and frames. May import base, reference, kernels,
algorithms, inputs and render; never rooms or app.
"""
