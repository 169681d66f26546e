"""Team-memory caps (keystone-team-memory.md, "Limits").

Each cap is an environment variable ``KEYSTONE_CONTEXT_MEMORY_<NAME>`` with the contract's
default. Values are validated by pydantic-settings the first time a team request (or the local
stack's start-up check, ``check()``) reads them; an invalid value raises ``ConfigError`` whose
message names the variable, e.g. ``KEYSTONE_CONTEXT_MEMORY_COMPACT_AFTER: Input should be greater
than or equal to 1``. Cached per distinct ``KEYSTONE_CONTEXT_MEMORY_*`` environment (read lazily:
Chalice applies stage variables per request).
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ..settings import LIMIT_MAX, from_env

ENV_PREFIX = "KEYSTONE_CONTEXT_MEMORY_"


class Limits(BaseSettings):
    """The caps. Bytes are UTF-8 bytes; units are UTF-16 code units (Yjs clocks)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    max_update_bytes: int = Field(65536, ge=1, le=LIMIT_MAX, description="Largest single Yjs update, bytes (decoded).")
    max_text_bytes: int = Field(65536, ge=1, le=LIMIT_MAX, description="Largest merged entry text, UTF-8 bytes.")
    max_units: int = Field(262144, ge=1, le=LIMIT_MAX, description="UTF-16 units of a document, live and deleted.")
    max_updates_per_entry: int = Field(50000, ge=1, le=LIMIT_MAX, description="Rows of one entry's edit log.")
    updates_per_minute: int = Field(240, ge=1, le=LIMIT_MAX,
                                    description="Updates per author per entry per minute (x5 across entries).")
    entries_per_space: int = Field(5000, ge=1, le=LIMIT_MAX, description="Entries of a space that are not archived.")
    compact_after: int = Field(256, ge=1, le=LIMIT_MAX, description="Retained update payloads that trigger compaction.")

    @property
    def updates_per_minute_all(self) -> int:
        """Updates per author per minute across all entries: five times the per-entry rate."""
        return 5 * self.updates_per_minute

    def public(self) -> dict[str, int]:
        """The ``limits`` object of ``GET /entries/{id}`` (camelCase names)."""
        return {"maxUpdateBytes": self.max_update_bytes, "maxTextBytes": self.max_text_bytes,
                "maxUnits": self.max_units, "maxUpdatesPerEntry": self.max_updates_per_entry,
                "updatesPerMinute": self.updates_per_minute, "entriesPerSpace": self.entries_per_space,
                "compactAfter": self.compact_after}


def get_limits() -> Limits:
    """The caps for the current environment; ``ConfigError`` naming the variable when invalid."""
    return from_env(Limits, ENV_PREFIX)


def check() -> Limits:
    """Validate the caps at start-up (the local stack and the first request call it)."""
    return get_limits()
