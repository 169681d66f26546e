"""Extraction's pure parts: the transcript window and the tolerant parser. No backend (the
offline extractor's tests are in tests/api: its module loads the AWS SDK)."""

from __future__ import annotations

import pytest

from chalicelib.extraction.parse import ExtractionParseError, parse_candidates
from chalicelib.extraction.transcript import clip_utf8, window


def test_clip_never_splits_a_character():
    text = "é" * 1500  # 2 bytes each
    clipped = clip_utf8(text, 2001)
    assert len(clipped.encode("utf-8")) == 2000 and clipped == "é" * 1000
    assert clip_utf8("日本語", 7) == "日本"
    assert clip_utf8("short") == "short"


def test_window_roles_injected_messages_and_cursor():
    msgs = [{"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "first", "id": "m1"},
            {"role": "assistant", "content": [{"type": "text", "text": "second"}], "id": "m2"},
            {"role": "user", "content": "<memory bank=\"work\">\n- old memory\n</memory>", "id": "m3"},
            {"role": "tool", "content": "tool output", "id": "m4"},
            {"role": "user", "content": "x" * 3000, "id": "m5"}]
    w = window(msgs, position=None, last_id=None, size=12)
    assert [r for r, _ in w.lines] == ["user", "assistant", "user"]
    assert len(w.lines[-1][1].encode()) == 2000
    assert w.end == 6 and w.last_id == "m5"
    after = window(msgs, position=None, last_id="m2", size=12)
    assert [t[:5] for _, t in after.lines] == ["xxxxx"]
    by_position = window(msgs, position=2, last_id=None, size=12)
    assert next(t for _, t in by_position.lines) == "second"
    last_two = window(msgs, position=None, last_id=None, size=2)
    assert len(last_two.lines) == 1  # the tool message does not count
    assert window(msgs[:2], position=None, last_id=None, size=12).too_small


@pytest.mark.parametrize("reply", [
    '[{"text": "A fact."}]',
    'Sure, here is the list:\n[{"text": "A fact."}]\nLet me know!',
    '```json\n[{"text": "A fact."}]\n```',
    'Thinking [not json] ...\n```\n[{"text": "A fact.", "confidence": "bogus", "kind": "bogus"}]\n```',
])
def test_parser_tolerates_prose_and_fences(reply):
    [c] = parse_candidates(reply)
    assert (c.text, c.confidence, c.kind) == ("A fact.", "extracted", "memory")


@pytest.mark.parametrize("reply", ["", "no array here", "[{\"text\": \"x\",}]", "{\"text\": \"x\"}",
                                   "[{\"tags\": []] trailing"])
def test_parser_rejects_replies_without_a_valid_array(reply):
    with pytest.raises(ExtractionParseError):
        parse_candidates(reply)


def test_parser_empty_array_and_bad_items():
    assert parse_candidates("Nothing worth keeping: []") == []
    out = parse_candidates('[{"text": ""}, {"text": 5}, {"text": "Kept.", "entities": "nope"}, {"text": "Also kept."}]')
    assert [c.text for c in out] == ["Also kept."]
