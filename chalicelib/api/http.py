"""The one place requests are authenticated, parsed, and rendered, and errors become
``{"error", "code", "details"?}`` bodies.

``endpoint(bp, path, methods, permission=..., body=Model)`` wraps a view: it authenticates the
bearer token, checks the permission and the bank allow-list (a route is open to a token with a
bank allow-list only when it is declared ``bank_scoped``, i.e. its view checks the banks it
touches: so a new route is closed to bank-confined tokens until it does), enforces the body size
and media type, parses JSON into ``Model`` (400 ``invalid_json`` / ``validation_error`` naming the
field), calls the view with a ``Ctx`` and renders what it returns (a dict -> 200, ``(status, dict)``, or ``Reply``).
A ``public`` route (the health check) is not authenticated and its view gets no ``Ctx``.
``finalize(app)`` adds 405 answers for the methods a path lacks and 404 catch-alls for unknown
paths, so no Chalice-shaped error body ever reaches a client.
"""

from __future__ import annotations

import importlib
import json
import logging
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar, cast
from urllib.parse import unquote

from chalice import Blueprint, Chalice, Response
from chalice.app import Request
from pydantic import BaseModel, GetCoreSchemaHandler, GetJsonSchemaHandler, ValidationError, ValidationInfo
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticUseDefault, core_schema

