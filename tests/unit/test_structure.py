"""The codebase's structure rules, checked on the source text (``ast``; nothing under test is
imported, so these tests need no AWS, no moto and no network).

Each rule is one test. A failure prints every violation as ``path:line: what`` and the count, so
the list is the to-do. Each checker is also run on a small snippet that breaks its rule, so a
checker that can no longer find anything fails too.

- only the bank write path (``core/store/txn.py``) and the storage modules of non-bank records run
  ``storage.txn.run_transaction`` (``RUN_TRANSACTION_CALLERS``);
- only ``storage/`` and the areas' storage modules (``STORAGE_MODULES``) import a pynamodb model;
- no function outside ``chalicelib/api/`` is annotated to return ``dict[str, Any]``;
- Whoosh's private API is reached from ``search/whoosh_private.py`` only;
- no function in ``chalicelib`` is over 60 lines or over complexity 12 (ruff C901), except the
  ranking internals ``search/recall.py::_rank``;
- ``tests/unit`` imports neither boto3 nor moto.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# module (path from the repository root) -> why it may run a DynamoDB transaction itself
RUN_TRANSACTION_CALLERS: dict[str, str] = {
    "chalicelib/core/store/txn.py": "the one bank write path: bank row, seq condition, retries, index notify",
    "chalicelib/auth/store.py": "tokens: principals and their bearer tokens, no bank involved",
    "chalicelib/team/store.py": "team spaces, memberships and entries: org-scoped records, not bank memories",
    "chalicelib/structured/objects.py": "structured objects (sessions, projects, workstreams): not bank memories",
    "chalicelib/usage/meter.py": "usage counters of a write request that committed no transaction of its own",
}
TXN_MODULE = "chalicelib.storage.txn"  # defines run_transaction

# the areas' storage modules: they (and chalicelib/storage/) may import pynamodb models.
STORAGE_MODULES: dict[str, str] = {
    "chalicelib/core/store/lanes.py": "bank rows, lane rows, version items, config version rows",
    "chalicelib/core/store/queries.py": "memories, pointers, revisions",
    "chalicelib/core/store/parallel.py": "memories (a whole bank's ranges)",
    "chalicelib/core/store/txn.py": "banks, memories, revisions (the staged changes)",
    "chalicelib/structured/objects.py": "structured objects",
    "chalicelib/team/store.py": "team spaces, entries, updates, events, attributions, rates",
    "chalicelib/auth/store.py": "tokens",
    "chalicelib/audit.py": "audit events",
    "chalicelib/idempotency.py": "Idempotency-Key records",
    "chalicelib/extraction/store.py": "extraction cursors and job progress",
    "chalicelib/usage/meter.py": "usage counters and rate-limit buckets",
    "chalicelib/usage/report.py": "usage counters (the report's reads)",
    "chalicelib/usage/limits.py": "an org's limit overrides",
    "chalicelib/usage/quotas.py": "the org's bank count",
    "chalicelib/usage/extraction.py": "extraction's token counters, the day's total, deferred-session pointers",
}
STORAGE_PACKAGE = "chalicelib/storage/"
TABLES_MODULE = "chalicelib.storage.tables"

API_PACKAGE = "chalicelib/api/"
WHOOSH_PRIVATE = "chalicelib/search/whoosh_private.py"

MAX_FUNCTION_LINES = 60
MAX_COMPLEXITY = 12
# path -> qualified name of a function exempt from the size rules, with the functions nested in it
SIZE_EXEMPT: dict[str, str] = {"chalicelib/search/recall.py": "_rank"}  # the ranking internals (the recall hot loop)

FORBIDDEN_IN_UNIT = ("boto3", "moto")

Violation = tuple[str, int, str]  # (path from the root, line, what)


# ---------------------------------------------------------------------------------------------
# source access


@functools.cache
def _parse(rel: str) -> ast.Module:
    return ast.parse((ROOT / rel).read_text(encoding="utf-8"), filename=rel)


def _python_files(*roots: str) -> list[str]:
    """Paths (from the repository root, sorted) of the ``.py`` files under ``roots`` (a file or a
    directory each; a missing one yields nothing)."""
    out: set[str] = set()
    for r in roots:
        p = ROOT / r
        if p.is_file() and p.suffix == ".py":
            out.add(r)
        elif p.is_dir():
            out.update(f.relative_to(ROOT).as_posix() for f in p.rglob("*.py") if "__pycache__" not in f.parts)
    return sorted(out)


def _production_files() -> list[str]:
    return _python_files("chalicelib", "app.py")


def _module_name(rel: str) -> str:
    parts = rel[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(rel: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` in file ``rel`` names."""
    if not node.level:
        return node.module or ""
    package = _module_name(rel).split(".")
    if not rel.endswith("__init__.py"):
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _module_aliases(rel: str, tree: ast.AST, target: str) -> set[str]:
    """Local names bound to module ``target`` (``import a.b as x``, ``from a import b``)."""
    parent, _, leaf = target.rpartition(".")
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.asname for a in node.names if a.name == target and a.asname)
        elif isinstance(node, ast.ImportFrom) and _resolve(rel, node) == parent:
            names.update(a.asname or a.name for a in node.names if a.name == leaf)
    return names


