"""Structured memory: typed, scoped, named memories, sessions and per-turn relevance
injection, wire-compatible with the Turnstone memory API (../shared/seeds/turnstone-structured-memory.md).

One module per concept: ``names`` (the name normalizer), ``scopes`` (scope rules and the
visibility envelope), ``memories`` (upsert, get, delete, list, search, touch), ``sessions``,
``workstreams``, ``projects``, ``context`` (injection and nudges), ``admin`` (admin API, import).
"""
