"""Memory banks: isolated banks of markdown rules and one-sentence memories (issue 2, item 6)."""
