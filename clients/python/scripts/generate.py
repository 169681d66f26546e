"""Regenerate the client's generated modules from the repository's openapi.json (``make client``).

Writes into ``cairn_client/`` (or ``--out DIR``, which the up-to-date test uses):

- ``models.py``: every schema of ``components.schemas``, by datamodel-code-generator with fixed
  options (no timestamp, the builtin formatter), so the same document gives the same file;
- ``_operations.py``: ``OPERATIONS``, one ``Op`` per operationId (method, path, the model of each
  success status, whether the server honours an ``Idempotency-Key``);
- ``_responses.py``: each operation's success type (``SaveMemory`` for ``save_memory``), which the
  client's methods are annotated with;
- ``_sync_client.py``: ``Cairn``, rewritten from ``_async_client.py`` (``AsyncCairn``) by plain
  text substitutions, so the two clients never drift apart.

Usage: ``python clients/python/scripts/generate.py [--openapi PATH] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "cairn_client"
DEFAULT_OPENAPI = HERE.parents[2] / "openapi.json"
HEADER = "# Generated from openapi.json by clients/python/scripts/generate.py: do not edit."
HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")

# Operations whose handler honours an Idempotency-Key (chalicelib/idempotency.py's callers), in case
# the document does not declare the header as a parameter.
KEYED = frozenset({"save_memory"})

DATAMODEL_OPTIONS = [
    "--input-file-type", "openapi",
    "--openapi-scopes", "schemas",
    "--output-model-type", "pydantic_v2.BaseModel",
    "--target-python-version", "3.11",
    "--formatters", "builtin",
    "--disable-timestamp",
    "--use-standard-collections",
    "--use-union-operator",
    "--use-annotated",
    "--use-double-quotes",
    "--collapse-root-models",
    "--enum-field-as-literal", "all",
    # Fields the server adds later must not break an older client.
    "--extra-fields", "allow",
    "--custom-file-header", HEADER,
]

# (async text, sync text), applied in order to _async_client.py.
UNASYNC = [
    ('"""The asynchronous client, ``AsyncCairn``. ``_sync_client.py`` (``Cairn``) is generated from this\n'
     'file by ``scripts/generate.py``: edit here, then run ``make client``.',
     HEADER + '\n"""The synchronous client, ``Cairn``, generated from ``_async_client.py`` (edit that file,\n'
     'then run ``make client``).'),
    ("async def ", "def "),
    ("async for ", "for "),
    ("async with ", "with "),
    ("await ", ""),
    ("abc.Awaitable[None]", "None"),
    ("abc.AsyncIterator", "abc.Iterator"),
    ("_core.async_sleep", "_core.sync_sleep"),
    ("__aenter__", "__enter__"),
    ("__aexit__", "__exit__"),
    ("aclose()", "close()"),
    ("def aclose(", "def close("),
    (".aread()", ".read()"),
    (".aiter_bytes(", ".iter_bytes("),
]


def models(openapi: Path, out: Path) -> None:
    cmd = [sys.executable, "-m", "datamodel_code_generator", "--input", str(openapi), "--output", str(out),
           *DATAMODEL_OPTIONS]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"datamodel-codegen failed:\n{done.stderr}")


def _schema_name(response: dict[str, Any], doc: dict[str, Any]) -> str | None:
    """The class ``models.py`` has for a success response's JSON schema (``class_name`` of its
    component), or None when the schema is no component."""
    if "$ref" in response:
        response = doc["components"]["responses"][response["$ref"].rsplit("/", 1)[-1]]
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        return class_name(ref.rsplit("/", 1)[-1])
    return None


def class_name(component: str) -> str:
    """The class datamodel-code-generator makes of a component name: its alphanumeric runs, each
    capitalised, joined (``Page_BankMemory_`` -> ``PageBankMemory``, ``list`` -> ``List``)."""
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^0-9A-Za-z]+", component) if p)


