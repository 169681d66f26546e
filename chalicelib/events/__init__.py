"""Handlers of the non-HTTP events, as plain functions over plain dicts:
the queue's extraction jobs (``extraction``), S3 object changes that reload rules and config
(``reload``) and the scheduled jobs (``schedules``). No Chalice here: the decorated functions in
``chalicelib.api.events`` call these, and so does the local stack's loop (infra/local/events.py).
"""
