"""The extraction model behind one small interface.

``Extractor.extract(window) -> list[Candidate]`` makes exactly one model call (or none, offline).
Three implementations, chosen by ``Settings.extractor``:

- ``bedrock``: Amazon Bedrock's Converse API through boto3 (``bedrock_model_id``); the default
  inside Lambda (``auto``).
- ``openai``: any OpenAI-compatible endpoint through the ``openai`` SDK (``openai_base_url``,
  ``openai_model``, ``openai_api_key``).
- ``offline``: a rule-based extractor (explicit "remember that ...", preferences, identities,
  standing instructions) that needs no model; the default outside Lambda (the local stack).

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

from .. import patterns
from ..settings import Settings, get_settings
from .parse import Candidate, parse_candidates
from .transcript import Window

SYSTEM_PROMPT = """You extract durable memories from a conversation between a user and an assistant.
Reply with a JSON array only. Each item: {"text": str, "entities": [str], "tags": [str],
"confidence": "extracted" | "inferred", "kind": "memory" | "rule"}.
- text: ONE self-contained sentence, at most 200 characters, in the conversation's language.
- kind "memory": a fact, preference, identity or decision worth remembering in later sessions.
- kind "rule": a standing instruction the user gave for all future work ("always ...", "never ...").
- confidence "extracted" when the user said it; "inferred" when you concluded it.
- Never include secrets (passwords, keys, tokens), ephemeral state (what is happening right now),
  or anything the assistant only suggested. Reply [] when nothing qualifies."""

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


# --- offline ----------------------------------------------------------------------------------

# RE2 (``patterns``): \s and \w as Python's Unicode classes, a word boundary as a non-word character
_S, _W = f"[{patterns.SPACE}]", patterns.WORD
_SENTENCE = patterns.compile(r"[^.!?\n]+[.!?]?")
_REMEMBER = patterns.compile(rf"(?i)^(?:please{_S}+)?(?:remember|note|keep in mind)(?:{_S}+that|{_S}*:)?{_S}+"
                             r"(?P<fact>.+)$")
_RULE = patterns.compile(rf"(?i)^(?:please{_S}+)?(?:from now on,?{_S}+|going forward,?{_S}+)?"
                         rf"(?P<rule>(?:always|never|don't ever|do not ever){_S}+.+)$")
_FROM_NOW = patterns.compile(rf"(?i)^(?:from now on|going forward),?{_S}+(?P<rule>.+)$")
_PREFERENCE = patterns.compile(rf"(?i)^(?:i{_S}+(?:really{_S}+)?(?:prefer|like|love|hate|dislike|don't like|"
                               rf"do not like|always|never|usually|want)|my{_S}+favou?rite)[^{_W}\n].*")
_IDENTITY = patterns.compile(r"(?i)^(?:my name is|call me|i am an? |i'm an? |i work (?:at|for|on|as)|i live in|"
                             rf"i'm based in|i am based in|my (?:role|job|team|pronouns) (?:is|are)){_S}*(?P<what>.+)$")
_NAME = patterns.compile(rf"^(?i:my name is|call me){_S}+(?P<name>[A-Z][{_W}'-]*(?:{_S}+[A-Z][{_W}'-]*)?)")
_SECRET = patterns.compile(rf"(?i)(?:password|passwd|secret|api[_ -]?key|token|bearer){patterns.AFTER_WORD}")
_EPHEMERAL = patterns.compile(rf"(?i){patterns.BEFORE_WORD}(?:right now|at the moment|currently|today|tonight"
                              rf"|this morning){patterns.AFTER_WORD}")


def _sentence(text: str) -> str:
    text = " ".join(text.split()).strip(" ,;:")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


class OfflineExtractor:
    """Rule-based extraction from the user's own messages, no model: "remember that X" (and
    "note that", "keep in mind"), preferences ("I prefer ...", "my favourite ..."), identities
    ("my name is ...", "I work at ...") and standing instructions ("always ...", "never ...",
    "from now on ...", which become rule lines). Sentences naming secrets or ephemeral state are
    skipped; each result is at most 200 characters."""

    name = "offline"

    def extract(self, window: Window) -> list[Candidate]:
        out: list[Candidate] = []
        for role, text in window.lines:
            if role != "user":
                continue
            for raw in _SENTENCE.findall(text):
                sentence = raw.strip()
                if not sentence or _SECRET.search(sentence):
                    continue
                cand = self._one(sentence)
                if cand is not None and len(cand.text) <= 200:
                    out.append(cand)
        return out

    def _one(self, sentence: str) -> Candidate | None:
        m = _REMEMBER.match(sentence)
        if m:
            return Candidate(text=_sentence(m.group("fact")), confidence="extracted", kind="memory",
                             tags=["remembered"])
        if _EPHEMERAL.search(sentence):
            return None
        m = _RULE.match(sentence) or _FROM_NOW.match(sentence)
        if m:
            return Candidate(text=_sentence(m.group("rule")), confidence="extracted", kind="rule")
        m = _IDENTITY.match(sentence)
        if m:
            name = _NAME.match(sentence)
            return Candidate(text=_sentence(sentence), confidence="extracted", kind="memory", tags=["identity"],
                             entities=[name.group("name").lower()] if name else [])
        if _PREFERENCE.match(sentence):
            return Candidate(text=_sentence(sentence), confidence="extracted", kind="memory", tags=["preference"])
        return None

    def probe(self, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[bool, str]:
        return True, "offline extractor: no model endpoint needed"


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
