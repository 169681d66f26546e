"""The transcript one extraction job sends to the model.

A turn-completed hook carries the session's messages. The window is the messages after the
session's extraction cursor (or, with no cursor, the last ``extraction_window``), capped to the
last ``extraction_window`` either way so one model call stays bounded. Only ``user`` and
``assistant`` roles count; injected ``<memory ...>`` messages (Cairn's own recall output) are
skipped so the extractor never re-learns what it injected; each message is clipped to
``MAX_MESSAGE_BYTES`` UTF-8 bytes on a character boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_MESSAGE_BYTES = 2000
MIN_TRANSCRIPT_BYTES = 20
ROLES = ("user", "assistant")


def clip_utf8(text: str, max_bytes: int = MAX_MESSAGE_BYTES) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes without splitting a character."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore")


def message_text(message: Any) -> str:
    """The plain text of one message: ``content`` as a string, or the ``text`` of its parts
    (OpenAI/Anthropic-style ``[{type: text, text}]`` lists); anything else counts as empty."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return ""


def is_injected(text: str) -> bool:
    """True for a message Cairn injected itself (``<memory ...>`` blocks)."""
    return text.lstrip().startswith("<memory ") or text.lstrip().startswith("<memory>")


@dataclass
class Window:
    """The slice to extract from: ``lines`` (``(role, clipped text)``), ``end`` (the cursor
    position after it: how many of the hook's messages are now consumed) and ``last_id`` (the
    id of the last message, when messages carry ids)."""

    lines: list[tuple[str, str]]
    end: int
    last_id: str | None

    @property
    def text(self) -> str:
        """The transcript as the model sees it: ``role: text`` lines."""
        return "\n".join(f"{role}: {text}" for role, text in self.lines)

    @property
    def size_bytes(self) -> int:
        """UTF-8 bytes of the message texts (roles and separators not counted)."""
        return sum(len(t.encode("utf-8")) for _, t in self.lines)

    @property
    def too_small(self) -> bool:
        """Under ``MIN_TRANSCRIPT_BYTES``: the cursor advances with no model call."""
        return self.size_bytes < MIN_TRANSCRIPT_BYTES


def start_index(messages: list[Any], position: int | None, last_id: str | None) -> int | None:
    """Where the unread part begins: after the message whose ``id`` is the cursor's
    ``last_id`` when found, else at ``position`` when it fits the list; ``None`` when there is
    no usable cursor (the caller takes the last ``extraction_window`` messages)."""
    if last_id is not None:
        for i in range(len(messages) - 1, -1, -1):
            m = messages[i]
            if isinstance(m, dict) and m.get("id") == last_id:
                return i + 1
    if position is not None and 0 <= position <= len(messages):
        return position
    return None


def window(messages: list[Any], *, position: int | None, last_id: str | None, size: int) -> Window:
    """The ``Window`` of ``messages`` after the cursor (``position``/``last_id``), at most the
    last ``size`` messages of it, filtered and clipped as the module describes."""
    start = start_index(messages, position, last_id)
    begin = max(start if start is not None else 0, len(messages) - max(1, size))
    lines = []
    for m in messages[begin:]:
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            continue
        text = message_text(m).strip()
        if not text or is_injected(text):
            continue
        lines.append((m["role"], clip_utf8(text)))
    last = messages[-1] if messages else None
    last_id_out = last.get("id") if isinstance(last, dict) and isinstance(last.get("id"), str) else None
    return Window(lines=lines, end=len(messages), last_id=last_id_out)
