"""The extraction model behind one small interface.

``Extractor.extract(window) -> list[Candidate]`` makes exactly one model call (or none, offline).
Three implementations, chosen by ``Settings.extractor``:

- ``bedrock``: Amazon Bedrock's Converse API through boto3 (``bedrock_model_id``); the default
  inside Lambda (``auto``).
- ``openai``: any OpenAI-compatible endpoint through the ``openai`` SDK (``openai_base_url``,
  ``openai_model``, ``openai_api_key``).
- ``offline``: the rule-based extractor of ``offline`` (no model); the default outside Lambda
  (the local stack).

Model replies are parsed by ``parse.parse_candidates`` (prose and fences tolerated); a reply with
no valid JSON array raises ``ExtractionParseError``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlparse

import boto3
from botocore.config import Config

from ..settings import Settings, get_settings
from .offline import OfflineExtractor
from .parse import Candidate, parse_candidates
from .transcript import Window

SYSTEM_PROMPT = """You extract durable memories from a conversation between a user and an assistant.
Reply with a JSON array only. Each item: {"text": str, "entities": [str], "tags": [str],
"confidence": "extracted" | "inferred", "kind": "memory" | "rule"}.
- text: ONE self-contained sentence, at most 200 characters, in the conversation's language.
- kind "memory": a fact, preference, identity or decision worth remembering in later sessions.
- kind "rule": a standing instruction the user gave for all future work ("always ...", "never ...").
- confidence "extracted" when the user said it; "inferred" when you concluded it.
- One fact per item. Copy names, hosts, paths, versions, ports and URLs exactly and whole
  ("db-staging.internal", "v2.3.1"); every value in an item must appear in the conversation.
- Facts about the user: third person with their name when the conversation gives it ("Priya
  prefers TypeScript over JavaScript"), else "The user ..."; put "user" (and the name) in entities.
- A changed date, host or decision: one item with the new value and what changed ("The launch
  moved to July 20"); never repeat the old value.
- Never include secrets (passwords, keys, tokens), ephemeral state (what is happening right now),
  small talk, thanks, answers to general-knowledge questions, or anything the assistant only
  suggested and the user did not accept. Reply [] when nothing qualifies."""

PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class ModelUsage:
    """What one model call cost, from the model's own response: ``model`` (the id the call
    named), ``input_tokens`` and ``output_tokens``; ``reported`` False when the response held no
    counts (some OpenAI-compatible servers): both are then 0."""

    model: str
    input_tokens: int
    output_tokens: int
    reported: bool = True


def _count(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


class Extractor(Protocol):
    """One extraction backend. ``name`` is reported in metrics and by the doctor. A backend that
    calls a model also sets ``last_usage`` (``ModelUsage``) after each ``extract``; callers read it
    with ``getattr(extractor, "last_usage", None)`` (``None``: no model call, no cost)."""

    name: str

    def extract(self, window: Window) -> list[Candidate]:
        """Candidates taught by ``window`` (one model call at most); raises
        ``ExtractionParseError`` on an unparseable reply, the backend's errors on a failed call."""
        ...

    def probe(self, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[bool, str]:
        """``(reachable, detail)`` within ``timeout_s`` seconds (the doctor's advisory check)."""
        ...


def user_prompt(window: Window) -> str:
    """The user message of the model call: the transcript between markers."""
    return "Conversation:\n<transcript>\n" + window.text + "\n</transcript>\nReply with the JSON array."


def _tcp_probe(url: str, timeout_s: float) -> tuple[bool, str]:
    parsed = urlparse(url)
    host = parsed.hostname or ""
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True, f"{host}:{port} reachable"
    except OSError as exc:
        return False, f"{host}:{port} unreachable ({type(exc).__name__})"


class BedrockExtractor:
    """Bedrock Converse (``bedrock-runtime``), temperature 0, one call per job."""

    name = "bedrock"

    def __init__(self, settings: Settings, client=None) -> None:
        self.model_id = settings.bedrock_model_id
        self.last_usage: ModelUsage | None = None
        self.client = client or boto3.client(
            "bedrock-runtime", region_name=settings.region,
            config=Config(connect_timeout=PROBE_TIMEOUT_S, read_timeout=settings.model_timeout_s,
                          retries={"mode": "standard", "max_attempts": 2}))

    def extract(self, window: Window) -> list[Candidate]:
        resp = self.client.converse(
            modelId=self.model_id, system=[{"text": SYSTEM_PROMPT}],
            messages=[{"role": "user", "content": [{"text": user_prompt(window)}]}],
            inferenceConfig={"maxTokens": 1500, "temperature": 0.0})
        usage = resp.get("usage") if isinstance(resp.get("usage"), dict) else None
        self.last_usage = ModelUsage(self.model_id, _count((usage or {}).get("inputTokens")),
                                     _count((usage or {}).get("outputTokens")), reported=usage is not None)
        parts = resp.get("output", {}).get("message", {}).get("content", [])
        return parse_candidates("".join(p.get("text", "") for p in parts if isinstance(p, dict)))

    def probe(self, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[bool, str]:
        return _tcp_probe(self.client.meta.endpoint_url, timeout_s)


class OpenAICompatibleExtractor:
    """Chat Completions on any OpenAI-compatible endpoint, temperature 0, one call per job
    (no SDK retries: the queue retries the whole job)."""

    name = "openai"

    def __init__(self, settings: Settings) -> None:
        from openai import OpenAI  # imported lazily: only this backend needs it

        self.model = settings.openai_model
        self.last_usage: ModelUsage | None = None
        self.client = OpenAI(base_url=settings.openai_base_url or None, api_key=settings.openai_api_key,
                             timeout=settings.model_timeout_s, max_retries=0)

    def extract(self, window: Window) -> list[Candidate]:
        resp = self.client.chat.completions.create(
            model=self.model, temperature=0,
            messages=[{"role": "system", "content": SYSTEM_PROMPT},
                      {"role": "user", "content": user_prompt(window)}])
        usage = getattr(resp, "usage", None)  # compatible servers may send none: counted as 0
        self.last_usage = ModelUsage(self.model, _count(getattr(usage, "prompt_tokens", None)),
                                     _count(getattr(usage, "completion_tokens", None)), reported=usage is not None)
        return parse_candidates(resp.choices[0].message.content or "")

    def probe(self, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[bool, str]:
        try:
            self.client.with_options(timeout=timeout_s, max_retries=0).models.list()
            return True, f"{self.client.base_url} answered"
        except Exception as exc:  # noqa: BLE001 - advisory: any failure is "unreachable"
            return False, f"{self.client.base_url} unreachable ({type(exc).__name__})"


def backend_name(settings: Settings | None = None) -> str:
    """The backend ``settings.extractor`` selects; ``auto`` is bedrock inside Lambda
    (``AWS_LAMBDA_FUNCTION_NAME`` set), offline elsewhere."""
    settings = settings or get_settings()
    if settings.extractor != "auto":
        return settings.extractor
    return "bedrock" if os.environ.get("AWS_LAMBDA_FUNCTION_NAME") else "offline"


def get_extractor(settings: Settings | None = None) -> Extractor:
    """A new extractor for the current settings (cheap: SDK clients are made per job)."""
    settings = settings or get_settings()
    name = backend_name(settings)
    if name == "bedrock":
        return BedrockExtractor(settings)
    if name == "openai":
        return OpenAICompatibleExtractor(settings)
    return OfflineExtractor()
