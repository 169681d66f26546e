"""The asynchronous client, ``AsyncCairn``. ``_sync_client.py`` (``Cairn``) is generated from this
file by ``scripts/generate.py``: edit here, then run ``make client``.

Every method calling an operation of openapi.json is marked ``@operation(operationId)``. A method
returns the operation's response model (``cairn_client.models``) when the document names one, else
the decoded JSON; an error answer raises the ``CairnError`` subclass of its status.
"""

from __future__ import annotations

import os
from collections import abc
from typing import Any

import httpx
from tqdm import tqdm  # type: ignore[import-untyped]  # no types-tqdm in the environment

from . import _core
from . import _responses as r
from ._core import (
    USER_AGENT,
    RecallFilter,
    RetryPolicy,
    Sink,
    Surface,
    clean_body,
    clean_query,
    field_of,
    filter_body,
    header_token_problem,
    json_body,
    may_retry_connect,
    ndjson_bytes,
    new_idempotency_key,
    observed_ids,
    operation,
    operation_methods,
    parse,
    retryable_status,
    url_path,
)
from ._operations import OPERATIONS
from .errors import CairnConnectionError, from_response

# Aliases: several surfaces have a method named ``list``, which would shadow the builtin in annotations.
Strs = list[str]
Dicts = list[dict[str, Any]]

NDJSON = "application/x-ndjson"
CHUNK = 256 * 1024
# Imports larger than this go through a presigned upload (the server's inline limit is 5 MiB).
IMPORT_INLINE_BYTES = 4 * 1024 * 1024


class AsyncTransport:
    """HTTP with the token, retries (``RetryPolicy``) and error mapping, over one ``httpx`` client."""

    def __init__(self, base_url: str, token: str | None, *, timeout: float, retry: RetryPolicy,
                 transport: httpx.AsyncBaseTransport | None, headers: dict[str, str] | None,
                 sleep: abc.Callable[[float], abc.Awaitable[None]] | None) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.retry = retry
        self.sleep = sleep or _core.async_sleep
        self.http = httpx.AsyncClient(timeout=timeout, transport=transport,
                                      headers={"User-Agent": USER_AGENT, **(headers or {})})

    async def call(self, op_id: str, *, path: dict[str, Any] | None = None, query: dict[str, Any] | None = None,
                   json: Any = None, content: Any = None, content_type: str | None = None,
                   idempotency_key: str | None = None) -> Any:
        """Send ``op_id`` and return its parsed answer (``_core.parse``)."""
        response = await self.send(op_id, path=path, query=query, json=json, content=content,
                                   content_type=content_type, idempotency_key=idempotency_key)
        return parse(OPERATIONS[op_id], response)

    async def send(self, op_id: str, *, path: dict[str, Any] | None = None, query: dict[str, Any] | None = None,
                   json: Any = None, content: Any = None, content_type: str | None = None,
                   idempotency_key: str | None = None) -> httpx.Response:
        """Send ``op_id``; ``content`` may be a function returning a fresh body per attempt. A keyed
        operation carries one ``Idempotency-Key`` (``idempotency_key`` or a new uuid4) on every
        attempt. Raises the ``CairnError`` of an error answer, ``CairnConnectionError`` when none came,
        ``ValueError`` (nothing sent) when ``json`` cannot be encoded (``_core.json_body``)."""
        op = OPERATIONS[op_id]
        url = self.base_url + url_path(op, path or {})
        headers: dict[str, str] = {}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if json is not None:
            content, json = json_body(json), None
            headers["Content-Type"] = "application/json"
        if content_type:
            headers["Content-Type"] = content_type
        if op.keyed:
            headers["Idempotency-Key"] = idempotency_key or new_idempotency_key()
        params = clean_query(query)

        def build() -> httpx.Request:
            body = content() if callable(content) else content
            return self.http.build_request(op.method, url, params=params, json=json, content=body, headers=headers)

        response = await self.send_with_retries(build, may_retry_connect(op, op.method))
        if response.status_code >= 400:
            raise from_response(response)
        return response

    async def send_with_retries(self, build: abc.Callable[[], httpx.Request], retry_connect: bool) -> httpx.Response:
        """``build()`` sent until an answer other than 429/503 comes, at most ``1 + max_retries`` times."""
        attempt = 0
        while True:
            try:
                response = await self.http.send(build())
            except httpx.TransportError as exc:
                if not retry_connect or attempt >= self.retry.max_retries:
                    raise CairnConnectionError(f"no response from {self.base_url}: {exc!r}") from exc
                await self.sleep(self.retry.delay(attempt, None))
            else:
                if not retryable_status(response) or attempt >= self.retry.max_retries:
                    return response
                await self.sleep(self.retry.delay(attempt, response))
            attempt += 1

    async def pages(self, op_id: str, items: str, cursor_field: str, *, path: dict[str, Any] | None = None,
                    query: dict[str, Any] | None = None) -> abc.AsyncIterator[Any]:
        """Each item of every page of a listing: ``items`` names the page's list, ``cursor_field``
        the page's next cursor (absent or null on the last page), sent back as ``?cursor=``."""
        q = dict(query or {})
        while True:
            page = await self.call(op_id, path=path, query=q)
            for item in field_of(page, items) or []:
                yield item
            cursor = field_of(page, cursor_field)
            if not cursor:
                return
            q["cursor"] = cursor

    async def download(self, url: str, sink: Sink, bar: tqdm) -> None:
        """GET a presigned ``url`` (no token sent) into ``sink``."""
        async with self.http.stream("GET", url) as response:
            if response.status_code >= 400:
                await response.aread()
                raise from_response(response)
            bar.reset(total=int(response.headers.get("content-length") or 0) or None)
            async for chunk in response.aiter_bytes(CHUNK):
                sink.write(chunk)
                bar.update(len(chunk))

    async def upload(self, url: str, data: bytes, bar: tqdm) -> None:
        """PUT ``data`` to a presigned ``url`` (signed for ``application/x-ndjson``; no token sent)."""
        headers = {"Content-Type": NDJSON, "Content-Length": str(len(data))}

        def build() -> httpx.Request:
            bar.reset(total=len(data))
            return self.http.build_request("PUT", url, content=_chunks(data, bar), headers=headers)

        response = await self.send_with_retries(build, retry_connect=True)
        if response.status_code >= 400:
            raise from_response(response)

    async def aclose(self) -> None:
        await self.http.aclose()