def _full_attribute(node: ast.AST) -> str | None:
    """``a.b.c`` for an attribute chain on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _functions(tree: ast.AST) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its qualified name (``Class.method``, ``outer.inner``)."""
    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                yield name, child
                yield from walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, prefix + child.name + ".")
            else:
                yield from walk(child, prefix)
    return walk(tree, "")


def _report(rule: str, found: Iterable[Violation]) -> None:
    """Fail with every violation on its own line (and print the count, kept by ``-s`` or ``-rA``)."""
    found = sorted(set(found))
    print(f"{rule}: {len(found)} violation(s)")
    if found:
        lines = "\n".join(f"  {path}:{line}: {what}" for path, line, what in found)
        pytest.fail(f"{rule}: {len(found)} violation(s)\n{lines}", pytrace=False)


# ---------------------------------------------------------------------------------------------
# checkers: (path, tree) -> violations, each exercised on a breaking snippet below


def run_transaction_uses(rel: str, tree: ast.AST) -> list[Violation]:
    """Every reference to ``run_transaction`` (a call, or the function passed on): by a name
    imported as ``run_transaction``, or as an attribute ``<anything>.run_transaction``."""
    names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
             for a in n.names if a.name == "run_transaction"}
    out: list[Violation] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
            what = node.id if node.id == "run_transaction" else f"{node.id} (run_transaction)"
        elif isinstance(node, ast.Attribute) and node.attr == "run_transaction":
            what = _full_attribute(node) or "....run_transaction"
        else:
            continue
        out.append((rel, node.lineno, f"{what} in {_enclosing(tree, node.lineno)}"))
    return out


def _enclosing(tree: ast.AST, line: int) -> str:
    """The innermost function around ``line`` (``module level`` when none)."""
    best = None
    for qualname, fn in _functions(tree):
        if fn.lineno <= line <= (fn.end_lineno or fn.lineno) and (best is None or fn.lineno >= best[1]):
            best = (qualname, fn.lineno)
    return f"{best[0]}()" if best else "module level"


def _is_model_name(name: str) -> bool:
    return name.endswith("Model") or name == "ALL_MODELS"


def model_imports(rel: str, tree: ast.AST) -> list[Violation]:
    """Every pynamodb model (a name of ``storage.tables`` ending in ``Model``, or ``ALL_MODELS``)
    imported, star-imported, or reached as an attribute of the ``tables`` module."""
    out: list[Violation] = []
    modules = _module_aliases(rel, tree, TABLES_MODULE)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _resolve(rel, node) == TABLES_MODULE:
            out.extend((rel, node.lineno, f"imports {a.name} from storage.tables")
                       for a in node.names if a.name == "*" or _is_model_name(a.name))
        elif isinstance(node, ast.Import):
            out.extend((rel, node.lineno, f"imports {a.name} (use it through tables.<Model>)")
                       for a in node.names if a.name == TABLES_MODULE and not a.asname)
        elif (isinstance(node, ast.Attribute) and _is_model_name(node.attr)
              and isinstance(node.value, ast.Name) and node.value.id in modules):
            out.append((rel, node.lineno, f"uses {node.value.id}.{node.attr}"))
    return out


_TYPE_ALIAS = getattr(ast, "TypeAlias", ast.AnnAssign)  # `type X = ...` from Python 3.12
_DICT_ANY = re.compile(r"\b(?:typing\.)?[dD]ict\[str,(?:typing\.)?Any\]")


def _annotation_text(node: ast.expr) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "quoted" annotation
        return node.value.replace(" ", "")
    return ast.unparse(node).replace(" ", "")


