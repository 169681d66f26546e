"""Injection: the system-prompt memory section and the recalled-memory message."""