async def _chunks(data: bytes, bar: tqdm) -> abc.AsyncIterator[bytes]:
    for start in range(0, len(data), CHUNK):
        chunk = data[start:start + CHUNK]
        bar.update(len(chunk))
        yield chunk


def _bar(progress: bool, desc: str) -> tqdm:
    return tqdm(total=None, unit="B", unit_scale=True, desc=desc, disable=not progress)


# --- memory banks ---------------------------------------------------------------------------------

class AsyncMemories(Surface):
    """``cairn.memories``: the memories of a bank."""

    @operation("save_memory")
    async def save(self, bank: str, text: str, *, entities: Strs | None = None, tags: Strs | None = None,
                   pinned: bool | None = None, session_id: str | None = None, supersedes: Strs | None = None,
                   revive: bool | None = None, idempotency_key: str | None = None,
                   **fields: Any) -> r.SaveMemory:
        """Save ``text`` (a new memory, or a reinforcement of the same fact): ``related`` lists the
        live memories it duplicates or contradicts. ``supersedes``: ids
        this memory replaces, retired with the save or nothing is written. The text of a forgotten
        or superseded memory raises ``memory_retired`` (409) unless ``revive=True``. An
        ``Idempotency-Key`` (``idempotency_key`` or a new uuid4) goes with every attempt, so a
        retry never reinforces twice."""
        body = clean_body({"text": text, "entities": entities, "tags": tags, "pinned": pinned,
                           "session_id": session_id, "supersedes": supersedes, "revive": revive, **fields})
        return await self._t.call("save_memory", path={"bank": bank}, json=body, idempotency_key=idempotency_key)

    async def observe(self, bank: str, messages: Dicts, session_id: str | None = None,
                      turn_id: str | None = None) -> r.TurnCompleted:
        """Queue extraction of a finished exchange (``[{role: user|assistant, content}]``) into
        ``bank`` through the turn-completed hook: ``{accepted, bank, session_id, turn_id, queued,
        outcome?}``. The same ``session_id`` and ``turn_id`` again extract once; without them the
        session is ``"observe"`` and the turn id a digest of the messages."""
        session_id, turn_id = observed_ids(messages, session_id, turn_id)
        body = {"session_id": session_id, "turn_id": turn_id, "messages": messages,
                "metadata": {"memory_bank": bank}, "exchange": True}
        return await self._t.call("turn_completed", json=body)

    @operation("list_memories")
    async def list(self, bank: str, *, limit: int | None = None, cursor: str | None = None, tag: str | None = None,
                   q: str | None = None, include_superseded: bool | None = None) -> r.ListMemories:
        """One page, newest first: ``{memories, total, next_cursor}``; ``q`` keeps the memories whose
        text holds it (case-insensitive), ``tag`` those with that tag."""
        return await self._t.call("list_memories", path={"bank": bank},
                                  query={"limit": limit, "cursor": cursor, "tag": tag, "q": q,
                                         "include_superseded": include_superseded})

    def iter(self, bank: str, *, limit: int | None = None, tag: str | None = None, q: str | None = None,
             include_superseded: bool | None = None) -> abc.AsyncIterator[Any]:
        """Every memory of the bank (with ``q``/``tag``: every one kept), page after page (``limit`` per page)."""
        return self._t.pages("list_memories", "memories", "next_cursor", path={"bank": bank},
                             query={"limit": limit, "tag": tag, "q": q, "include_superseded": include_superseded})

    @operation("get_memory")
    async def get(self, bank: str, memory_id: str) -> r.GetMemory:
        """``{memory}``, retired ones included; 404 ``NotFound``."""
        return await self._t.call("get_memory", path={"bank": bank, "memory_id": memory_id})

    @operation("update_memory")
    async def update(self, bank: str, memory_id: str, *, text: str | None = None, entities: Strs | None = None,
                     tags: Strs | None = None, pinned: bool | None = None, **fields: Any) -> r.UpdateMemory:
        """Revise in place: ``{memory}``."""
        body = clean_body({"text": text, "entities": entities, "tags": tags, "pinned": pinned, **fields})
        return await self._t.call("update_memory", path={"bank": bank, "memory_id": memory_id}, json=body)

    @operation("delete_memory")
    async def delete(self, bank: str, memory_id: str) -> r.DeleteMemory:
        """Tombstone: ``{memory}``."""
        return await self._t.call("delete_memory", path={"bank": bank, "memory_id": memory_id})

    @operation("pin_memory")
    async def pin(self, bank: str, memory_id: str, pinned: bool = True) -> r.PinMemory:
        """Pin (or, ``pinned=False``, unpin): ``{memory}``."""
        return await self._t.call("pin_memory", path={"bank": bank, "memory_id": memory_id}, json={"pinned": pinned})

    @operation("supersede_memory")
    async def supersede(self, bank: str, memory_id: str, superseded_by: str) -> r.SupersedeMemory:
        """Retire ``memory_id`` in favour of ``superseded_by``: ``{memory}``."""
        return await self._t.call("supersede_memory", path={"bank": bank, "memory_id": memory_id},
                                  json={"superseded_by": superseded_by})

    @operation("memory_history")
    async def history(self, bank: str, memory_id: str) -> r.MemoryHistory:
        """``{revisions}``, oldest first."""
        return await self._t.call("memory_history", path={"bank": bank, "memory_id": memory_id})

    @operation("list_conflicts")
    async def conflicts(self, bank: str, *, limit: int | None = None, cursor: str | None = None) -> r.ListConflicts:
        """Open conflicts, newest first: ``{conflicts: [{memory, earlier}], next_cursor}``; resolve one by
        superseding either side (``supersede``)."""
        return await self._t.call("list_conflicts", path={"bank": bank}, query={"limit": limit, "cursor": cursor})

    @operation("purge_memory")
    async def purge(self, bank: str, memory_id: str) -> r.PurgeMemory:
        """Erase the content everywhere (``admin.memories``): ``{memory}``, a content-free tombstone."""
        return await self._t.call("purge_memory", path={"bank": bank, "memory_id": memory_id})


