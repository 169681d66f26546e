"""``GET /console``: the web console, a static page and its scripts served by the API itself, so it
shares the API's origin (no CORS) and works under a stage prefix (every URL it uses is relative).

The page runs only its own files (a strict Content-Security-Policy: no inline script, no eval, no
framing) and calls only the public API with the token the user typed, kept in ``sessionStorage``.
``/console/`` answers 301 to ``../console``: behind a trailing slash every relative URL would break.
"""

from __future__ import annotations

import functools
from pathlib import Path

from chalice import Blueprint

from ..errors import NotFound
from .http import NO_BODY, PATH_ERROR_HEADERS, Raw, Reply, endpoint

bp = Blueprint(__name__)

STATIC = Path(__file__).resolve().parent.parent / "console"

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'; require-trusted-types-for 'script'")
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY", "Cache-Control": "no-cache"}

PATH_ERROR_HEADERS["/console"] = SECURITY_HEADERS  # every error below /console answers under the same policy

JS, CSS, SVG = "text/javascript; charset=utf-8", "text/css; charset=utf-8", "image/svg+xml; charset=utf-8"
ASSETS = {"app.js": JS, "api.js": JS, "dom.js": JS, "banks.js": JS, "team.js": JS, "admin.js": JS,
          "diff.min.js": JS, "console.css": CSS, "favicon.svg": SVG}
"""The files ``/console/{asset}`` serves, with their content types; nothing else of the folder."""


@functools.cache
def _read(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


@endpoint(bp, "/console", ["GET"], public=True, responses={200: Raw("text/html", "The console's page."),
                                                           301: NO_BODY})
def console_page():
    """The console's page (HTML); ``/console/`` answers 301 ``Location: ../console``."""
    request = bp.current_request
    path = str(((request.context if request is not None else None) or {}).get("path") or "")
    if path.endswith("/"):
        return Reply(301, raw="", content_type="text/plain; charset=utf-8",
                     headers={"Location": "../console", **SECURITY_HEADERS})
    return Reply(200, raw=_read("index.html"), content_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)


@endpoint(bp, "/console/{asset}", ["GET"], public=True,
          responses={200: (Raw("text/javascript"), Raw("text/css"), Raw("image/svg+xml"))}, errors=("not_found",))
def console_asset(asset: str):
    """One of the console's files (``ASSETS``): a script, the style sheet or the icon; 404
    ``not_found`` for any other name."""
    ctype = ASSETS.get(asset)
    if ctype is None:  # under the console's headers (PATH_ERROR_HEADERS): the answer echoes the name asked for
        raise NotFound(f"The console has no file '{asset}'.", code="not_found")
    return Reply(200, raw=_read(asset), content_type=ctype, headers=SECURITY_HEADERS)
