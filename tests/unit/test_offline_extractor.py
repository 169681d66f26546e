"""The offline extractor (chalicelib/extraction/offline.py): the trial transcript of the
extraction set extracted exactly, and each of its rules on small transcripts. No backend."""

from __future__ import annotations

import pytest

from bench import extraction_set as X
from chalicelib.extraction.offline import OfflineExtractor
from chalicelib.extraction.transcript import Window, window


def extract(*texts: str) -> list[tuple[str, str, list[str]]]:
    """``(text, kind, entities)`` of each candidate; ``texts`` alternate user and assistant."""
    lines = [("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]
    return [(c.text, c.kind, c.entities)
            for c in OfflineExtractor().extract(Window(lines=lines, end=len(lines), last_id=None))]


def texts(*messages: str) -> list[str]:
    return [t for t, _, _ in extract(*messages)]


def test_the_trial_transcript_gives_exactly_its_memories():
    trial = next(t for t in X.transcripts("tune") if t.id == "mixed-01")
    w = window(list(trial.messages), position=None, last_id=None, size=12)
    got = [(c.text, c.kind, c.entities) for c in OfflineExtractor().extract(w)]
    priya = ["user", "priya"]
    assert got == [
        ("The user's name is Priya.", "memory", priya),
        ("Priya is picking up the billing migration from Marco this week.", "memory", priya),
        ("The staging database is at db-staging.internal, port 5432.", "memory", []),
        ("Priya prefers small reviewable PRs over one big branch.", "memory", priya),
        ("The launch moved to July 20.", "memory", []),
    ]
    s = X.score([t for t, _, _ in got], trial.gold)
    assert (s.precision, s.recall, s.named) == (1.0, 1.0, s.with_subject)


def test_dotted_names_hosts_paths_versions_and_urls_stay_whole():
    got = texts("The Airflow instance is at airflow.data.internal, and DAGs live in /opt/airflow/dags. "
                "We're pinned to v2.3.1 of the SDK. The staging API is https://api.staging.acme.dev.")
    assert got == ["The Airflow instance is at airflow.data.internal.", "DAGs live in /opt/airflow/dags.",
                   "We're pinned to v2.3.1 of the SDK.", "The staging API is https://api.staging.acme.dev."]


def test_facts_about_the_speaker_name_them_and_keep_the_user_entity():
    assert extract("Call me Tomás. I'm the tech lead on the payments team.") == [
        ("The user's name is Tomás.", "memory", ["user", "tomás"]),
        ("Tomás is the tech lead on the payments team.", "memory", ["user", "tomás"])]
    # the name may come after the fact; without one the speaker is "the user"
    assert texts("My manager is Felix.", "OK.", "I'm Noor, by the way.") == [
        "The user's name is Noor.", "Noor's manager is Felix."]
    assert extract("I prefer TypeScript over JavaScript for anything new.") == [
        ("The user prefers TypeScript over JavaScript for anything new.", "memory", ["user"])]


@pytest.mark.parametrize(("said", "kept", "old"), [
    ("Heads up: the security audit got pushed from May 12 to May 26.", "The security audit got pushed to May 26.",
     "May 12"),
    ("The Grafana box moved from metrics-old.corp.local to grafana.ops.internal last night.",
     "The Grafana box moved to grafana.ops.internal last night.", "metrics-old"),
    ("The deadline slipped to March 3 from February 20.", "The deadline slipped to March 3.", "February 20"),
    ("Actually, the launch is July 20, not June 30.", "The launch is July 20.", "June 30"),
])
def test_a_change_keeps_what_changed_and_its_new_value_only(said, kept, old):
    assert texts(said) == [kept]
    assert texts(f"{said} It was {old} before, so we have more time.") == [kept]


@pytest.mark.parametrize("said", [
    ("What's the capital of Australia?", "Canberra."),
    ("Thanks, that's all for today!", "You're welcome."),
    ("I like that explanation, thanks. Can you also show an example?", "Sure."),
    ("Remember when everyone wrote their build scripts in Perl? Good times.", "Ha!"),
    ("ok so the nightly export failed again", "Sorry. What does the log say?", "Timeout talking to the warehouse."),
    ("Can you add retries?", "Should I switch the client to Tenacity?", "No, not now."),
    ("We decided on Postgres.", "Want me to port the pipelines to Dagster?", "Yes."),
    ("I'm on call this week so keep it quick.",),
    ("Point the migration scripts at db-staging.internal.",),
])
def test_no_memory_from_small_talk_questions_replies_or_suggestions_not_taken(said):
    got = texts(*said)
    assert got in ([], ["We decided on Postgres."]), got


def test_an_accepted_proposal_and_a_correction_are_kept():
    assert texts("We use PostgreSQL 16.", "Should I set up the migrations with Alembic?", "Yes, Alembic.") == [
        "We use PostgreSQL 16.", "The user confirmed: set up the migrations with Alembic."]
    assert texts("Can you add a date library?", "I'll run npm install date-fns.", "pnpm, not npm, please.") == [
        "The user prefers pnpm over npm."]


def test_every_word_of_a_memory_comes_from_the_transcript():
    """No invented value: over the tuning split, each word of each memory is in the transcript,
    apart from the words that rewrite a sentence in the third person."""
    rewrite = {"the", "user", "user's", "is", "has", "would", "doesn't", "their", "them", "they", "they're",
               "prefers", "over", "role", "pronouns", "are", "name", "confirmed:"}
    for t in X.transcripts("tune"):
        w = window(list(t.messages), position=None, last_id=None, size=12)
        said = " ".join(text for role, text in w.lines).casefold()
        for c in OfflineExtractor().extract(w):
            for word in c.text.casefold().rstrip(".").replace(";", " ").replace(",", " ").split():
                stem = word.removesuffix("'s")
                assert stem in rewrite or stem in said or stem.rstrip("s") in said \
                    or stem.removesuffix("es") in said or stem[:-3] + "y" in said, (t.id, c.text, word)
