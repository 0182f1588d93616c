"""The inputs: the verify tree as a person draws it (model), the scenario and its validation,
the edits the pages offer, and the names a scenario is shown by. May import base, reference
and algorithms (the registry's metadata); never replay, render or above.
"""
