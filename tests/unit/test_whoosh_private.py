"""Whoosh's private API is reached through one module, pinned to the Whoosh version it was
written against: another version fails at import, loudly, instead of ranking wrongly."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import whoosh

from chalicelib.search import whoosh_private

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_whoosh_is_the_pinned_one():
    pins = [line for line in (ROOT / "requirements.txt").read_text().splitlines()
            if line.startswith("whoosh-reloaded==")]
    assert pins == ["whoosh-reloaded==" + ".".join(map(str, whoosh_private.WRITTEN_FOR))]
    whoosh_private.check_version(whoosh.__version__)
    whoosh_private.check_version("2.7.5")


@pytest.mark.parametrize("found", ["2.7.4", "2.7.6", "3.0.0", (2, 7), (2, 7, 5, 1)])
def test_another_version_is_refused(found):
    with pytest.raises(whoosh_private.WhooshVersionError, match=r"written against Whoosh 2\.7\.5"):
        whoosh_private.check_version(found)


def _import_a_copy() -> None:
    """Run the module's source as a module of another name: a reload of the real one would give
    its classes new identities, and an index schema built before it would no longer pickle."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("whoosh_private_copy", whoosh_private.__file__)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_the_module_refuses_to_import_under_another_version(monkeypatch):
    monkeypatch.setattr(whoosh, "__version__", (2, 7, 4))
    with pytest.raises(ImportError, match=r"found 2\.7\.4") as raised:  # the copy defines its own class
        _import_a_copy()
    assert type(raised.value).__name__ == "WhooshVersionError"
    monkeypatch.undo()
    _import_a_copy()  # the pinned version imports


def _private_whoosh_uses(path: Path) -> list[str]:
    """Imports of ``whoosh.codec`` (the W3 codec's internals) and ``_private`` attributes (or an
    instance's ``__dict__``) read off objects other than ``self``/``cls`` (our own classes keep
    theirs on ``self``), and the ``deleted_docs_set`` cache."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module.startswith("whoosh.codec") or any(a.name.startswith("_") for a in node.names)):
            out.append(f"{path.name}:{node.lineno} from {node.module}")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not (
                isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")) and (
                node.attr == "__dict__" or not node.attr.endswith("__")):  # __name__ and the like are public
            out.append(f"{path.name}:{node.lineno} .{node.attr}")
        elif isinstance(node, ast.Constant) and node.value == "deleted_docs_set":
            out.append(f"{path.name}:{node.lineno} deleted_docs_set")
    return out


def test_no_other_search_module_touches_whoosh_private_names():
    found = [use for path in sorted((ROOT / "chalicelib" / "search").glob("*.py"))
             if path.name != "whoosh_private.py" for use in _private_whoosh_uses(path)]
    assert found == []
    assert _private_whoosh_uses(ROOT / "chalicelib" / "search" / "whoosh_private.py")  # the checker sees them


def test_whoosh_is_imported_by_the_search_package_only():
    """So the scan above covers every module that could reach Whoosh's internals."""
    importers = []
    for path in sorted((ROOT / "chalicelib").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "whoosh" or n.startswith("whoosh.") for n in names):
                importers.append(path.relative_to(ROOT).parent.as_posix())
    assert importers and set(importers) == {"chalicelib/search"}