def operations(doc: dict[str, Any]) -> str:
    lines = [HEADER, '"""``OPERATIONS``: operationId -> ``Op`` (method, path, success models, keyed)."""', "",
             "from ._core import Op", "", "OPERATIONS: dict[str, Op] = {"]
    rows = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method not in HTTP_METHODS:
                continue
            op_id = op["operationId"]
            responses = {int(s): _schema_name(r, doc) for s, r in op.get("responses", {}).items()
                         if s.isdigit() and 200 <= int(s) < 300}
            params = [p for p in op.get("parameters", []) if "$ref" not in p]
            keyed = op_id in KEYED or any(p.get("in") == "header" and p.get("name", "").lower() == "idempotency-key"
                                          for p in params)
            rows.append((op_id, method.upper(), path, dict(sorted(responses.items())), keyed))
    for op_id, method, path, responses, keyed in sorted(rows):
        keyed_arg = ", keyed=True" if keyed else ""
        lines.append(f"    {op_id!r}: Op({method!r}, {path!r}, {responses!r}{keyed_arg}),")
    lines.append("}")
    return "\n".join(lines).replace("'", '"') + "\n"


def type_name(op_id: str) -> str:
    """``save_memory`` -> ``SaveMemory``: the name of an operation's success type in ``_responses.py``."""
    return "".join(part.capitalize() for part in op_id.split("_"))


def responses(doc: dict[str, Any], model_names: set[str]) -> str:
    lines = [HEADER, '"""The success type of each operation, named after its operationId (``save_memory`` ->',
             '``SaveMemory``): its model from ``models`` (a union when its statuses answer different ones), ``Any``',
             'while the document names none."""', ""]
    found = []
    for item in doc["paths"].values():
        for method, op in item.items():
            if method not in HTTP_METHODS:
                continue
            names = sorted({n for s, r in op.get("responses", {}).items() if s.isdigit() and 200 <= int(s) < 300
                            for n in [_schema_name(r, doc)] if n in model_names}
                           | ({"None"} if _untyped_success(op, doc, model_names) else set()))
            found.append((type_name(op["operationId"]), names))
    aliases = []
    for name, named in sorted(found):
        typed = [f"models.{m}" for m in named if m != "None"]
        aliases.append(f"{name}: TypeAlias = {' | '.join(typed) if typed and 'None' not in named else 'Any'}")
    lines += ["from typing import Any, TypeAlias" if any(a.endswith("= Any") for a in aliases)
              else "from typing import TypeAlias", ""]
    if any("models." in a for a in aliases):
        lines += ["from . import models", ""]
    return "\n".join(lines + aliases) + "\n"


def _untyped_success(op: dict[str, Any], doc: dict[str, Any], model_names: set[str]) -> bool:
    """Whether some success status of ``op`` has no named model (its answer stays plain JSON)."""
    return any(_schema_name(r, doc) not in model_names for s, r in op.get("responses", {}).items()
               if s.isdigit() and 200 <= int(s) < 300)


def unasync(source: str) -> str:
    for old, new in UNASYNC:
        source = source.replace(old, new)
    # AsyncCairn -> Cairn, AsyncBanks -> Banks, httpx.AsyncClient -> httpx.Client...
    return re.sub(r"\bAsync(?=[A-Z])", "", source)


def generate(openapi: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    models(openapi, out / "models.py")
    doc = json.loads(openapi.read_text())
    (out / "_operations.py").write_text(operations(doc))
    defined = set(re.findall(r"^class (\w+)\(", (out / "models.py").read_text(), flags=re.M))
    (out / "_responses.py").write_text(responses(doc, defined))
    (out / "_sync_client.py").write_text(unasync((PACKAGE / "_async_client.py").read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openapi", type=Path, default=DEFAULT_OPENAPI)
    parser.add_argument("--out", type=Path, default=PACKAGE)
    args = parser.parse_args()
    generate(args.openapi, args.out)


if __name__ == "__main__":
    main()