class AsyncRules(Surface):
    """``cairn.rules``: a bank's rules (injected into every prompt)."""

    @operation("list_rules")
    async def list(self, bank: str) -> r.ListRules:
        """``{rules: [{name, content, updated_at}]}``."""
        return await self._t.call("list_rules", path={"bank": bank})

    @operation("get_rule")
    async def get(self, bank: str, name: str) -> r.GetRule:
        """``{rule}``; 404 ``NotFound`` (``rule_not_found``)."""
        return await self._t.call("get_rule", path={"bank": bank, "name": name})

    @operation("set_rule")
    async def set(self, bank: str, name: str, content: str) -> r.SetRule:
        """Create or replace (empty ``content``: remove): ``{exists}``."""
        return await self._t.call("set_rule", path={"bank": bank, "name": name}, json={"content": content})

    @operation("delete_rule")
    async def delete(self, bank: str, name: str) -> r.DeleteRule:
        """Remove: ``{exists: false}``; 404 ``NotFound`` when there is none."""
        return await self._t.call("delete_rule", path={"bank": bank, "name": name})


class AsyncBanks(Surface):
    """``cairn.banks``: memory banks, their recall, export and import."""

    @operation("create_bank")
    async def create(self, name: str, description: str | None = None) -> r.CreateBank:
        """Create or ensure: ``{bank, created}``."""
        return await self._t.call("create_bank", json=clean_body({"name": name, "description": description}))

    @operation("list_banks")
    async def list(self, *, limit: int | None = None, cursor: str | None = None,
                   trashed: bool | None = None) -> r.ListBanks:
        """One page by name: ``{banks, next_cursor?}``; ``trashed=True``: every trash entry."""
        return await self._t.call("list_banks", query={"limit": limit, "cursor": cursor, "trashed": trashed})

    def iter(self, *, limit: int | None = None) -> abc.AsyncIterator[Any]:
        """Every live bank, page after page."""
        return self._t.pages("list_banks", "banks", "next_cursor", query={"limit": limit})

    @operation("get_bank")
    async def get(self, bank: str) -> r.GetBank:
        """``{bank}``; 404 ``NotFound`` (``bank_not_found``)."""
        return await self._t.call("get_bank", path={"bank": bank})

    @operation("update_bank")
    async def update(self, bank: str, description: str | None = None, *,
                     settings: dict[str, Any] | None = None) -> r.UpdateBank:
        """Change the description and/or settings (``on_conflict``: ``flag`` or ``supersede``,
        ``match_threshold``, ``ambient_floor``, ``feed``: ``hooks``, ``tools`` or ``both``; the
        fields given replace theirs): ``{bank}``."""
        return await self._t.call("update_bank", path={"bank": bank},
                                  json=clean_body({"description": description, "settings": settings}))

    @operation("trash_bank")
    async def trash(self, bank: str) -> r.TrashBank:
        """Move to trash: ``{trashed_to}``."""
        return await self._t.call("trash_bank", path={"bank": bank})

    @operation("restore_bank")
    async def restore(self, bank: str, trashed_to: str) -> r.RestoreBank:
        """Restore a trashed bank whole: ``{bank}``; 409 ``Conflict`` when the name is taken."""
        return await self._t.call("restore_bank", path={"bank": bank}, json={"trashed_to": trashed_to})

    @operation("list_tags")
    async def tags(self, bank: str) -> r.ListTags:
        """``{tags: [{tag, count}]}``, most used first."""
        return await self._t.call("list_tags", path={"bank": bank})

    @operation("recall")
    async def recall(self, bank: str, query: str, *, limit: int | None = None, tag: str | None = None,
                     filter: RecallFilter | None = None, include_superseded: bool | None = None,
                     as_of: int | None = None) -> r.Recall:
        """Ranked recall: ``{memories: [{memory, score, signals}], retrieval}`` (``as_of``: ms since epoch;
        ``filter``: only memories passing it rank, e.g. ``{"tags_all": ["decision"], "created_after": ms}``)."""
        body = clean_body({"query": query, "limit": limit, "tag": tag, "filter": filter_body(filter),
                           "include_superseded": include_superseded, "as_of": as_of})
        return await self._t.call("recall", path={"bank": bank}, json=body)

    @operation("preview")
    async def preview(self, bank: str, query: str, *, filter: RecallFilter | None = None) -> r.Preview:
        """What would be injected for ``query``: ``{system_prompt_section, rules, memories, ...}`` (``filter``:
        only memories passing it are injected)."""
        return await self._t.call("preview", path={"bank": bank},
                                  json=clean_body({"query": query, "filter": filter_body(filter)}))

    @operation("forget_session")
    async def forget_session(self, bank: str, session_id: str, *, purge: bool | None = None) -> r.ForgetSession:
        """Retire (``purge=True``: purge) what a session's turns extracted: ``{session_id, retired, purged, ...}``."""
        return await self._t.call("forget_session", path={"bank": bank},
                                  json=clean_body({"session_id": session_id, "purge": purge}))

    @operation("export_bank")
    async def export(self, bank: str, dest: Any = None, *, history: bool = False,
                     progress: bool = False) -> bytes | int:
        """The bank as NDJSON (``memories.jsonl``), inline or through the presigned URL the server
        gives for large banks. ``dest`` ``None``: returns the bytes; a path or binary file: writes
        there and returns the byte count. ``progress``: a tqdm bar on stderr."""
        sink = Sink(dest)
        try:
            with _bar(progress, f"export {bank}") as bar:
                response = await self._t.send("export_bank", path={"bank": bank}, query={"history": history or None})
                ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if ctype == "application/json":
                    await self._t.download(response.json()["url"], sink, bar)
                else:
                    bar.reset(total=len(response.content))
                    sink.write(response.content)
                    bar.update(len(response.content))
        except BaseException:
            sink.abort()
            raise
        return sink.result()

    @operation("import_bank")
    async def import_(self, bank: str, source: Any, *, upload: bool | None = None,
                      progress: bool = False) -> r.ImportBank:
        """Import NDJSON (``_core.ndjson_bytes``: a path, as ``export`` takes one, bytes, NDJSON text,
        a binary file or dicts):
        ``{imported, skipped, errors: [{line, error, code}]}``. Larger than ``IMPORT_INLINE_BYTES`` (or
        ``upload=True``) it goes through a presigned upload first. ``progress``: a tqdm bar."""
        data = ndjson_bytes(source)
        if upload is None:
            upload = len(data) > IMPORT_INLINE_BYTES
        with _bar(progress, f"import {bank}") as bar:
            if not upload:
                bar.reset(total=len(data))
                result = await self._t.call("import_bank", path={"bank": bank}, content=data, content_type=NDJSON)
                bar.update(len(data))
                return result
            target = await self.upload_url(bank)
            await self._t.upload(field_of(target, "url"), data, bar)
        return await self._t.call("import_bank", path={"bank": bank}, json={"s3_key": field_of(target, "s3_key")})

    @operation("import_upload_url")
    async def upload_url(self, bank: str) -> r.ImportUploadUrl:
        """A presigned PUT for a large import: ``{url, s3_key, expires_at}`` (``import_`` uses it)."""
        return await self._t.call("import_upload_url", path={"bank": bank})


