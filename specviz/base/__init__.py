"""The vocabulary every layer shares: errors, limits, paths, the escaping rules (safety), the
result types, the input checks, the trace recorder, target probabilities and rollout parents.
Imports nothing of specviz but base itself; every other package may import it.
"""
