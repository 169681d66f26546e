"""Responses checked against the OpenAPI document: the local stack's test mode.

``ResponseContract(document).check(method, path, status, headers, body)`` returns the ways one
response breaks the document (an empty list when it keeps it): a status the operation does not
list, a media type it does not declare, a missing ``X-Request-Id``, a JSON body that fails the
declared schema. Paths no operation matches (the catch-all 404s, 405s) are not the document's
to judge and pass.

With ``CAIRN_CONTRACT_LOG=<file>`` the local launcher (``chalice_local``) checks every response it
serves and appends each violation to that file as one JSON line ``{method, path, status,
problems}``; the end-to-end suite fails a test that left one. The service itself never checks
(``chalicelib`` answers; the document describes it).
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

LOG_ENV = "CAIRN_CONTRACT_LOG"
DOC_URI = "urn:cairn:openapi"
MAX_PROBLEMS = 5


def _pointer(*parts: str) -> str:
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass
class _Operation:
    method: str
    template: str
    pattern: re.Pattern[str]
    literal_segments: int
    op: dict[str, Any]


def _is_json(media: str) -> bool:
    """A JSON body's media type (``application/json``, ``...+json``); ndjson is lines of JSON, not JSON."""
    return media == "application/json" or media.endswith("+json")


class ResponseContract:
    """The document's operations, ready to check responses (thread-safe)."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        resource = Resource.from_contents(document, default_specification=DRAFT202012)
        self.registry: Registry = Registry().with_resource(DOC_URI, resource)
        self.operations: list[_Operation] = []
        for template, ops in document["paths"].items():
            regex = "^" + re.sub(r"\\{\w+\\}", "[^/]+", re.escape(template)) + "$"
            literal = sum(1 for seg in template.split("/") if seg and not seg.startswith("{"))
            for method, op in ops.items():
                self.operations.append(_Operation(method.upper(), template, re.compile(regex), literal, op))
        # a literal segment beats a parameter: /v1/api/memories/search before /v1/api/memories/{name}
        self.operations.sort(key=lambda o: -o.literal_segments)
        self._validators: dict[str, Draft202012Validator] = {}
        self._lock = threading.Lock()

    def operation(self, method: str, path: str) -> _Operation | None:
        """The operation answering ``method path`` (a path without its query string), or None."""
        for candidate in self.operations:
            if candidate.method == method.upper() and candidate.pattern.match(path):
                return candidate
        return None

    def _validator(self, pointer: str) -> Draft202012Validator:
        with self._lock:
            found = self._validators.get(pointer)
            if found is None:
                found = Draft202012Validator({"$ref": f"{DOC_URI}#/{pointer}"}, registry=self.registry)
                self._validators[pointer] = found
            return found

    def _response(self, op: _Operation, status: int) -> tuple[str, dict[str, Any]] | None:
        responses = op.op.get("responses", {})
        key = str(status) if str(status) in responses else f"{str(status)[0]}XX"
        found = responses.get(key)
        if found is None:
            return None
        ref = found.get("$ref")
        if ref:
            name = ref.rsplit("/", 1)[-1]
            return _pointer("components", "responses", name), self.document["components"]["responses"][name]
        return _pointer("paths", op.template, op.method.lower(), "responses", key), found

    def check(self, method: str, path: str, status: int, headers: dict[str, str], body: bytes | str) -> list[str]:
        """The ways this response breaks the document; ``[]`` when it keeps it."""
        op = self.operation(method, path)
        if op is None or method.upper() == "HEAD":
            return []
        found = self._response(op, status)
        if found is None:
            return [f"status {status} is not listed for {op.method} {op.template}"]
        pointer, response = found
        lower = {k.lower(): v for k, v in headers.items()}
        problems = [f"header {name} is missing" for name, spec in response.get("headers", {}).items()
                    if self._required(spec) and name.lower() not in lower]
        content = response.get("content")
        if not content:
            return problems
        media = (lower.get("content-type") or "").split(";")[0].strip().lower()
        if media not in content:
            return [*problems, f"Content-Type {media!r} is not one of {sorted(content)}"]
        if not _is_json(media) or "schema" not in content[media]:
            return problems
        try:
            data = json.loads(body or b"null")
        except ValueError:
            return [*problems, "the body is not JSON"]
        validator = self._validator(f"{pointer}/content/{_pointer(media)}/schema")
        for error in list(validator.iter_errors(data))[:MAX_PROBLEMS]:
            where = "/".join(str(p) for p in error.absolute_path) or "(body)"
            problems.append(f"{where}: {error.message[:300]}")
        return problems

    def _required(self, spec: dict[str, Any]) -> bool:
        if "$ref" in spec:
            spec = self.document["components"]["headers"][spec["$ref"].rsplit("/", 1)[-1]]
        return bool(spec.get("required"))


class ContractLog:
    """Checks responses and appends violations to ``path`` as JSON lines."""

    def __init__(self, contract: ResponseContract, path: str) -> None:
        self.contract, self.path = contract, path
        self._lock = threading.Lock()

    def record(self, method: str, path: str, status: int, headers: dict[str, str], body: bytes | str) -> None:
        """Check one response; append ``{method, path, status, problems}`` when it breaks the document."""
        problems = self.contract.check(method, path, status, headers, body)
        if problems:
            line = json.dumps({"method": method, "path": path, "status": status, "problems": problems})
            with self._lock, open(self.path, "a", encoding="utf-8") as f:
                f.write(line + "\n")


def from_environment() -> ContractLog | None:
    """The launcher's checker when ``CAIRN_CONTRACT_LOG`` is set, else None."""
    path = os.environ.get(LOG_ENV)
    if not path:
        return None
    import app  # noqa: F401 - registers every route, so the document is whole
    from chalicelib.api.openapi import document
    return ContractLog(ResponseContract(document()), path)