def dict_any_returns(rel: str, tree: ast.AST) -> list[Violation]:
    """Functions whose return annotation contains ``dict[str, Any]`` (or ``Dict``), directly or
    through a module-level alias (``JSON = dict[str, Any]``)."""
    aliases: set[str] = set()
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Assign) and _DICT_ANY.search(_annotation_text(node.value)):
            aliases.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign | _TYPE_ALIAS) and node.value is not None:
            target = node.target if isinstance(node, ast.AnnAssign) else node.name
            if isinstance(target, ast.Name) and _DICT_ANY.search(_annotation_text(node.value)):
                aliases.add(target.id)
    out: list[Violation] = []
    for qualname, fn in _functions(tree):
        if fn.returns is None:
            continue
        text = _annotation_text(fn.returns)
        words = set(re.findall(r"[A-Za-z_]\w*", text))
        if _DICT_ANY.search(text) or words & aliases:
            out.append((rel, fn.lineno, f"{qualname}() -> {text}"))
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _whoosh_names(rel: str, tree: ast.AST) -> tuple[bool, set[str]]:
    """(does the module import whoosh, local names bound to whoosh modules or objects)."""
    uses, names = False, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "whoosh":
                    uses = True
                    names.add(a.asname or "whoosh")
        elif isinstance(node, ast.ImportFrom) and _resolve(rel, node).split(".")[0] == "whoosh":
            uses = True
            names.update(a.asname or a.name for a in node.names)
    return uses, names


def _own_names(rel: str, tree: ast.AST) -> set[str]:
    """Local names bound to modules or objects of our own code (``chalicelib``, relative imports)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _resolve(rel, node).split(".")[0] == "chalicelib":
            out.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.asname for a in node.names if a.name.startswith("chalicelib.") and a.asname)
    return out


def _class_attributes(cls: ast.ClassDef) -> set[str]:
    """Names a class defines: methods, class-level (annotated) assignments, ``self.<name> = ...``."""
    out: set[str] = set()
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for sub in ast.walk(cls):
        targets = sub.targets if isinstance(sub, ast.Assign) else [getattr(sub, "target", None)]
        out.update(t.attr for t in targets if isinstance(t, ast.Attribute)
                   and isinstance(t.value, ast.Name) and t.value.id == "self")
    return out


def own_private_attributes(files: Iterable[tuple[str, ast.AST]]) -> set[str]:
    """Private names defined by our classes that derive from no Whoosh class (``BankIndex._reopen``):
    reaching them is not reaching into Whoosh."""
    out: set[str] = set()
    for rel, tree in files:
        whoosh = _whoosh_names(rel, tree)[1]
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and not {
                    (_full_attribute(b) or "").split(".")[0] for b in node.bases} & whoosh:
                out.update(n for n in _class_attributes(node) if _private(n))
    return out


class _WhooshPrivateVisitor(ast.NodeVisitor):
    """Single-underscore attributes in a module that imports whoosh. Not counted: ``self._x`` /
    ``cls._x`` inside a class with no Whoosh base, ``mod._x`` on a name imported from our own
    code, and ``<anything>._x`` where ``_x`` is defined by one of our non-Whoosh classes
    (``own``); everything else may be a Whoosh object's private state."""

    def __init__(self, rel: str, whoosh: set[str], own: set[str], own_attrs: frozenset[str] = frozenset()) -> None:
        self.rel, self.whoosh, self.own, self.own_attrs = rel, whoosh, own, own_attrs
        self.classes: list[bool] = []  # per enclosing class: does it derive from a Whoosh class
        self.found: list[Violation] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        roots = {(_full_attribute(b) or "").split(".")[0] for b in node.bases}
        self.classes.append(bool(roots & self.whoosh))
        self.generic_visit(node)
        self.classes.pop()

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _private(node.attr) and node.attr not in self.own_attrs and not self._ours(node.value):
            self.found.append((self.rel, node.lineno, f"{_full_attribute(node) or '....' + node.attr}"))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        fn = node.func.id if isinstance(node.func, ast.Name) else None
        if (fn in {"getattr", "setattr", "hasattr", "delattr"} and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                and _private(node.args[1].value) and not self._ours(node.args[0])):
            self.found.append((self.rel, node.lineno, f"{fn}(..., {node.args[1].value!r})"))
        self.generic_visit(node)

    def _ours(self, receiver: ast.expr) -> bool:
        if not isinstance(receiver, ast.Name):
            return False
        if receiver.id in {"self", "cls"}:
            return bool(self.classes) and not self.classes[-1]
        return receiver.id in self.own


