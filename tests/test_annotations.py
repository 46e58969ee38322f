"""Trace annotations: the state each wording means, by rule (seeds/filesystem.md, FORMATS.md)."""

from __future__ import annotations

import pytest

from prose_tui.backends.common.annotations import classify, split_annotation


@pytest.mark.parametrize(("note", "state"), [
    ("--> bindings/a.md (complete)", "complete"),
    ("--> bindings/a.md", "complete"),            # output written
    ("--> bindings/next.md", "complete"),         # a path is not a state word
    ("--> exceptions.py created", "complete"),
    ("<-- EXECUTING", "executing"),
    ("<-- RETRYING (attempt 2/3)", "retrying"),
    ("[not yet entered]", "pending"),
    ("[...next...]", "next"),
    ("[registered]", "complete"),
    ("(registered)", "complete"),
    ("(complete - APPROVED)", "complete"),
    ("(complete - FAILED tests)", "complete"),   # the first word decides inside a bracket
    ("✓ DONE", "complete"),
    ("✓ done (succeeded after retry)", "complete"),  # the leading glyph decides
    ("✓ complete, next: review", "complete"),
    ("✗ timeout", "failed"),
    ("⊘ deferred", "skipped"),
    ("failed: rate limited", "failed"),
])
def test_the_state_an_annotation_means(note, state):
    assert classify(note) == state


def test_a_hash_inside_a_string_is_not_an_annotation():
    ann, _ = split_annotation('  b = session "Issue #43 needs a look"  # <-- EXECUTING')
    assert ann.text == '  b = session "Issue #43 needs a look"' and ann.state == "executing"


def test_a_plain_comment_line_is_program_text():
    ann, _ = split_annotation("# Triage a pull request")
    assert ann.note is None and ann.text == "# Triage a pull request"


def test_retry_attempts_and_binding_paths_are_read():
    ann, _ = split_annotation('let x = session "a"   # <-- RETRYING (attempt 2/3)')
    assert (ann.attempt, ann.max_attempts) == (2, 3)
    ann, _ = split_annotation("let a = s  # --> ./bindings/a__43.md (complete)")
    assert ann.binding == "bindings/a__43.md"
