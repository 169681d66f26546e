"""Team memory: spaces, collaboratively edited entries merged by the server (Yjs via
pycrdt), review and accept with DLP, and retrieval of accepted text only. One module per concept:
limits, spaces, permissions, entries, merge, canonical, dlp, accept, compaction, retrieval; their
storage (every key, condition and query of the team tables) lives in ``store``."""