def whoosh_private_uses(rel: str, tree: ast.AST, own_attrs: frozenset[str] = frozenset()) -> list[Violation]:
    """Imports of a private Whoosh module or name, and (in a module importing whoosh) private
    attributes reached on anything that is not our own (``_WhooshPrivateVisitor``)."""
    out: list[Violation] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((rel, node.lineno, f"import {a.name}") for a in node.names
                       if a.name.split(".")[0] == "whoosh" and any(map(_private, a.name.split("."))))
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(rel, node)
            if module.split(".")[0] != "whoosh":
                continue
            if any(map(_private, module.split("."))):
                out.append((rel, node.lineno, f"from {module} import ..."))
            out.extend((rel, node.lineno, f"from {module} import {a.name}") for a in node.names if _private(a.name))
    uses, names = _whoosh_names(rel, tree)
    if uses:
        visitor = _WhooshPrivateVisitor(rel, names, _own_names(rel, tree), own_attrs)
        visitor.visit(tree)
        out.extend(visitor.found)
    return out


def _size_exempt(rel: str, qualname: str) -> bool:
    exempt = SIZE_EXEMPT.get(rel)
    return exempt is not None and (qualname == exempt or qualname.startswith(exempt + "."))


def long_functions(rel: str, tree: ast.AST) -> list[Violation]:
    """Functions longer than ``MAX_FUNCTION_LINES`` (``end_lineno - lineno + 1``, the ``def`` line
    to the last line of the body; decorators not counted)."""
    out: list[Violation] = []
    for qualname, fn in _functions(tree):
        lines = (fn.end_lineno or fn.lineno) - fn.lineno + 1
        if lines > MAX_FUNCTION_LINES and not _size_exempt(rel, qualname):
            out.append((rel, fn.lineno, f"{qualname}() is {lines} lines (max {MAX_FUNCTION_LINES})"))
    return out