from .. import patterns, timing, validation
from ..auth.principal import Principal
from ..auth.tokens import authenticate
from ..core.records import Memory
from ..core.store import History
from ..errors import (
    CODES,
    BadRequest,
    CairnError,
    ConfigError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from ..settings import get_settings
from ..storage.txn import as_backend_error
from ..usage import meter as usage_meter
from . import mcp_wire

log = logging.getLogger("cairn.http")

ALL_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
CATCH_ALL_DEPTH = 9

PATH_ERROR_HEADERS: dict[str, dict[str, str]] = {}
"""Path prefix (``/console``) -> headers added to every error answered under it (404 and 405,
and any a route's pipeline raises: 400, 413, 500...), so a page's own policy (CSP, nosniff)
covers the errors that echo a path below it too."""


def _path_error_headers(request: Any) -> dict[str, str]:
    context = request.context or {}
    path, stage = str(context.get("path") or request.path), str(context.get("stage") or "")
    if stage and path.startswith(f"/{stage}/"):  # API Gateway's context path holds the stage
        path = path[len(stage) + 1:]
    return next((h for prefix, h in PATH_ERROR_HEADERS.items() if path == prefix or path.startswith(prefix + "/")), {})


@dataclass
class Reply:
    """A rendered response: ``body`` is JSON-encoded unless ``raw`` bytes/str are given (bytes of
    a ``text/*`` or JSON-family ``content_type`` must be UTF-8; they are sent as text)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | str | None = None
    content_type: str = "application/json"


DAMAGED_HEADER = "X-Cairn-Damaged"


def damaged_header(count: int) -> dict[str, str]:
    """``{"X-Cairn-Damaged": "<count>"}`` when a listing or export left ``count`` damaged stored
    records out (or replaced them by markers), else ``{}``."""
    return {DAMAGED_HEADER: str(count)} if count else {}


def render_history(h: History, shape: Callable[[Memory], Mapping[str, object]] = Memory.public) -> dict[str, Any]:
    """``{revisions: [shape(record) + {op, seq, actor, why?}], damaged?}``, oldest first: one
    renderer for every memory history (a bank memory's ``public()`` shape by default; the
    structured routes pass Turnstone's row); ``why`` only on a revision that keeps a reason."""
    revs = [{**shape(r.record), "op": r.op, "seq": r.seq, "actor": r.actor, **({"why": r.why} if r.why else {})}
            for r in h.revisions]
    return {"revisions": revs, **({"damaged": h.damaged} if h.damaged else {})}


@dataclass
class Ctx:
    """What a view gets: the caller, the parsed body, query parameters, headers, raw body."""

    principal: Principal
    body: Any
    query: dict[str, str]
    headers: dict[str, str]
    raw_body: bytes
    route: str
    request_id: str = ""

    def header(self, name: str) -> str | None:
        """A request header, case-insensitively."""
        return self.headers.get(name.lower())


_SURROGATE = patterns.stdlib("[\ud800-\udfff]", "one class, finding lone surrogates")


def _json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    if _SURROGATE.search(text):
        # a lone surrogate cannot be encoded as UTF-8 and would drop the connection: the edge
        # rejects them on input, so this is the last line of defence for anything that slipped by
        log.warning("response held a lone surrogate; replaced with U+FFFD")
        text = _SURROGATE.sub("\ufffd", text)
    return Response(body=text, status_code=status, headers={"Content-Type": "application/json", **(headers or {})})


def error_response(err: CairnError) -> Response:
    """Render a ``CairnError`` as its status, ``{error, code, details?}`` and headers."""
    return _json_response(err.status, err.body(), err.headers)


def misconfigured(err: ConfigError) -> CairnError:
    """500 ``misconfigured`` naming the variable (or file) and the key: the operator's own
    configuration, never a client's value, so the message is safe to show."""
    return CairnError(f"The service is misconfigured: {err}", code="misconfigured",
                      details={"problems": err.problems} if err.problems else None)


M = TypeVar("M", bound=BaseModel)


def _error_message(e: Any) -> str:
    """A pydantic error's message; a string's length bound in characters (pydantic says "items"
    for a string type of ours, as for a list)."""
    kind, ctx, value = e.get("type"), e.get("ctx") or {}, e.get("input")
    if kind in ("too_long", "too_short") and isinstance(value, str):
        bound = ctx.get("max_length" if kind == "too_long" else "min_length")
        word = "at most" if kind == "too_long" else "at least"
        return f"Value should have {word} {bound} character{'' if bound == 1 else 's'}, not {len(value)}"
    return str(e.get("msg"))


def validation_failure(exc: ValidationError) -> BadRequest:
    """A pydantic ``ValidationError`` as 400 ``validation_error`` naming the first bad field
    (``details: {field, errors: [{field, message}]}``)."""
    errs = exc.errors()
    first = errs[0] if errs else {"loc": (), "msg": "invalid"}
    loc = ".".join(str(p) for p in first.get("loc", ())) or "body"
    return BadRequest(f"Invalid field '{loc}': {_error_message(first)}.",
                      details={"field": loc, "errors": [{"field": ".".join(str(p) for p in e.get("loc", ())),
                                                         "message": _error_message(e)} for e in errs[:20]]})


def parse_json(raw: bytes, model: type[BaseModel] | None) -> Any:
    """Decode a JSON body through the edge rules (``chalicelib.validation.loads``) and validate it
    into ``model``; 400 ``invalid_json`` / ``validation_error`` naming the field. An empty body
    counts as ``{}``."""
    data = validation.loads(raw) if raw and raw.strip() else {}
    if model is None:
        return data
    if not isinstance(data, dict):
        raise BadRequest("The request body must be a JSON object.", details={"field": "body"})
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_failure(exc) from None


def parse_query(query: dict[str, str], model: type[M]) -> M:
    """Validate a route's query parameters (already edge-checked strings) into ``model``;
    400 ``validation_error`` naming the first bad parameter. Parameters the model does not
    declare are ignored, as on every route."""
    try:
        return model.model_validate(query)
    except ValidationError as exc:
        raise validation_failure(exc) from None


@dataclass(frozen=True)
class IntRange:
    """The one rule for an integer parameter (``limit``, ``sinceSeq``...) within ``[lo, hi]``.

    Use ``IntRange(lo, hi).parse(value, name, default)`` directly, or as a pydantic type in a
    ``parse_query``/body model: ``limit: Annotated[int, IntRange(1, 200)] = 50``. Absent, ``None``
    or ``""`` reads as the default (``strict``: only absent does; a JSON body's ``null``, string,
    float or boolean is not an integer). Accepts a query string's ASCII digits
    (``validation.as_int``) and, unless ``strict``, a JSON integer or integral float.
    Raises 400 ``validation_error`` ``{field: name}``: "<name> must be an integer." or
    "<name> must be between <lo> and <hi>." (``turnstone``: Turnstone's wording, no full stop,
    and surrounding spaces stripped from a string first).
    """

    lo: int
    hi: int
    strict: bool = False
    turnstone: bool = False

    def parse(self, value: object, name: str, default: int) -> int:
        """``value`` as an integer within ``[lo, hi]`` (``default`` when absent); see the class."""
        if not self.strict and (value is None or value == ""):
            return default
        n = self._integer(value)
        end = "" if self.turnstone else "."
        if n is None:
            raise BadRequest(f"{name} must be an integer{end}", details={"field": name})
        if not self.lo <= n <= self.hi:
            raise BadRequest(f"{name} must be between {self.lo} and {self.hi}{end}", details={"field": name})
        return n

    def _integer(self, value: object) -> int | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if self.strict:
            return None
        if isinstance(value, str):
            return validation.as_int(value.strip() if self.turnstone else value)
        if isinstance(value, float) and value.is_integer():
            return int(value)  # JSON numbers are finite and bounded at the edge
        return None

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        def check(value: object, info: ValidationInfo) -> int:
            if not self.strict and (value is None or value == ""):
                raise PydanticUseDefault()
            # a CairnError is not a ValueError: pydantic lets it through with this exact message
            # a field named for a Python keyword (``from_``) is the parameter ``from``
            return self.parse(value, (info.field_name or "value").rstrip("_"), self.lo)

        return core_schema.with_info_before_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        out = handler(schema)
        out.update(minimum=self.lo, maximum=self.hi)
        # not strict: "" reads as the default, so a query string may send it
        return out if self.strict else {"anyOf": [out, {"const": ""}]}


def query_int(query: dict[str, str], name: str, default: int, lo: int, hi: int) -> int:
    """The query parameter ``name`` as an integer within [lo, hi] (``IntRange``); 400
    ``validation_error`` naming it."""
    return IntRange(lo, hi).parse(query.get(name), name, default)


@dataclass(frozen=True)
class Flag:
    """The one rule for a boolean query parameter: ``true``/``1``/``yes`` or ``false``/``0``/``no``
    in any case; absent or ``""`` is false. Raises 400 ``validation_error`` ``{field: name}``
    "<name> must be true or false.".

    Use ``Flag().parse(value, name)`` directly, or as a pydantic type in a ``parse_query`` model:
    ``history: QueryBool = False``."""

    def parse(self, value: str | None, name: str) -> bool:
        """``value`` (a query string's text, or ``None`` when absent) as a boolean; see the class."""
        raw = (value or "").lower()
        if raw in ("", "false", "0", "no"):
            return False
        if raw in ("true", "1", "yes"):
            return True
        raise BadRequest(f"{name} must be true or false.", details={"field": name})

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        def check(value: object, info: ValidationInfo) -> bool:
            text = value if isinstance(value, str) or value is None else str(value)
            # a CairnError is not a ValueError: pydantic lets it through with this exact message
            return self.parse(text, info.field_name or "value")

        return core_schema.with_info_before_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # a query string's boolean: these words in any case (absent or "" is false)
        return {"type": "string", "enum": ["true", "false", "1", "0", "yes", "no", ""]}


QueryBool = Annotated[bool, Flag()]
"""A boolean query parameter in a ``parse_query`` model (``Flag``)."""


def query_bool(query: dict[str, str], name: str) -> bool:
    """The query parameter ``name`` as a boolean (``Flag``); 400 ``validation_error`` naming it."""
    return Flag().parse(query.get(name), name)


def _render(result: Any) -> Response:
    if isinstance(result, Reply):
        if result.raw is not None:
            raw = result.raw
            ctype = result.content_type.split(";")[0].strip().lower()
            if isinstance(raw, bytes) and (ctype.startswith("text/") or "json" in ctype):
                # Chalice passes bytes through only for its binary types; text must be a str
                raw = raw.decode("utf-8")
            return Response(body=raw, status_code=result.status,
                            headers={"Content-Type": result.content_type, **result.headers})
        return _json_response(result.status, result.body, result.headers)
    if isinstance(result, tuple):
        status, body = result
        return _json_response(status, body)
    return _json_response(200, result)


def _status_of(result: Any) -> int:
    if isinstance(result, Reply):
        return result.status
    return int(result[0]) if isinstance(result, tuple) else 200


def _request_id(request: Any) -> str:
    # API Gateway's id when there is one (CloudWatch correlates on it), else our own
    return str((request.context or {}).get("requestId") or uuid.uuid4().hex)


def _with_request_id(request: Any, response: Response) -> Response:
    response.headers["X-Request-Id"] = _request_id(request)
    return response


def _current(app: Blueprint | Chalice) -> Request:
    """The request a Chalice view is answering (always set while one runs)."""
    request = app.current_request
    if request is None:
        raise RuntimeError("a Chalice view ran without a current request")
    return request


@dataclass(frozen=True)
class Raw:
    """A response body that is not JSON (``responses={200: Raw("application/x-ndjson")}``);
    ``NO_BODY`` (no media type) declares a response without a body."""

    media_type: str
    description: str = ""


NO_BODY = Raw("", "No body.")


@dataclass(frozen=True)
class ModelRef:
    """A response model named by its module and class, imported when the OpenAPI document or an
    MCP output schema needs it (``ResponseModels``)."""

    module: str
    name: str

    def resolve(self) -> type[BaseModel]:
        model: type[BaseModel] = getattr(importlib.import_module(self.module), self.name)
        return model


class ResponseModels:
    """A module of response models as route declarations see it: with
    ``m = ResponseModels("chalicelib.api.banks_models")``, ``m.Bank`` is a ``ModelRef``, so
    ``responses={200: m.Bank}`` does not import the module. Response models serve only the OpenAPI
    document and MCP output schemas (views render plain dicts), so ``import app`` builds none."""

    def __init__(self, module: str) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return ModelRef(self._module, name)


Responses = dict[int, "type[BaseModel] | ModelRef | Raw | tuple[type[BaseModel] | ModelRef | Raw, ...]"]
"""A route's success responses: status -> the pydantic model of its JSON body (or a ``ModelRef``
to it), a ``Raw`` body, or a tuple of these (one status, several media types)."""


def _resolved(declared: Any) -> Any:
    if isinstance(declared, tuple):
        return tuple(_resolved(d) for d in declared)
    return declared.resolve() if isinstance(declared, ModelRef) else declared


@dataclass(frozen=True)
class Route:
    """What ``endpoint`` declared for one route: the request pipeline's rules and the contract the
    OpenAPI document is built from (``chalicelib.api.openapi``)."""

    path: str
    methods: tuple[str, ...]
    permission: str | None
    body: type[BaseModel] | None
    body_types: tuple[str, ...]
    bank_scoped: bool
    public: bool = False
    query: type[BaseModel] | None = None
    declared: Responses = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    name: str = ""
    doc: str = ""
    view: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    envelope: str = "error"
    meter: str = "none"
    cost: Callable[[Ctx], int] | None = field(default=None, compare=False, repr=False)

    @property
    def responses(self) -> Responses:
        """The success responses as declared, every ``ModelRef`` imported: status -> model, ``Raw``
        or a tuple of these."""
        return {status: _resolved(d) for status, d in self.declared.items()}


ROUTES: list[Route] = []
"""Every route declared through ``endpoint``, in declaration order."""


def endpoint(bp: Blueprint | Chalice, path: str, methods: list[str] | None = None, *,
             permission: str | None = None, body: type[BaseModel] | None = None,
             body_types: tuple[str, ...] = ("application/json",), bank_scoped: bool = False,
             public: bool = False, query: type[BaseModel] | None = None, responses: Responses | None = None,
             errors: tuple[str, ...] = (), envelope: str = "error", meter: str | None = None,
             cost: Callable[[Ctx], int] | None = None) -> Callable:
    """Register ``view(ctx, **path_params)`` at ``path`` with Cairn's request pipeline.

    The contract, which the OpenAPI document shows: ``body`` (the model the JSON body is parsed
    into), ``query`` (the model the view parses its query string with, ``parse_query``),
    ``responses`` (success statuses and their body models; required) and ``errors``: the codes of
    ``chalicelib.errors.CODES`` the view itself can answer (those of the pipeline, such as
    ``unauthorized`` or ``validation_error``, are added from the declaration).

    ``bank_scoped``: the view applies the token's bank allow-list itself (``Principal.require_bank``
    on every bank it names, or the token grant rules); otherwise a token with an allow-list gets
    403 ``forbidden`` before the view runs (``Principal.require_org_wide``).

    ``public``: no authentication (the health check): the view is called as ``view(**path_params)``,
    without a ``Ctx``, so it knows nothing of a caller and can serve nothing of an org. A public
    route takes no permission, no body and no bank (``ValueError`` at declaration otherwise).

    ``meter``: how a request is counted and rate limited (``chalicelib.usage.meter``), always
    before the view runs: ``read`` (the token's and the org's buckets spent first, 429
    ``rate_limited`` over either; counted after its answer), ``write`` (the org's bucket first,
    the token's inside its first transaction), ``exempt`` (counted, never limited: deletes,
    forgets, purges), ``hook`` (a read never denied), ``tool`` (as the operation an MCP message
    runs) or ``none``. Default: ``read`` for GET, ``exempt`` for DELETE, else ``write``.
    ``cost``: the bucket tokens a request spends, from its parsed ``Ctx`` (default 1); it may
    raise the view's own refusal (403) before anything is spent."""
    if public and (permission or body is not None or bank_scoped):
        raise ValueError(f"public route {path} cannot take a permission, a body or banks")
    if not responses:
        raise ValueError(f"route {path} must declare its success responses")
    kind = meter or ("none" if public else "read" if (methods or ["GET"])[0] == "GET"
                     else "exempt" if (methods or ["GET"])[0] == "DELETE" else "write")
    if kind not in usage_meter.KINDS:
        raise ValueError(f"route {path}: meter {kind!r} is not one of {usage_meter.KINDS}")
    unknown = [c for c in errors if c not in CODES]
    if unknown:
        raise ValueError(f"route {path}: error codes {unknown} are not in chalicelib.errors.CODES")

    def wrap(view: Callable[..., Any]) -> Callable[..., Any]:
        route = Route(path, tuple(methods or ["GET"]), permission, body, body_types, bank_scoped, public,
                      query, dict(responses), tuple(errors), view.__name__, view.__doc__ or "", view, envelope,
                      kind, cost)
        ROUTES.append(route)

        def handler(**params: str) -> Response:
            return _handle(_current(bp), route, view, params)

        handler.__name__ = view.__name__
        handler.__doc__ = view.__doc__
        bp.route(path, methods=methods or ["GET"], content_types=["*/*"])(handler)
        return view

    return wrap


def serve(app: Chalice, path: str, params: dict[str, str], load: Callable[[], None], envelope: str) -> Response:
    """Answer the request ``app`` is serving with the route declared at ``path`` for its method, as
    the handler ``endpoint`` registers does, once ``load()`` imported the module that declares it
    (``chalicelib.api.areas``). A module that fails to load answers ``internal_error`` (500) in
    the route's ``envelope``, with the request id, as any failure of a view would."""
    request = _current(app)
    try:
        load()
    except Exception as exc:  # noqa: BLE001 - a route whose module cannot load still answers in the API's shape
        request_id = _request_id(request)
        response = _error(envelope, as_cairn_error(exc, request_id), request)
        response.headers["X-Request-Id"] = request_id
        return response
    route = next(r for r in ROUTES if r.path == path and request.method in r.methods)
    return _handle(request, route, cast(Callable[..., Any], route.view), params)


def _handle(request: Request, route: Route, view: Callable[..., Any], params: dict[str, str]) -> Response:
    """The pipeline around one view call: respond, stamp ``X-Request-Id`` and ``Server-Timing``
    (``chalicelib.timing``: where the time went, by phase), log one line."""
    started = time.perf_counter()
    request_id = _request_id(request)
    with timing.recording() as phases:
        response, principal = _respond(request, route, view, params, request_id)
    if response.status_code >= 400:
        response.headers = {**_path_error_headers(request), **response.headers}
    total_ms = (time.perf_counter() - started) * 1000
    response.headers["X-Request-Id"] = request_id
    response.headers[timing.HEADER] = timing.server_timing(phases, total_ms)
    log.info(json.dumps({"msg": "request", "request_id": request_id,
                         "route": f"{request.method} {route.path}", "status": response.status_code,
                         "principal_id": principal.token_id if principal else None,
                         "latency_ms": round(total_ms, 2), "phases": timing.rounded(phases)}))
    return response


def _respond(request: Request, route: Route, view: Callable[..., Any], params: dict[str, str],
             request_id: str) -> tuple[Response, Principal | None]:
    """The view's rendered response, or the error it or the pipeline raised as an error body;
    with the authenticated caller (None when authentication did not get that far)."""
    principal = None
    try:
        get_settings()
        params = {k: unquote(v) for k, v in params.items()}
        headers = {k.lower(): v for k, v in (request.headers or {}).items()}
        raw = _raw_body(request)
        if route.public:
            return _render(view(**_checked(params))), None
        principal = _authorize(headers.get("authorization"), route)
        with usage_meter.metering(principal, route.name, route.meter, meter_scope(params)):
            ctx = _context(request, route, principal, params, headers, raw)
            ctx.request_id = request_id
            _admit(route, ctx)
            result = view(ctx, **params)
            if _status_of(result) >= 400:
                usage_meter.failed()  # an error the view rendered itself (JSON-RPC) counts nothing
            usage_meter.finish()
        with timing.phase("render"):
            return _render(result), principal
    except Exception as exc:  # noqa: BLE001 - the last line of defence renders every failure
        return _error(route.envelope, as_cairn_error(exc, request_id), request), principal


def _admit(route: Route, ctx: Ctx) -> None:
    """Spend the request's rate limits before its view runs (``usage.meter.admit``): 429
    ``rate_limited`` / 503 ``backend_unavailable`` with nothing done."""
    if route.cost is not None:
        usage_meter.set_cost(route.cost(ctx))
    usage_meter.admit()


def meter_scope(params: dict[str, str]) -> str:
    """What a request's counters are kept under: the bank it names, the team space
    (``!space/<id>``), else ``""`` (the org)."""
    if params.get("bank"):
        return params["bank"]
    return f"!space/{params['space_id']}" if params.get("space_id") else ""


def as_cairn_error(exc: Exception, request_id: str) -> CairnError:
    """Any failure as the ``CairnError`` a client gets: itself, 500 ``misconfigured`` for the
    operator's configuration (logged), else ``unexpected_error``'s 503 or 500."""
    if isinstance(exc, CairnError):
        return exc
    if isinstance(exc, ConfigError):
        log.error("configuration error: %s", exc)
        return misconfigured(exc)
    return unexpected_error(exc, request_id)


def _error(envelope: str, err: CairnError, request: Request | None = None) -> Response:
    """``err`` as a route of ``envelope`` renders errors: the error body, or a JSON-RPC error object
    (answering the id of ``request``'s message when one can be read)."""
    if envelope == "jsonrpc":
        raw = cast(bytes, request.raw_body or b"") if request is not None else b""
        return _json_response(err.status, mcp_wire.from_cairn(err, mcp_wire.request_id_of(raw)), err.headers)
    return error_response(err)


def _raw_body(request: Request) -> bytes:
    """The request body; 413 ``payload_too_large`` over ``Settings.max_body_bytes``."""
    raw = cast(bytes, request.raw_body or b"")
    limit = get_settings().max_body_bytes
    if len(raw) > limit:
        raise PayloadTooLarge(f"The request body is over {limit} bytes.", details={"limit_bytes": limit})
    return raw


def _authorize(authorization: str | None, route: Route) -> Principal:
    """The caller (401), permitted the route (``permit``)."""
    with timing.phase("token"):
        principal = authenticate(authorization)
    permit(principal, route)
    return principal


def permit(principal: Principal, route: Route) -> None:
    """Raise 403 ``forbidden`` unless ``principal`` holds the route's permission and, unless the
    route is bank-scoped, has no bank allow-list."""
    if route.permission:
        principal.require(route.permission)
    if not route.bank_scoped:
        principal.require_org_wide()


def invoke(route: Route, principal: Principal, params: dict[str, str], *, body: dict[str, Any] | None = None,
           query: dict[str, str] | None = None) -> tuple[int, Any]:
    """Run ``route``'s view for ``principal`` without HTTP, behind the same checks as a request:
    the permission and allow-list (``permit``), the path values' edge rules, and ``body`` (a JSON
    object) validated into the route's body model. Returns ``(status, JSON body)``; raises the
    ``CairnError`` the pipeline would render (403, 400 ``validation_error`` naming the field...)."""
    try:
        return _invoke(route, principal, params, body, query)
    except Exception:
        usage_meter.failed()  # a refused or failed call counts nothing
        raise


def _invoke(route: Route, principal: Principal, params: dict[str, str], body: dict[str, Any] | None,
            query: dict[str, str] | None) -> tuple[int, Any]:
    view = route.view
    if view is None or route.public:
        raise ValueError(f"route {route.path} cannot be invoked")
    permit(principal, route)
    _checked(params)
    parsed: Any = None
    if route.body is not None:
        try:
            parsed = route.body.model_validate(body or {})
        except ValidationError as exc:
            raise validation_failure(exc) from None
    ctx = Ctx(principal=principal, body=parsed, query=dict(query or {}), headers={}, raw_body=b"",
              route=f"{route.methods[0]} {route.path}")
    usage_meter.retarget(route.name, route.meter, meter_scope(params))
    _admit(route, ctx)
    result = view(ctx, **params)
    if isinstance(result, Reply):
        if result.raw is not None:
            raise ValueError(f"route {route.path} answered a raw body")
        return result.status, result.body
    if isinstance(result, tuple):
        return result[0], result[1]
    return 200, result


def _checked(params: dict[str, str]) -> dict[str, str]:
    """``params`` (path segments), each edge-checked: client text too, so no lone surrogate, no NUL."""
    for k, v in params.items():
        validation.check_scalar(v, k)
    return params


def _context(request: Request, route: Route, principal: Principal, params: dict[str, str],
             headers: dict[str, str], raw: bytes) -> Ctx:
    """The view's ``Ctx``: path and query values edge-checked, the body parsed (415
    ``unsupported_media_type``, 400 ``invalid_json`` / ``validation_error``)."""
    _checked(params)
    query = {validation.check_scalar(k, "query"): validation.check_scalar(v, k)
             for k, v in (request.query_params or {}).items()}
    parsed = None
    if request.method in ("POST", "PUT", "PATCH"):
        ctype = (headers.get("content-type") or "application/json").split(";")[0].strip().lower()
        if raw.strip() and ctype not in route.body_types:
            raise UnsupportedMediaType(f"Content-Type must be one of {list(route.body_types)}.",
                                       details={"content_type": ctype})
        if "application/json" in route.body_types and ctype == "application/json":
            parsed = parse_json(raw, route.body)
        elif route.body is not None:
            # an empty body sent as another type: the view of a body model always gets one
            raise BadRequest("The request body must be a JSON object.", details={"field": "body"})
    return Ctx(principal=principal, body=parsed, query=query, headers=headers, raw_body=raw,
               route=f"{request.method} {route.path}")


def unexpected_error(exc: Exception, request_id: str) -> CairnError:
    """503 ``backend_unavailable`` for a throttled or unreachable backend, else 500
    ``internal_error`` carrying the request id (logged by type and place only: an exception's
    message can quote memory text)."""
    backend = as_backend_error(exc)
    if backend is not None:
        log.warning("backend unavailable: %s", type(exc).__name__)
        return backend
    tb = traceback.extract_tb(exc.__traceback__)[-3:]
    log.error(json.dumps({"msg": "unhandled error", "request_id": request_id, "error": type(exc).__name__,
                          "where": [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in tb]}))
    return CairnError("An internal error occurred.", code="internal_error", details={"request_id": request_id})


def finalize(app: Chalice, envelopes: Mapping[str, str] | None = None) -> None:
    """After every blueprint is registered: answer 405 ``method_not_allowed`` on known paths
    for the methods they lack, and 404 ``not_found`` on unknown paths (catch-all routes up to
    ``CATCH_ALL_DEPTH`` segments; on AWS the gateway response in infra/ covers the rest).
    ``envelopes``: path -> error envelope of routes not declared yet (``areas.envelopes``)."""
    envelopes = {**(envelopes or {}), **{r.path: r.envelope for r in ROUTES}}
    for path, entries in list(app.routes.items()):
        missing = [m for m in ALL_METHODS if m not in entries]
        if missing:
            allowed, envelope = ", ".join(sorted(entries)), envelopes.get(path, "error")

            def not_allowed(allowed=allowed, envelope=envelope, **_: str) -> Response:
                request = _current(app)
                return _with_request_id(request, _error(envelope, MethodNotAllowed(
                    f"Method {request.method} is not allowed here; use {allowed}.",
                    headers={"Allow": allowed, **_path_error_headers(request)})))

            not_allowed.__name__ = "method_not_allowed_" + str(abs(hash(path)))
            app.route(path, methods=missing, content_types=["*/*"])(not_allowed)

    def unknown(**_: str) -> Response:
        # current_request.path is the matched pattern ("/{p0}/{p1}"); the context has the real path
        request = _current(app)
        path = (request.context or {}).get("path") or request.path
        return _with_request_id(request, error_response(NotFound(f"No route for {request.method} {path}.",
                                                                 code="not_found",
                                                                 headers=_path_error_headers(request))))

    for depth in range(1, CATCH_ALL_DEPTH + 1):
        path = "/" + "/".join(f"{{p{i}}}" for i in range(depth))
        if path in app.routes:
            continue
        def not_found(**kw: str) -> Response:
            return unknown(**kw)

        not_found.__name__ = f"not_found_{depth}"
        app.route(path, methods=list(ALL_METHODS), content_types=["*/*"])(not_found)
