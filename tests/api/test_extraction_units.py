"""Extraction's offline extractor and backend choice (chalicelib/extraction/models.py, which loads
the AWS SDK for Bedrock). No backend."""

from __future__ import annotations

from chalicelib.extraction.models import OfflineExtractor, backend_name
from chalicelib.extraction.transcript import window
from chalicelib.settings import Settings


def test_offline_extractor_patterns():
    w = window([{"role": "user", "content": "Remember that I deploy on Fridays. My name is Ada Lovelace. "
                                            "I prefer tabs over spaces. From now on, always write tests first. "
                                            "My password is hunter2. I am tired right now."},
                {"role": "assistant", "content": "I prefer to answer briefly."}],
               position=None, last_id=None, size=12)
    got = [(c.text, c.kind) for c in OfflineExtractor().extract(w)]
    # the speaker's name first; facts about them in the third person (no password, no passing state)
    assert got == [("The user's name is Ada Lovelace.", "memory"), ("Ada Lovelace deploys on Fridays.", "memory"),
                   ("Ada Lovelace prefers tabs over spaces.", "memory"), ("Always write tests first.", "rule")]


def test_auto_backend(monkeypatch):
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    assert backend_name(Settings(extractor="auto")) == "offline"
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "cairn-dev-run_extraction")
    assert backend_name(Settings(extractor="auto")) == "bedrock"
    assert backend_name(Settings(extractor="openai")) == "openai"