def unit_test_imports(rel: str, tree: ast.AST) -> list[Violation]:
    """Imports of boto3 or moto: ``import``, ``from ... import``, ``importlib.import_module``,
    ``__import__`` and ``pytest.importorskip`` with a literal name, at any depth."""
    def forbidden(name: str | None) -> bool:
        return name is not None and name.split(".")[0] in FORBIDDEN_IN_UNIT

    out: list[Violation] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((rel, node.lineno, f"import {a.name}") for a in node.names if forbidden(a.name))
        elif isinstance(node, ast.ImportFrom) and not node.level and forbidden(node.module):
            out.append((rel, node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            fn = _full_attribute(node.func) or ""
            if fn.split(".")[-1] in {"import_module", "__import__", "importorskip"} \
                    and isinstance(node.args[0].value, str) and forbidden(node.args[0].value):
                out.append((rel, node.lineno, f"{fn}({node.args[0].value!r})"))
    return out


# ---------------------------------------------------------------------------------------------
# the rules


def test_only_the_write_path_and_non_bank_storage_modules_run_transactions():
    """``run_transaction`` is used by ``core/store/txn.py`` (every bank write) and by the storage
    modules of records that are not bank memories (``RUN_TRANSACTION_CALLERS``); nowhere else."""
    found = [v for rel in _production_files() if rel not in RUN_TRANSACTION_CALLERS
             and _module_name(rel) != TXN_MODULE for v in run_transaction_uses(rel, _parse(rel))]
    _report("run_transaction outside the write path and the storage modules", found)


def test_pynamodb_models_are_imported_only_by_storage_modules():
    """Only ``chalicelib/storage/`` and the areas' storage modules (``STORAGE_MODULES``) import a
    pynamodb model; domain code calls their named functions."""
    found = [v for rel in _production_files()
             if not rel.startswith(STORAGE_PACKAGE) and rel not in STORAGE_MODULES
             for v in model_imports(rel, _parse(rel))]
    _report("pynamodb model imported outside the storage modules", found)


def test_no_domain_function_returns_dict_str_any():
    """Outside ``chalicelib/api/`` (which renders), functions return typed values, never an
    annotated ``dict[str, Any]``."""
    found = [v for rel in _production_files() if not rel.startswith(API_PACKAGE)
             for v in dict_any_returns(rel, _parse(rel))]
    _report("domain function annotated -> dict[str, Any]", found)


def test_whoosh_private_api_is_reached_from_one_module():
    """Only ``search/whoosh_private.py`` (pinned to the Whoosh version it was written against)
    imports Whoosh's private names or touches private attributes of Whoosh objects."""
    files = _production_files()
    own = frozenset(own_private_attributes((rel, _parse(rel)) for rel in files if rel != WHOOSH_PRIVATE))
    found = [v for rel in files if rel != WHOOSH_PRIVATE for v in whoosh_private_uses(rel, _parse(rel), own)]
    _report(f"Whoosh private API outside {WHOOSH_PRIVATE}", found)


def test_no_function_over_sixty_lines():
    """Every function in ``chalicelib`` is at most ``MAX_FUNCTION_LINES`` lines (``SIZE_EXEMPT``
    aside)."""
    found = [v for rel in _python_files("chalicelib") for v in long_functions(rel, _parse(rel))]
    _report(f"function over {MAX_FUNCTION_LINES} lines", found)


def _ruff() -> str:
    exe = Path(sys.executable).parent / "ruff"
    found = str(exe) if exe.exists() else shutil.which("ruff")
    assert found, "ruff is not installed next to this Python nor on PATH (requirements-dev.txt)"
    return found


def _qualname_at(rel: str, line: int) -> str:
    names = [q for q, fn in _functions(_parse(rel)) if fn.lineno == line]
    return names[0] if names else "?"


def test_no_function_over_complexity_twelve():
    """ruff's C901 (McCabe, max ``MAX_COMPLEXITY``, ``# noqa`` ignored) finds nothing in
    ``chalicelib`` (``SIZE_EXEMPT`` aside)."""
    cmd = [_ruff(), "check", "--no-cache", "--ignore-noqa", "--select", "C901", "--output-format", "json",
           "--config", f"lint.mccabe.max-complexity = {MAX_COMPLEXITY}", "chalicelib"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode in (0, 1), f"ruff failed ({proc.returncode}): {proc.stderr}"
    found = []
    for d in json.loads(proc.stdout or "[]"):
        rel = Path(d["filename"]).resolve().relative_to(ROOT).as_posix()
        line = d["location"]["row"]
        qualname = _qualname_at(rel, line)
        if not _size_exempt(rel, qualname):
            found.append((rel, line, f"{qualname}(): {d['message']}"))
    _report(f"function over complexity {MAX_COMPLEXITY}", found)


def _unit_files() -> list[str]:
    """The test files of ``tests/unit`` and every ``conftest.py`` pytest loads for them."""
    conftests = [p for p in ("conftest.py", "tests/conftest.py") if (ROOT / p).is_file()]
    return sorted({*_python_files("tests/unit"), *conftests})


def test_unit_tests_import_neither_boto3_nor_moto():
    """``tests/unit`` is pure: none of its files (nor a conftest.py above it, which pytest
    loads for it) imports boto3 or moto."""
    files = _unit_files()
    assert "tests/unit/test_structure.py" in files
    found = [v for rel in files for v in unit_test_imports(rel, _parse(rel))]
    _report("boto3/moto imported by the unit tests", found)


# ---------------------------------------------------------------------------------------------
# each checker finds what it is meant to find


BREAKING = {
    "run_transaction": (run_transaction_uses, """
from ..storage.txn import run_transaction as rt
from ..storage import txn
def save(attempt):
    rt(attempt)
    txn.run_transaction(attempt)
    return retry(rt)
""", 3),
    "models": (model_imports, """
from ..storage.tables import BankModel, bind
from ..storage import tables as t
from chalicelib.storage.tables import ALL_MODELS
def rows():
    return t.MemoryModel.query("x"), t.bind()
""", 3),
    "dict_any": (dict_any_returns, """
from typing import Any, Dict
JSON = dict[str, Any]
def a() -> dict[str, Any]: ...
def b() -> "Dict[str, Any]": ...
def c() -> tuple[int, dict[str, Any]]: ...
def d() -> JSON: ...
def e(x: dict[str, Any]) -> int: ...
class K:
    def f(self) -> list[dict[str, Any]] | None: ...
""", 5),
    "whoosh": (whoosh_private_uses, """
from whoosh.codec import whoosh3
from whoosh.reading import _private_helper
from whoosh.analysis import StemFilter
from . import index
class Mine:
    def ok(self):
        return self._mine, index._rebuild_into, self.__dict__
class Stem(StemFilter):
    def clear(self):
        self._stem = None
class Cache:
    def _evict(self): ...
def f(reader, cache):
    cache._evict()
    return reader._perdoc, whoosh3._lenfield("x"), getattr(reader, "_segment", None)
""", 5),
    "long": (long_functions, "def f():\n" + "    x = 1\n" * 60 + "def g():\n" + "    x = 1\n" * 59, 1),
    "unit": (unit_test_imports, """
import boto3
from moto import mock_aws
import importlib, pytest
def t():
    import moto.core
    importlib.import_module("boto3.session")
    pytest.importorskip("moto")
    import botocore_stub, json
""", 5),
}


@pytest.mark.parametrize("name", sorted(BREAKING))
def test_checker_finds_the_breaking_snippet(name):
    checker, source, expected = BREAKING[name]
    rel, tree = "chalicelib/search/snippet.py", ast.parse(source)
    if name == "whoosh":
        found = whoosh_private_uses(rel, tree, frozenset(own_private_attributes([(rel, tree)])))
    else:
        found = checker(rel, tree)
    assert len(found) == expected, found


def test_the_size_exemption_covers_only_the_ranking_internals():
    assert _size_exempt("chalicelib/search/recall.py", "_rank")
    assert _size_exempt("chalicelib/search/recall.py", "_rank.score")
    assert not _size_exempt("chalicelib/search/recall.py", "_ranked")
    assert not _size_exempt("chalicelib/search/index.py", "_rank")


def test_every_allow_listed_module_exists():
    """An allow-list entry for a module that does not exist would let a new file of that name
    bypass review."""
    missing = [m for m in (*RUN_TRANSACTION_CALLERS, *STORAGE_MODULES) if not (ROOT / m).is_file()]
    assert not missing, missing


_NOQA = re.compile(r"#\s*noqa(?::\s*[A-Z0-9]+(?:\s*,\s*[A-Z0-9]+)*)?(.*)$")
_TYPE_IGNORE = re.compile(r"#\s*type:\s*ignore(?:\[[^\]]*\])?(.*)$")


def _unexplained_suppressions(text: str) -> list[int]:
    """Line numbers of ``# noqa`` / ``# type: ignore`` comments with no reason after them."""
    return [n for n, line in enumerate(text.splitlines(), 1)
            for rx in (_NOQA, _TYPE_IGNORE) if (m := rx.search(line)) and not re.search(r"[A-Za-z]{3,}", m[1])]


def test_every_lint_suppression_gives_its_reason():
    bare = "x = 1  # " + "noqa: E501\ny = 2  # type: " + "ignore[attr-defined]\n"  # split: not a match here
    assert _unexplained_suppressions(bare) == [1, 2]
    assert _unexplained_suppressions("x = 1  # noqa: BLE001 - a cache never fails a write\n") == []
    found = [f"{path.relative_to(ROOT)}:{n}" for top in ("app.py", "chalicelib", "infra", "bench", "tests")
             for path in ([ROOT / top] if top.endswith(".py") else sorted((ROOT / top).rglob("*.py")))
             if "node_modules" not in path.parts for n in _unexplained_suppressions(path.read_text())]
    assert not found, found


PATTERNS_MODULE = "chalicelib/patterns.py"
REGEX_ENGINES = ("re", "re2", "regex", "sre_compile", "sre_parse", "fnmatch")


def _regex_imports(rel: str, tree: ast.AST) -> list[Violation]:
    """Imports of a regular-expression engine, and Whoosh tokenizers given a pattern's text (Whoosh
    compiles it with ``re``): every pattern is made by ``chalicelib/patterns.py``."""
    out: list[Violation] = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        out += [(rel, node.lineno, f"imports {n}") for n in names if n.split(".")[0] in REGEX_ENGINES]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "RegexTokenizer"
                and node.args and isinstance(node.args[0], (ast.Constant, ast.JoinedStr))):
            out.append((rel, node.lineno, "RegexTokenizer given a pattern's text"))
    return out


def test_only_patterns_compiles_regular_expressions():
    """Every regular expression of the service is made by ``chalicelib/patterns.py`` (RE2, or a
    stdlib pattern that cannot backtrack), which the linear-time tests walk."""
    bad = "import re\nfrom re import Pattern\nimport regex as rx\nRegexTokenizer(r'[a-z]+')\n"
    assert [v[2] for v in _regex_imports("x.py", ast.parse(bad))] == [
        "imports re", "imports re", "imports regex", "RegexTokenizer given a pattern's text"]
    found = [v for rel in _production_files() if rel != PATTERNS_MODULE for v in _regex_imports(rel, _parse(rel))]
    assert not found, [f"{p}:{n}: {w}" for p, n, w in found]