class AsyncHooks(Surface):
    """``cairn.hooks``: the agent-runtime hooks."""

    @operation("pre_generate")
    async def pre_generate(self, *, session_id: str | None = None, messages: Dicts | None = None,
                           metadata: dict[str, Any] | None = None, step: int | None = None,
                           **fields: Any) -> r.PreGenerate:
        """The per-turn injection: ``{mutations: {system_prompt_append, append_messages}, retrieval}``."""
        body = clean_body({"session_id": session_id, "messages": messages, "metadata": metadata, "step": step,
                           **fields})
        return await self._t.call("pre_generate", json=body)

    @operation("turn_completed")
    async def turn_completed(self, session_id: str, turn_id: str, messages: Dicts, *,
                             metadata: dict[str, Any] | None = None, status: str | None = None,
                             **fields: Any) -> r.TurnCompleted:
        """Queue extraction of a finished turn: ``{accepted, bank, session_id, turn_id, ...}``."""
        body = clean_body({"session_id": session_id, "turn_id": turn_id, "messages": messages,
                           "metadata": metadata, "status": status, **fields})
        return await self._t.call("turn_completed", json=body)

    @operation("session_deleted")
    async def session_deleted(self, session_id: str) -> r.SessionDeleted:
        """Drop a session's extraction cursor: ``{session_id, dropped}``."""
        return await self._t.call("session_deleted", json={"session_id": session_id})


# --- structured memory (Turnstone-compatible) ------------------------------------------------------

class AsyncStructured(Surface):
    """``cairn.structured``: named memories by scope (the Turnstone-compatible REST API)."""

    @operation("list_structured_memories")
    async def list(self, *, type: str | None = None, scope: str | None = None, scope_id: str | None = None,
                   limit: int | None = None) -> r.ListStructuredMemories:
        """``{memories, total}``, newest first."""
        return await self._t.call("list_structured_memories",
                                  query={"type": type, "scope": scope, "scope_id": scope_id, "limit": limit})

    @operation("save_structured_memory")
    async def save(self, name: str, content: str, *, description: str | None = None, type: str | None = None,
                   scope: str | None = None, scope_id: str | None = None, **fields: Any) -> r.SaveStructuredMemory:
        """Upsert by ``(name, scope, scope_id)``: the row."""
        body = clean_body({"name": name, "content": content, "description": description, "type": type,
                           "scope": scope, "scope_id": scope_id, **fields})
        return await self._t.call("save_structured_memory", json=body)

    @operation("search_structured_memories")
    async def search(self, query: str, *, type: str | None = None, limit: int | None = None,
                     scope: str | None = None, scope_id: str | None = None) -> r.SearchStructuredMemories:
        """``{memories, total}``, best first."""
        body = clean_body({"query": query, "type": type, "limit": limit, "scope": scope, "scope_id": scope_id})
        return await self._t.call("search_structured_memories", json=body)

    @operation("get_structured_memory")
    async def get(self, name: str, *, scope: str | None = None, scope_id: str | None = None) -> r.GetStructuredMemory:
        """The row; 404 ``NotFound``."""
        return await self._t.call("get_structured_memory", path={"name": name},
                                  query={"scope": scope, "scope_id": scope_id})

    @operation("delete_structured_memory")
    async def delete(self, name: str, *, scope: str | None = None,
                     scope_id: str | None = None) -> r.DeleteStructuredMemory:
        """``{status: "ok", name}``."""
        return await self._t.call("delete_structured_memory", path={"name": name},
                                  query={"scope": scope, "scope_id": scope_id})


