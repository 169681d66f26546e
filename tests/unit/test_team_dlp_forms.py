"""DLP catches passwords however they are written, and leaves ordinary prose about passwords alone."""

from __future__ import annotations

import pytest

from chalicelib.team import dlp

SECRET = "hunter2x"
FORMS = [f"password: {SECRET}", f"password={SECRET}", f"PGPASSWORD={SECRET}", f"the password is {SECRET}",
         f"The staging DB password was {SECRET}.", f"passphrase: {SECRET}"]


@pytest.mark.parametrize("form", FORMS)
def test_each_password_form_is_found(form):
    """Unquoted passwords were missed (``password: X``, ``password=X``, ``PGPASSWORD=X``, "the
    password is X"): an accepted entry served them from retrieval under ``redact``."""
    text, kinds = dlp.gated(f"Note for the team.\n{form}\nThanks.")
    assert SECRET not in text and kinds == ["password"], text


@pytest.mark.parametrize("prose", ["The password is stored in the vault.", "Use the password manager.",
                                   "Passwords must rotate every 90 days.", "password policy: 12 characters"])
def test_ordinary_sentences_about_passwords_are_left_alone(prose):
    assert dlp.gated(prose) == (prose, [])
