"""Validated configuration.

Settings come from environment variables prefixed ``CAIRN_`` (``.chalice/config.json`` sets them
per stage). They are read lazily, on first use in a request, because Chalice's test client
applies a stage's variables only for the duration of each request. ``get_settings()`` caches one
snapshot per distinct environment, so a changed variable is seen on the next call.

A bad value raises ``ConfigError`` whose message names the variable, e.g.
``CAIRN_MAX_BODY_BYTES: Input should be a valid integer``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .errors import ConfigError

ENV_PREFIX = "CAIRN_"
LIMIT_MAX = 10**15
"""The largest value of any limit, rate or quota (a setting, an operator's or an org admin's value):
below 2^53, so every client's JSON numbers hold it exactly."""


class Settings(BaseSettings):
    """Service settings. Every field maps to ``CAIRN_<FIELD>`` (upper case)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    stage: str = Field("local", description="Deployment stage name: local, dev, prod.")
    region: str = Field("us-east-1", description="AWS region for DynamoDB, S3 and SQS.")
    table_prefix: str = Field("cairn-local-", description="Prefix of every DynamoDB table name.")
    bucket: str = Field("cairn-local-data", description="The S3 bucket for rules, trash, snapshots, exports.")
    queue_url: str = Field("", description="SQS FIFO queue URL for extraction jobs; empty runs jobs inline.")
    max_body_bytes: int = Field(5 * 1024 * 1024, ge=1024, description="Largest accepted request body, bytes.")
    export_inline_bytes: int = Field(5 * 1024 * 1024, ge=1, description="Exports up to this many bytes are "
                                     "returned inline; larger ones as a presigned URL.")
    presign_ttl_s: int = Field(900, ge=60, le=7 * 24 * 3600,
                               description="Lifetime of presigned export/upload URLs, seconds.")
    idempotency_ttl_s: int = Field(24 * 3600, ge=60,
                                   description="How long an Idempotency-Key replays its first response, seconds.")
    write_retries: int = Field(60, ge=1, le=500,
                               description="Attempts for a write that loses an optimistic-concurrency race.")
    write_lanes: int = Field(16, ge=1, le=64,
                             description="Write lanes of a new bank: concurrent writers of one bank meet only "
                                         "within a lane.")
    token_touch_interval_s: int = Field(60, ge=0,
                                        description="Minimum seconds between last_used_at updates of a token.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="Level of the cairn.* loggers (chalicelib.logs).")
    # extraction: "auto" = Bedrock inside Lambda, the offline extractor elsewhere
    extractor: Literal["auto", "bedrock", "openai", "offline"] = Field("auto", description="Extraction model backend.")
    bedrock_model_id: str = Field("anthropic.claude-3-haiku-20240307-v1:0", description="Bedrock Converse model id.")
    openai_base_url: str = Field("", description="Base URL of an OpenAI-compatible endpoint (…/v1).")
    openai_model: str = Field("gpt-4o-mini", description="Model name sent to the OpenAI-compatible endpoint.")
    openai_api_key: str = Field("unused", repr=False, description="API key of that endpoint (never logged).")
    model_timeout_s: float = Field(30.0, gt=0, le=300, description="Timeout of one extraction model call, seconds.")
    index_dir: str = Field("", description="Directory of the recall indexes; empty: a private one per process.")
    index_cache_mb: float = Field(400.0, ge=0, description="Size of the cached recall indexes before eviction, MB.")
    snapshot_every: int = Field(1000, ge=1, le=1_000_000, description="Changes since a bank's last index snapshot "
                                "after which the container that catches up to them (a reader, or a writer) leaves "
                                "a new one: a cold container replays about this many at most.")
    snapshot_min_interval_s: float = Field(30.0, ge=0, le=86_400, description="Least time between two index snapshots "
                                           "of one bank left by readers and writers, seconds (the rate bound).")
    backfill_batch: int = Field(200, ge=1, le=100_000, description="Memories one backfill run examines at most "
                                "(the scheduled job runs one per bank per tick).")
    import_inline_bytes: int = Field(5 * 1024 * 1024, ge=1,
                                     description="Largest inline import body, bytes (larger: import-uploads).")
    import_upload_max_bytes: int = Field(32 * 1024 * 1024, ge=1, description="Largest import-uploads file, bytes "
                                         "(its size is read before the file; larger: 413, split the file).")
    memories_page_max: int = Field(500, ge=1, description="Largest page of a bank's memory listing (its limit).")
    memories_page_default: int = Field(50, ge=1, description="Page size of a bank's memory listing without a limit.")
    idempotency_key_max_chars: int = Field(255, ge=1, description="Longest accepted Idempotency-Key, characters.")
    mcp_allowed_origins: str = Field("", description="Browser origins (scheme://host[:port], comma-separated) "
                                     "allowed to call /mcp; a request with another Origin gets 403.")
    # default limits of every org and token (0 = no limit); an operator may set an org's own
    rate_requests_per_minute: int = Field(600, ge=0, le=LIMIT_MAX, description="Requests per minute of one "
                                          "token (token bucket refill); 0 = no rate limit.")
    rate_burst: int = Field(120, ge=1, le=LIMIT_MAX,
                            description="Requests one idle token may send at once (bucket capacity).")
    rate_org_requests_per_minute: int | None = Field(None, ge=0, le=LIMIT_MAX, description="Requests per minute "
                                                     "of all an org's tokens together; unset: 10 x one token's; "
                                                     "0 = no org-wide limit.")
    rate_org_burst: int | None = Field(None, ge=1, le=LIMIT_MAX, description="Requests all an org's tokens may "
                                       "send at once; unset: 10 x one token's burst.")
    rate_as_of_cost: int = Field(10, ge=1, le=LIMIT_MAX,
                                 description="Bucket tokens an as_of recall spends (a warm one spends 1).")
    quota_memories_per_bank: int = Field(250_000, ge=0, le=LIMIT_MAX,
                                         description="Live memories of one bank; 0 = no limit.")
    quota_banks_per_org: int = Field(1_000, ge=0, le=LIMIT_MAX, description="Live banks of one org; 0 = no limit.")
    usage_retention_days: int = Field(400, ge=1, le=3650, description="Days usage counters are kept "
                                      "(the usage table's TTL).")
    usage_shards: int = Field(8, ge=1, le=64, description="Counter items a token's writes of one hour "
                              "spread over outside the bank write lanes (fewer meetings of concurrent writers).")
    quota_extraction_tokens_per_day: int = Field(
        5_000_000, ge=0, le=LIMIT_MAX,
        description="Extraction model tokens (input + output) of one org per UTC day; 0 = no limit.")
    model_prices: str = Field("{}", description="Extraction model prices, JSON {model id: [USD per million input "
                              "tokens, USD per million output tokens]}; a model not listed costs 0.")

    @field_validator("model_prices")
    @classmethod
    def _prices(cls, v: str) -> str:
        parse_prices(v)
        return v

    def table_name(self, logical: str) -> str:
        """Physical DynamoDB table name for a logical one (``tokens`` -> ``cairn-local-tokens``)."""
        return f"{self.table_prefix}{logical}"


_lock = threading.Lock()
_cache: dict[tuple, BaseSettings] = {}

S = TypeVar("S", bound=BaseSettings)


def from_env(cls: type[S], prefix: str) -> S:
    """An instance of the pydantic-settings class ``cls`` (variables ``<prefix><FIELD>``), cached
    per distinct environment under ``prefix`` so a changed variable is seen on the next call.

    Raises ``ConfigError`` naming each offending variable, e.g. ``CAIRN_MAX_BODY_BYTES: Input
    should be a valid integer``. Shared by ``get_settings`` and the team-memory limits.
    """
    key = (cls, tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(prefix))))
    cached = _cache.get(key)
    if cached is not None:
        return cached  # type: ignore[return-value]  # the cache is keyed by cls: its value is a cls
    try:
        value = cls()
    except ValidationError as exc:
        problems = [{"source": "environment", "key": f"{prefix}{str(e['loc'][0]).upper() if e['loc'] else '?'}",
                     "problem": e["msg"]} for e in exc.errors()]
        raise ConfigError("invalid configuration: " + "; ".join(f"{p['key']}: {p['problem']}" for p in problems),
                          problems=problems) from None
    with _lock:
        _cache[key] = value
    return value


_overrides: ContextVar[Mapping[str, Any]] = ContextVar("cairn_settings_overrides", default=MappingProxyType({}))


def parse_prices(raw: str) -> dict[str, tuple[float, float]]:
    """``CAIRN_MODEL_PRICES`` as ``{model: (usd_per_mtok_in, usd_per_mtok_out)}``. Raises
    ``ValueError`` unless it is a JSON object of model ids to two non-negative numbers."""
    import json
    try:
        data = json.loads(raw or "{}")
    except ValueError:
        raise ValueError("must be a JSON object {model: [usd_per_mtok_in, usd_per_mtok_out]}") from None
    if not isinstance(data, dict):
        raise ValueError("must be a JSON object {model: [usd_per_mtok_in, usd_per_mtok_out]}")
    out = {}
    for model, pair in data.items():
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 1e6 for x in pair)):
            raise ValueError(f"{model}: a price is [usd_per_mtok_in, usd_per_mtok_out], two numbers >= 0")
        out[str(model)] = (float(pair[0]), float(pair[1]))
    return out


def get_settings() -> Settings:
    """The settings for the current environment (cached per distinct ``CAIRN_*`` environment),
    with the current ``override`` applied.

    Raises ``ConfigError`` naming the offending variable when a value does not validate.
    """
    settings = from_env(Settings, ENV_PREFIX)
    extra = _overrides.get()
    return settings.model_copy(update=extra) if extra else settings


@contextmanager
def override(**fields: Any) -> Iterator[None]:
    """Within the block (this thread or task only), ``get_settings()`` returns the settings with
    ``fields`` replaced, e.g. ``override(export_inline_bytes=2**62)``; the environment is left
    alone. Raises ``ConfigError`` for a field ``Settings`` does not have."""
    unknown = sorted(set(fields) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"unknown setting(s) {unknown}")
    token = _overrides.set(MappingProxyType({**_overrides.get(), **fields}))
    try:
        yield
    finally:
        _overrides.reset(token)


def is_configured(field: str) -> bool:
    """True when ``CAIRN_<FIELD>`` is set to a non-empty value (a deployment's own value rather
    than the local default), e.g. ``is_configured("bucket")``."""
    return bool(os.environ.get(f"{ENV_PREFIX}{field.upper()}"))
