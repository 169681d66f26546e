"""The extraction set's runner measures what the extraction job stores: each transcript goes
through ``make_job``/``run_job`` into a bank of its own, the window the extractor sees is the
job's (no system or injected messages), each stored memory counts once, and an extractor that
returns every transcript's reference sentences scores 100% on both splits."""

from __future__ import annotations

from bench import extraction_set as X
from chalicelib.extraction.parse import Candidate


class Scripted:
    """An extractor answering each window with a fixed list of candidates, chosen by the window's
    first line; it keeps the windows it saw."""

    name = "scripted"

    def __init__(self, answers):
        self.answers, self.seen = answers, []

    def extract(self, window):
        self.seen.append(window.text)
        return list(self.answers.get(window.lines[0][1], []))


def _first_user(t: X.Transcript) -> str:
    from chalicelib.extraction.transcript import window
    return window(list(t.messages), position=None, last_id=None, size=len(t.messages)).lines[0][1]


def test_the_runner_scores_what_the_job_stored(aws):
    trial = next(t for t in X.transcripts("tune") if t.id == "mixed-01")
    memo = Candidate(text="Priya prefers small reviewable PRs.")
    rule = Candidate(text="Always run the migration scripts against db-staging.internal first.", kind="rule")
    ext = Scripted({_first_user(trial): [memo, memo, rule]})
    stored = X.extract(trial, ext)
    # the repeated candidate is stored once; the rule item is stored as a memory too
    assert stored == [memo.text, rule.text]
    s = X.score(stored, trial.gold)
    assert (s.extracted, s.matched, s.with_subject, s.named) == (2, 2, 1, 1)


def test_the_extractor_sees_the_jobs_window(aws):
    t = next(t for t in X.all_transcripts() if any(m["role"] == "system" for m in t.messages))
    ext = Scripted({})
    assert X.extract(t, ext) == []
    [seen] = ext.seen
    assert "<memory" not in seen and "coding assistant" not in seen
    assert seen.startswith("user: ") and t.speaker in seen


def test_an_extractor_returning_the_gold_scores_full_marks(aws):
    answers = {_first_user(t): [Candidate(text=g.fact) for g in t.gold] for t in X.all_transcripts()}
    assert len(answers) == len(X.all_transcripts())  # each transcript is told apart by its first line
    ext = Scripted(answers)
    for split in X.SPLITS:
        s = X.total(X.score(X.extract(t, ext), t.gold) for t in X.transcripts(split))
        assert s.gold > 50 and (s.precision, s.recall) == (1.0, 1.0), split
        assert s.named == s.with_subject > 0, split