class AsyncWorkstreams(Surface):
    """``cairn.workstreams``."""

    @operation("create_workstream")
    async def create(self, title: str | None = None, *, workstream_id: str | None = None) -> r.CreateWorkstream:
        """``{workstream_id, title, owner}``."""
        return await self._t.call("create_workstream",
                                  json=clean_body({"title": title, "workstream_id": workstream_id}))

    @operation("list_workstreams")
    async def list(self, *, limit: int | None = None, cursor: str | None = None) -> r.ListWorkstreams:
        """One page by id: ``{workstreams, next_cursor?}``."""
        return await self._t.call("list_workstreams", query={"limit": limit, "cursor": cursor})

    def iter(self, *, limit: int | None = None) -> abc.AsyncIterator[Any]:
        return self._t.pages("list_workstreams", "workstreams", "next_cursor", query={"limit": limit})


class AsyncProjects(Surface):
    """``cairn.projects``."""

    @operation("create_project")
    async def create(self, name: str, *, project_id: str | None = None, active: bool | None = None) -> r.CreateProject:
        """``{project_id, name, active, owner}``."""
        return await self._t.call("create_project",
                                  json=clean_body({"name": name, "project_id": project_id, "active": active}))

    @operation("list_projects")
    async def list(self, *, limit: int | None = None, cursor: str | None = None) -> r.ListProjects:
        """One page by id: ``{projects, next_cursor?}``."""
        return await self._t.call("list_projects", query={"limit": limit, "cursor": cursor})

    def iter(self, *, limit: int | None = None) -> abc.AsyncIterator[Any]:
        return self._t.pages("list_projects", "projects", "next_cursor", query={"limit": limit})

    @operation("patch_project")
    async def update(self, project_id: str, *, active: bool) -> r.PatchProject:
        """Activate or deactivate: the project."""
        return await self._t.call("patch_project", path={"project_id": project_id}, json={"active": active})

    @operation("put_project_member")
    async def set_member(self, project_id: str, user_id: str, access: str) -> r.PutProjectMember:
        """``{project_id, user_id, access}``."""
        return await self._t.call("put_project_member", path={"project_id": project_id, "user_id": user_id},
                                  json={"access": access})

    @operation("delete_project_member")
    async def remove_member(self, project_id: str, user_id: str) -> r.DeleteProjectMember:
        """``{status: "ok"}``."""
        return await self._t.call("delete_project_member", path={"project_id": project_id, "user_id": user_id})


class AsyncSessions(Surface):
    """``cairn.sessions``: agent sessions, their memory tool and per-turn context."""

    @operation("create_session")
    async def create(self, *, kind: str | None = None, workstream_id: str | None = None,
                     project_id: str | None = None, parent_session_id: str | None = None,
                     memory_enabled: bool | None = None, user_id: str | None = None) -> r.CreateSession:
        """``{session_id, kind, user_id, workstream_id, project_id, ...}``."""
        body = clean_body({"kind": kind, "workstream_id": workstream_id, "project_id": project_id,
                           "parent_session_id": parent_session_id, "memory_enabled": memory_enabled,
                           "user_id": user_id})
        return await self._t.call("create_session", json=body)

    @operation("list_sessions")
    async def list(self, *, limit: int | None = None, cursor: str | None = None) -> r.ListSessions:
        """One page by id: ``{sessions, next_cursor?}``."""
        return await self._t.call("list_sessions", query={"limit": limit, "cursor": cursor})

    def iter(self, *, limit: int | None = None) -> abc.AsyncIterator[Any]:
        return self._t.pages("list_sessions", "sessions", "next_cursor", query={"limit": limit})

    @operation("delete_session")
    async def delete(self, session_id: str) -> r.DeleteSession:
        """``{status: "ok", session_id}``."""
        return await self._t.call("delete_session", path={"session_id": session_id})

    @operation("session_memory")
    async def memory(self, session_id: str, action: str, **args: Any) -> r.SessionMemory:
        """Call the memory tool (``action`` and its arguments): the REST equivalent's answer."""
        return await self._t.call("session_memory", path={"session_id": session_id},
                                  json=clean_body({"action": action, **args}))

    @operation("session_context")
    async def context(self, session_id: str, messages: Dicts | None = None) -> r.SessionContext:
        """The turn's context: ``{system_message, injected, candidates, in_scope, nudge}``."""
        return await self._t.call("session_context", path={"session_id": session_id},
                                  json=clean_body({"messages": messages}))


