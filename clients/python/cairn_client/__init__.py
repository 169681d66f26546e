"""Typed Python client for the Cairn memory service: ``Cairn`` (sync) and ``AsyncCairn`` (async).

    from cairn_client import Cairn
    with Cairn("http://127.0.0.1:8000", "cairn_...") as cairn:
        cairn.memories.save("notes", "The deploy runs on Fridays")
        for m in cairn.memories.iter("notes"):
            print(m)

Errors raise ``CairnError`` subclasses (``cairn_client.errors``); response models are in
``cairn_client.models`` (generated from the service's OpenAPI document).
"""

from . import models
from ._async_client import AsyncCairn
from ._core import RetryPolicy, as_data
from ._sync_client import Cairn
from .errors import (
    BadRequest,
    CairnConnectionError,
    CairnError,
    Conflict,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    ServiceUnavailable,
    Unauthorized,
    Unprocessable,
    UnsupportedMediaType,
)

__all__ = [
    "AsyncCairn",
    "BadRequest",
    "Cairn",
    "CairnConnectionError",
    "CairnError",
    "Conflict",
    "Forbidden",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "RetryPolicy",
    "ServerError",
    "ServiceUnavailable",
    "Unauthorized",
    "Unprocessable",
    "UnsupportedMediaType",
    "as_data",
    "models",
]
