"""Injection: the system-prompt memory section and the recalled-memory message (issue 3, item 4)."""
