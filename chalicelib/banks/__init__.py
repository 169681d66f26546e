"""Memory banks: isolated banks of markdown rules and one-sentence memories."""
