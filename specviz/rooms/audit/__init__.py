"""Audit someone else's Accept-stage outputs against the numpy reference.

Give a scenario (the inputs) and the arrays another implementation produced for it (your own
kernel, a real SGLang run): ``audit(scenario, claimed)`` recomputes everything with the
reference and reports, for the FIRST wrong value, the field, the row / slot, the expected value
and the rule it breaks in one sentence.

Auditable fields (any subset; names as in SGLang / SEMANTICS.md):

==================  =========================  ==================================================
field               shape                      meaning
==================  =========================  ==================================================
accept_index        [bs, W] (bs=1: [W])        global rows of root + accepted nodes, -1 padded
accept_token_num    [bs] (bs=1: scalar)        accepted drafts k (alias num_correct_drafts)
accept_lens         [bs]                       k + 1 (alias accept_length)
correct_len         [bs]                       DSpark: leading run of matches
commit_lens         [bs]                       k + 1 (EAGLE's accept_lens, DSpark's commit_lens)
predicts            [bs*n] or [bs, n]          token emitted after each row (accepted rows checked)
accept_tokens       [bs, W]                    predicts[accept_index] on the valid prefix, -1 beyond
outputs             per request: list          emitted tokens (accepted drafts + bonus)
out_tokens          [bs, T]                    DSpark's out_tokens
bonus               [bs]                       the last emitted token = the next root
new_seq_lens        [bs]                       seq_len + k + 1
committed_rows      per request: list          global verify rows whose KV is kept (root + accepted)
committed_tokens    per request: list          input tokens of those rows (R A C)
==================  =========================  ==================================================

Tokens may be given as ids or as vocabulary labels ("A"). Pasted text (JSON, Python lists, a
torch / numpy repr) is parsed by ``parse_array`` without ``eval``.

The package, bottom up (each module imports only the ones above it):

* ``report``  - AuditFinding (one wrong value and its rule) and AuditReport
* ``parse``   - pasted text -> nested lists (parse_array, parse_claimed_text), paste limits
* ``fields``  - field names, aliases and shapes (auditable_fields, normalise_claimed)
* ``compare`` - the reference values and the per-field diagnosis with its sentence (en / zh)
* ``check``   - the entry points: audit, expected_outputs, row_outputs, load_audit_request, audit_file
* ``quiz``    - the quiz page's questions and answer checking (quiz_scenario, check_answer)
"""
from __future__ import annotations

from specviz.rooms.audit.check import audit, audit_file, expected_outputs, load_audit_request, row_outputs
from specviz.rooms.audit.fields import (ALIASES, ALL_FIELDS, DSPARK_FIELDS, DSPARK_SAMPLING_EXTRA, EAGLE_FIELDS, TOKEN_FIELDS,
                     auditable_fields, normalise_claimed)
from specviz.rooms.audit.parse import MAX_PASTE_CHARS, MAX_PASTE_DEPTH, parse_array, parse_claimed_text
from specviz.rooms.audit.quiz import QUIZ_FIELDS, check_answer, quiz_fields, quiz_scenario
from specviz.rooms.audit.report import AuditFinding, AuditReport

__all__ = [
    "audit", "audit_file", "expected_outputs", "load_audit_request", "row_outputs",
    "ALIASES", "ALL_FIELDS", "DSPARK_FIELDS", "DSPARK_SAMPLING_EXTRA", "EAGLE_FIELDS", "TOKEN_FIELDS",
    "auditable_fields", "normalise_claimed",
    "MAX_PASTE_CHARS", "MAX_PASTE_DEPTH", "parse_array", "parse_claimed_text",
    "QUIZ_FIELDS", "check_answer", "quiz_fields", "quiz_scenario",
    "AuditFinding", "AuditReport",
]