class AsyncAdmin(Surface):
    """``cairn.admin``: structured memory across every scope (``admin.memories``)."""

    @operation("admin_list_memories")
    async def list_memories(self, *, type: str | None = None, scope: str | None = None,
                            scope_id: str | None = None, limit: int | None = None) -> r.AdminListMemories:
        """``{memories, total}``."""
        return await self._t.call("admin_list_memories",
                                  query={"type": type, "scope": scope, "scope_id": scope_id, "limit": limit})

    @operation("admin_search_memories")
    async def search_memories(self, q: str, *, type: str | None = None, scope: str | None = None,
                              scope_id: str | None = None, limit: int | None = None) -> r.AdminSearchMemories:
        """``{memories, total}``, best first."""
        return await self._t.call("admin_search_memories", query={"q": q, "type": type, "scope": scope,
                                                                  "scope_id": scope_id, "limit": limit})

    @operation("admin_import")
    async def import_memories(self, source: Any) -> r.AdminImport:
        """NDJSON of Turnstone rows (as ``banks.import_`` takes it): ``{imported, skipped, errors}``."""
        return await self._t.call("admin_import", content=ndjson_bytes(source), content_type=NDJSON)

    @operation("admin_get_memory")
    async def get_memory(self, memory_id: str) -> r.AdminGetMemory:
        """The row; 404 ``NotFound``."""
        return await self._t.call("admin_get_memory", path={"memory_id": memory_id})

    @operation("admin_memory_history")
    async def memory_history(self, memory_id: str) -> r.AdminMemoryHistory:
        """Every revision, oldest first, a deleted memory's included: ``{revisions, damaged?}``
        (each revision the row plus ``op, seq, actor, updated_at``); 404 ``NotFound``. To
        restore one, save its ``content`` back under its name and scope."""
        return await self._t.call("admin_memory_history", path={"memory_id": memory_id})

    @operation("admin_patch_memory")
    async def update_memory(self, memory_id: str, description: str) -> r.AdminPatchMemory:
        """The row with its new description."""
        return await self._t.call("admin_patch_memory", path={"memory_id": memory_id},
                                  json={"description": description})

    @operation("admin_delete_memory")
    async def delete_memory(self, memory_id: str) -> r.AdminDeleteMemory:
        """``{status: "ok"}``."""
        return await self._t.call("admin_delete_memory", path={"memory_id": memory_id})

    @operation("admin_memory_audit")
    async def memory_audit(self, *, action: str | None = None, since: int | None = None, limit: int | None = None,
                           cursor: str | None = None) -> r.AdminMemoryAudit:
        """Memory audit events, oldest first: ``{events, next_cursor}``."""
        return await self._t.call("admin_memory_audit",
                                  query={"action": action, "since": since, "limit": limit, "cursor": cursor})

    def iter_memory_audit(self, *, action: str | None = None, since: int | None = None,
                          limit: int | None = None) -> abc.AsyncIterator[Any]:
        return self._t.pages("admin_memory_audit", "events", "next_cursor",
                             query={"action": action, "since": since, "limit": limit})


class AsyncTokens(Surface):
    """``cairn.tokens``: API tokens of the org (``admin.tokens``)."""

    @operation("mint_token")
    async def mint(self, kind: str, *, user_id: str | None = None, permissions: Strs | None = None,
                   label: str | None = None, expires_at: int | None = None, banks: Strs | None = None) -> r.MintToken:
        """The new token with its secret (``token``), shown this once."""
        body = clean_body({"kind": kind, "user_id": user_id, "permissions": permissions, "label": label,
                           "expires_at": expires_at, "banks": banks})
        return await self._t.call("mint_token", json=body)

    @operation("list_tokens")
    async def list(self) -> r.ListTokens:
        """``{tokens}``, never a secret."""
        return await self._t.call("list_tokens")

    @operation("revoke_token")
    async def revoke(self, token_id: str) -> r.RevokeToken:
        """``{token}`` with ``revoked_at`` set."""
        return await self._t.call("revoke_token", path={"token_id": token_id})


class AsyncAudit(Surface):
    """``cairn.audit``: every audit event of the org (``admin.memories``), never with content."""

    @operation("list_events")
    async def list(self, *, action: str | None = None, actor: str | None = None, target: str | None = None,
                   since: int | None = None, until: int | None = None, limit: int | None = None,
                   cursor: str | None = None) -> r.ListEvents:
        """One page, oldest first: ``{events, next_cursor}`` (``since``/``until``: ms since epoch)."""
        return await self._t.call("list_events", query={"action": action, "actor": actor, "target": target,
                                                        "since": since, "until": until, "limit": limit,
                                                        "cursor": cursor})

    def iter(self, *, action: str | None = None, actor: str | None = None, target: str | None = None,
             since: int | None = None, until: int | None = None, limit: int | None = None) -> abc.AsyncIterator[Any]:
        """Every matching event, page after page."""
        query = {"action": action, "actor": actor, "target": target, "since": since, "until": until, "limit": limit}
        return self._t.pages("list_events", "events", "next_cursor", query=query)


# --- team memory ------------------------------------------------------------------------------------

class AsyncSpaces(Surface):
    """``cairn.team.spaces``: team-memory spaces and their members."""

    @operation("create_space")
    async def create(self, name: str, **fields: Any) -> r.CreateSpace:
        """The new space (``fields``: ``kind``, ``classification``, ``dlpPolicy``, ``teamMemoryEnabled``)."""
        return await self._t.call("create_space", json=clean_body({"name": name, **fields}))

    @operation("list_spaces")
    async def list(self, *, limit: int | None = None, cursor: str | None = None) -> r.ListSpaces:
        """One page by id: ``{spaces, next_cursor?}``."""
        return await self._t.call("list_spaces", query={"limit": limit, "cursor": cursor})

    def iter(self, *, limit: int | None = None) -> abc.AsyncIterator[Any]:
        return self._t.pages("list_spaces", "spaces", "next_cursor", query={"limit": limit})

    @operation("get_space")
    async def get(self, space_id: str) -> r.GetSpace:
        """The space."""
        return await self._t.call("get_space", path={"space_id": space_id})

    @operation("patch_space")
    async def update(self, space_id: str, **fields: Any) -> r.PatchSpace:
        """The changed space (``fields`` as ``create``'s)."""
        return await self._t.call("patch_space", path={"space_id": space_id}, json=clean_body(fields))

    @operation("put_space_member")
    async def set_member(self, space_id: str, member_id: str, permissions: Strs) -> r.PutSpaceMember:
        """``{spaceId, memberId, permissions}``."""
        return await self._t.call("put_space_member", path={"space_id": space_id, "member_id": member_id},
                                  json={"permissions": permissions})

    @operation("delete_space_member")
    async def remove_member(self, space_id: str, member_id: str) -> r.DeleteSpaceMember:
        """``{removed}``."""
        return await self._t.call("delete_space_member", path={"space_id": space_id, "member_id": member_id})


class AsyncEntries(Surface):
    """``cairn.team.entries``: team-memory entries (Yjs documents with a review flow)."""

    @operation("create_entry")
    async def create(self, space_id: str, kind: str, title: str, **fields: Any) -> r.CreateEntry:
        """The new draft (``fields``: ``links``, ``supersedes``, ``classification``)."""
        return await self._t.call("create_entry",
                                  json=clean_body({"spaceId": space_id, "kind": kind, "title": title, **fields}))

    @operation("list_entries")
    async def list(self, *, space_id: str | None = None, status: str | None = None, kind: str | None = None,
                   q: str | None = None, limit: int | None = None, cursor: str | None = None) -> r.ListEntries:
        """One page: ``{entries, cursor?}``."""
        return await self._t.call("list_entries", query={"spaceId": space_id, "status": status, "kind": kind,
                                                         "q": q, "limit": limit, "cursor": cursor})

    def iter(self, *, space_id: str | None = None, status: str | None = None, kind: str | None = None,
             q: str | None = None, limit: int | None = None) -> abc.AsyncIterator[Any]:
        """Every matching entry, page after page (this listing's next cursor is ``cursor``)."""
        query = {"spaceId": space_id, "status": status, "kind": kind, "q": q, "limit": limit}
        return self._t.pages("list_entries", "entries", "cursor", query=query)

    @operation("get_entry")
    async def get(self, entry_id: str) -> r.GetEntry:
        """The entry with its text, hashes, state vector, snapshot and limits."""
        return await self._t.call("get_entry", path={"entry_id": entry_id})

    @operation("patch_entry")
    async def update(self, entry_id: str, **fields: Any) -> r.PatchEntry:
        """Change metadata (``title``, ``kind``, ``links``, ``supersedes``, ``classification``, ``ifMetaVersion``)."""
        return await self._t.call("patch_entry", path={"entry_id": entry_id}, json=clean_body(fields))

    @operation("post_entry_update")
    async def post_update(self, entry_id: str, update_id: str, update: str) -> r.PostEntryUpdate:
        """Apply a Yjs update (base64): ``{duplicate, seq, stateVector?}``."""
        return await self._t.call("post_entry_update", path={"entry_id": entry_id},
                                  json={"updateId": update_id, "update": update})

    @operation("get_entry_updates")
    async def updates(self, entry_id: str, *, since_seq: int | None = None,
                      state_vector: str | None = None) -> r.GetEntryUpdates:
        """Catch up: ``{updates}``, ``{snapshot}`` or ``{update}``, each with ``seq``."""
        return await self._t.call("get_entry_updates", path={"entry_id": entry_id},
                                  query={"sinceSeq": since_seq, "stateVector": state_vector})

    @operation("accept_entry")
    async def accept(self, entry_id: str, document_sha256: str) -> r.AcceptEntry:
        """Accept the revision whose document hashes to ``document_sha256``: the entry."""
        return await self._t.call("accept_entry", path={"entry_id": entry_id},
                                  json={"documentSha256": document_sha256})

    @operation("get_accepted")
    async def accepted(self, entry_id: str) -> r.GetAccepted:
        """The last accepted revision: ``{entryId, revision, title, text, documentSha256, ...}``."""
        return await self._t.call("get_accepted", path={"entry_id": entry_id})

    @operation("supersede_entry")
    async def supersede(self, entry_id: str, superseded_by: str) -> r.SupersedeEntry:
        """The superseded entry."""
        return await self._t.call("supersede_entry", path={"entry_id": entry_id},
                                  json={"supersededBy": superseded_by})

    @operation("archive_entry")
    async def archive(self, entry_id: str) -> r.ArchiveEntry:
        """The archived entry."""
        return await self._t.call("archive_entry", path={"entry_id": entry_id})

    @operation("entry_history")
    async def history(self, entry_id: str) -> r.EntryHistory:
        """``{events}``."""
        return await self._t.call("entry_history", path={"entry_id": entry_id})


class AsyncTeam(Surface):
    """``cairn.team``: team memory (``spaces``, ``entries``, retrieval, deny rules, attributions)."""

    def __init__(self, transport: Any) -> None:
        super().__init__(transport)
        self.spaces = AsyncSpaces(transport)
        self.entries = AsyncEntries(transport)

    @operation("retrieve_entries")
    async def retrieve(self, space_ids: Strs, query: str, *, limit: int | None = None) -> r.RetrieveEntries:
        """``{results, attributionId, retrieval}``."""
        return await self._t.call("retrieve_entries",
                                  json=clean_body({"spaceIds": space_ids, "query": query, "limit": limit}))

    @operation("list_attributions")
    async def attributions(self, *, space_id: str | None = None, limit: int | None = None) -> r.ListAttributions:
        """``{attributions}``: which entries each retrieval used."""
        return await self._t.call("list_attributions", query={"spaceId": space_id, "limit": limit})

    @operation("get_deny_rules")
    async def deny_rules(self) -> r.GetDenyRules:
        """``{rules}``."""
        return await self._t.call("get_deny_rules")

    @operation("put_deny_rules")
    async def set_deny_rules(self, rules: Dicts) -> r.PutDenyRules:
        """Replace the whole list: ``{rules}``."""
        return await self._t.call("put_deny_rules", json={"rules": rules})


# --- the client -----------------------------------------------------------------------------------

class AsyncCairn:
    """The Cairn API. ``base_url`` defaults to ``$CAIRN_URL``, ``token`` to ``$CAIRN_TOKEN`` (none
    needed for ``health`` and ``openapi``). ``max_retries``, ``backoff``, ``max_backoff`` and
    ``max_retry_after`` tune ``RetryPolicy``; ``timeout`` is per request, seconds; ``transport``
    an ``httpx`` transport (tests use it to inject faults); ``sleep`` replaces the wait between
    retries. Use as a context manager, or call ``aclose()``. Raises ``ValueError`` without a base
    URL, or for a token with whitespace or a character outside printable ASCII."""

    def __init__(self, base_url: str | None = None, token: str | None = None, *, timeout: float = 30.0,
                 max_retries: int = 3, backoff: float = 0.5, max_backoff: float = 8.0,
                 max_retry_after: float = 60.0, transport: httpx.AsyncBaseTransport | None = None,
                 headers: dict[str, str] | None = None,
                 sleep: abc.Callable[[float], abc.Awaitable[None]] | None = None) -> None:
        base_url = base_url or os.environ.get("CAIRN_URL")
        if not base_url:
            raise ValueError("base_url is required (or set CAIRN_URL)")
        token = token if token is not None else os.environ.get("CAIRN_TOKEN")
        problem = header_token_problem(token) if token else None
        if problem is not None:
            raise ValueError(f"the token (or CAIRN_TOKEN) {problem}: a Cairn token is printable ASCII without "
                             "spaces or line breaks; check how it was copied")
        retry = RetryPolicy(max_retries=max_retries, backoff=backoff, max_backoff=max_backoff,
                            max_retry_after=max_retry_after)
        self._t = AsyncTransport(base_url, token, timeout=timeout, retry=retry, transport=transport,
                                 headers=headers, sleep=sleep)
        self.banks = AsyncBanks(self._t)
        self.memories = AsyncMemories(self._t)
        self.rules = AsyncRules(self._t)
        self.hooks = AsyncHooks(self._t)
        self.structured = AsyncStructured(self._t)
        self.workstreams = AsyncWorkstreams(self._t)
        self.projects = AsyncProjects(self._t)
        self.sessions = AsyncSessions(self._t)
        self.admin = AsyncAdmin(self._t)
        self.tokens = AsyncTokens(self._t)
        self.audit = AsyncAudit(self._t)
        self.team = AsyncTeam(self._t)

    @classmethod
    def operation_methods(cls) -> dict[str, str]:
        """``{operationId: "surface.method"}`` for every operation this client calls."""
        return operation_methods(cls("http://localhost"))

    @operation("health")
    async def health(self) -> r.Health:
        """``{status: "ok"}``; no token needed."""
        return await self._t.call("health")

    @operation("me")
    async def me(self) -> r.Me:
        """The calling token: ``{token_id, org_id, kind, user_id, permissions, banks, expires_at}``."""
        return await self._t.call("me")

    @operation("usage")
    async def usage(self, *, from_ms: int | None = None, to_ms: int | None = None, granularity: str | None = None,
                    group_by: str | None = None) -> r.Usage:
        """The org's usage (``admin.usage``): ``{org, from, to, granularity, group_by, totals, groups}``
        over ``[from_ms, to_ms)`` (default the last 24 hours), ``granularity`` ``hour``/``day``,
        ``group_by`` ``bank``/``token``/``operation``."""
        return await self._t.call("usage", query={"from": from_ms, "to": to_ms, "granularity": granularity,
                                                  "group_by": group_by})

    async def usage_csv(self, *, from_ms: int | None = None, to_ms: int | None = None,
                        granularity: str | None = None, group_by: str | None = None) -> str:
        """The same report as CSV text (``start,group,<counters>``, one row per period and group)."""
        response = await self._t.send("usage", query={"from": from_ms, "to": to_ms, "granularity": granularity,
                                                      "group_by": group_by, "format": "csv"})
        return response.text

    @operation("openapi_document")
    async def openapi(self) -> r.OpenapiDocument:
        """The service's OpenAPI 3.1 document (a dict); no token needed."""
        return await self._t.call("openapi_document")

    @operation("run_doctor")
    async def doctor(self) -> r.RunDoctor:
        """``{ok, checks: [{name, ok, required, detail, ms}]}`` (``admin.memories``)."""
        return await self._t.call("run_doctor")

    @operation("service_status")
    async def status(self, *, limit: int | None = None, cursor: str | None = None) -> r.ServiceStatus:
        """A page of banks: ``{config_version, org_config_version, banks: [{name, seq, memories,
        snapshot}], next_cursor?}`` (``admin.memories``)."""
        return await self._t.call("service_status", query={"limit": limit, "cursor": cursor})

    @operation("console_page")
    async def console_page(self) -> r.ConsolePage:
        """The web console's HTML page (text); no token needed."""
        return (await self._t.send("console_page")).text

    @operation("console_asset")
    async def console_asset(self, asset: str) -> r.ConsoleAsset:
        """One of the web console's files as text (``app.js``, ``console.css``...); no token needed."""
        return (await self._t.send("console_asset", path={"asset": asset})).text

    @operation("get_usage_limits")
    async def usage_limits(self) -> r.GetUsageLimits:
        """The org's limits: ``{effective, operator, org}`` (``admin.memories``)."""
        return await self._t.call("get_usage_limits")

    @operation("put_usage_limits")
    async def lower_usage_limits(self, **values: int | None) -> r.PutUsageLimits:
        """Lower the org's own limits (``memories_per_bank=1000``; ``None`` drops the org's value):
        ``{effective, operator, org}``. A value above the operator's limit raises ``validation_error``."""
        return await self._t.call("put_usage_limits", json=values)

    @operation("reload_caches")
    async def reload(self) -> r.ReloadCaches:
        """Drop the org's cached indexes and rules everywhere: ``{config_version, banks}``."""
        return await self._t.call("reload_caches")

    @operation("mcp_endpoint")
    async def mcp(self, message: dict[str, Any]) -> r.McpEndpoint:
        """Send one JSON-RPC message to the MCP endpoint: its response (a dict), or None for a
        notification (202). A protocol error of 400 or more raises, with ``code`` from
        ``error.data.code``; a tool's failure is a result with ``isError``."""
        response = await self._t.send("mcp_endpoint", json=message)
        return None if response.status_code == 202 else parse(OPERATIONS["mcp_endpoint"], response)

    async def aclose(self) -> None:
        await self._t.aclose()

    async def __aenter__(self) -> AsyncCairn:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
