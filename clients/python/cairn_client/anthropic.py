"""Anthropic's memory tool (``memory_20250818``) kept in Cairn: ``CairnMemoryTool`` (sync) and
``AsyncCairnMemoryTool`` implement the ``anthropic`` SDK's ``BetaAbstractMemoryTool`` /
``BetaAsyncAbstractMemoryTool``, so ``client.beta.messages.tool_runner(tools=[tool], ...)`` runs
the model's ``view``, ``create``, ``str_replace``, ``insert``, ``delete`` and ``rename`` calls on
a Cairn scope. Install with ``pip install 'cairn-client[anthropic]'``.

Mapping: every file and directory under ``/memories`` is one structured memory of the tool's scope
(``cairn_client._named``), named ``<prefix>_<slug>_<hash>`` from its path below ``/memories``. A
file's content is ``<!-- cairn memory file "<path>" -->``, a newline, the file's text exactly as
written, a newline and ``<!-- end of file -->``; a directory's is ``<!-- cairn memory directory
"<path>" -->``. Each change is a save or a delete of those records: an upsert keeps the memory's
id and its history, and the audit trail names the token that made it.

Results and error texts are the SDK's local-filesystem reference implementation's
(``BetaLocalFilesystemMemoryTool``), with these differences:

- a directory's size in a listing is always ``4K``;
- a file holds at most ``MAX_FILE_CHARS`` characters, without control characters other than TAB,
  LF and CR (the service's text rule): a longer or binary text is refused with a ``ToolError``;
- where the reference fails with a raw OS error (a path below a file, a directory moved into
  itself), this tool says so in a ``ToolError``; a rename whose source is missing writes nothing;
- a listing, a directory's delete or rename, and ``clear_all_memory`` read the scope's newest 200
  records (the service's listing has no cursor): past that they refuse with a ``ToolError`` rather
  than act on part of the tree. Reads and writes of one path are exact at any size.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from . import _named
from ._async_client import AsyncCairn
from ._named import Delete, Get, List, Plan, Save, Scope
from ._sync_client import Cairn
from .errors import CairnConnectionError, CairnError

__all__ = ["MAX_FILE_CHARS", "AsyncCairnMemoryTool", "CairnMemoryTool"]

ROOT = "/memories"
LINE_NUMBER_WIDTH = 6  # the reference's width: len(str(999999))
DIR_SIZE = "4K"
_FOOTER = "<!-- end of file -->"
_HEADER_RE = re.compile(r'<!-- cairn memory (file|directory) ("(?:[^"\\]|\\.)*") -->')
# the header of a file at the longest path the service's content limit leaves room for
MAX_FILE_CHARS = _named.MAX_CONTENT - 2048
T = TypeVar("T")


@dataclass(frozen=True)
class Node:
    """A file (``text`` set) or a directory (``text`` ``None``) at ``rel``, its path below
    ``/memories`` (``a/b.md``; never ``""``, the root, which is not stored)."""

    rel: str
    text: str | None

    @property
    def is_file(self) -> bool:
        return self.text is not None


def resolve(path: str) -> str:
    """The path below ``/memories`` that ``path`` names, as the reference resolves it (``.``,
    ``..`` and repeated slashes folded; ``""`` for the root). Raises ``ToolError`` with the
    reference's texts for a path outside ``/memories``."""
    if not path.startswith(ROOT):
        raise ToolError(f"Path must start with /memories, got: {path}")
    stack = ["memories"]  # components below the reference's base directory
    for part in path[len(ROOT):].lstrip("/").split("/"):
        if part in ("", "."):
            continue
        if part != "..":
            stack.append(part)
        elif stack:
            stack.pop()
        else:
            raise ToolError(f"Path {path} would escape /memories directory")
    if not stack or stack[0] != "memories":
        raise ToolError(f"Path {path} would escape /memories directory")
    return "/".join(stack[1:])


def _display(rel: str) -> str:
    return f"{ROOT}/{rel}" if rel else ROOT


def _parent_chain(rel: str) -> list[str]:
    """The ancestors of ``rel`` below the root, outermost first (``a/b/c`` -> ``a``, ``a/b``)."""
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def format_size(n: int) -> str:
    """A size as the reference shows it (``0B``, ``512B``, ``1.5K``, ``4K``, ``2.0M``)."""
    if n == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((n.bit_length() - 1) // 10, len(units) - 1)
    size = n / (1024**i)
    return f"{int(size)}{units[i]}" if size == int(size) else f"{size:.1f}{units[i]}"


def numbered(lines: list[str], start: int) -> str:
    """Lines numbered from ``start`` as the reference numbers them (right-aligned, a TAB)."""
    return "\n".join(f"{str(i + start).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines))


class Files:
    """The memory directory as records of one scope: every command is a plan (``_named``)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = _named.check_prefix(prefix)

    # --- records -------------------------------------------------------------------------------

    def name(self, rel: str) -> str:
        return _named.record_name(self.prefix, rel)

    def content(self, node: Node) -> str:
        path = json.dumps(_display(node.rel))
        if node.text is None:
            return f"<!-- cairn memory directory {path} -->"
        return f"<!-- cairn memory file {path} -->\n{node.text}\n{_FOOTER}"

    def save(self, node: Node) -> Save:
        kind = "file" if node.is_file else "directory"
        description = _named.description_line(f"Memory {kind} {_display(node.rel)}")
        return Save(self.name(node.rel), self.content(node), description)

    def parse(self, row: dict[str, Any]) -> Node | None:
        """The node a row holds, or ``None`` when it is not one of this tool's records."""
        name, content = row.get("name"), row.get("content")
        if not isinstance(name, str) or not name.startswith(self.prefix + "_") or not isinstance(content, str):
            return None
        head, _, rest = content.partition("\n")
        m = _HEADER_RE.fullmatch(head)
        if m is None:
            return None
        path = json.loads(m.group(2))
        if not isinstance(path, str) or not path.startswith(ROOT + "/") or self.name(path[len(ROOT) + 1:]) != name:
            return None
        rel = path[len(ROOT) + 1:]
        if m.group(1) == "directory":
            return Node(rel, None)
        if not rest.endswith("\n" + _FOOTER):
            return None
        return Node(rel, rest[: -len(_FOOTER) - 1])

    def lookup(self, rel: str) -> Plan[Node | None]:
        row = yield Get(self.name(rel))
        return self.parse(row) if row is not None else None

    def snapshot(self, what: str) -> Plan[dict[str, Node]]:
        """Every node of the tree, implicit directories (ancestors of a file) included."""
        listing = yield List()
        if listing.full:
            raise ToolError(f"Cannot {what}: the memory store holds more than {_named.LIST_CAP} records, and Cairn "
                            f"lists only the newest {_named.LIST_CAP}. Work on single files, or give the tool a "
                            "scope of its own.")
        nodes: dict[str, Node] = {}
        for row in listing.rows:
            node = self.parse(row)
            if node is not None:
                nodes[node.rel] = node
        for rel in list(nodes):
            for anc in _parent_chain(rel):
                nodes.setdefault(anc, Node(anc, None))
        return nodes

    def missing_parents(self, rel: str, path: str) -> Plan[list[str]]:
        """The ancestors of ``rel`` that do not exist yet; ``ToolError`` when one is a file."""
        missing = []
        for anc in _parent_chain(rel):
            node = yield from self.lookup(anc)
            if node is not None and node.is_file:
                raise ToolError(f"Cannot write {path}: {_display(anc)} is a file, not a directory")
            if node is None:
                missing.append(anc)
        return missing

    def existing(self, rel: str, path: str) -> Plan[Node]:
        """The node at ``rel``; ``ToolError`` as the reference words it when it is absent."""
        node = yield from self.lookup(rel) if rel else _root()
        if node is None:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return node

    def existing_file(self, rel: str, path: str) -> Plan[Node]:
        node = yield from self.existing(rel, path)
        if not node.is_file:
            raise ToolError(f"The path {path} is not a file.")
        return node

    def write(self, node: Node, path: str) -> Save:
        if node.text is not None and len(node.text) > MAX_FILE_CHARS:
            raise ToolError(f"File {path} would hold {len(node.text)} characters; a memory file holds at most "
                            f"{MAX_FILE_CHARS}.")
        return self.save(node)

    # --- the commands ---------------------------------------------------------------------------

    def view(self, path: str, view_range: list[int] | None) -> Plan[str]:
        rel = resolve(path)
        node = yield from self.existing(rel, path)
        if node.text is None:
            tree = yield from self.snapshot(f"list {path}")
            return listing(tree, rel, path)
        lines = node.text.split("\n")
        start = 1
        if view_range and len(view_range) == 2:
            first = max(1, view_range[0]) - 1
            last = len(lines) if view_range[1] == -1 else view_range[1]
            lines, start = lines[first:last], first + 1
        return f"Here's the content of {path} with line numbers:\n" + numbered(lines, start)

    def create(self, path: str, file_text: str) -> Plan[str]:
        rel = resolve(path)
        node = yield from self.lookup(rel) if rel else _root()
        if node is not None:
            raise ToolError(f"File {path} already exists")
        parents = yield from self.missing_parents(rel, path)
        yield self.write(Node(rel, file_text), path)
        for anc in parents:  # after the file: a failure here leaves its directory implicit, never wrong
            yield self.save(Node(anc, None))
        return f"File created successfully at: {path}"

    def str_replace(self, path: str, old_str: str, new_str: str) -> Plan[str]:
        rel = resolve(path)
        node = yield from self.existing_file(rel, path)
        content = node.text or ""
        count = content.count(old_str)
        if count == 0:
            raise ToolError(f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.")
        if count > 1:
            lines, start = [], 0
            while (pos := content.find(old_str, start)) != -1:
                lines.append(content[:pos].count("\n") + 1)
                start = pos + 1
            raise ToolError(f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
                            f"{', '.join(map(str, lines))}. Please ensure it is unique")
        changed = content[: content.find(old_str)].count("\n")
        new_content = content.replace(old_str, new_str)
        yield self.write(Node(rel, new_content), path)
        new_lines = new_content.split("\n")
        first, last = max(0, changed - 2), min(len(new_lines), changed + 3)
        return ("The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
                + numbered(new_lines[first:last], first + 1))

    def insert(self, path: str, insert_line: int, insert_text: str) -> Plan[str]:
        rel = resolve(path)
        node = yield from self.existing_file(rel, path)
        lines = (node.text or "").split("\n")
        if lines[-1] == "":
            lines.pop()
        if insert_line < 0 or insert_line > len(lines):
            raise ToolError(f"Invalid `insert_line` parameter: {insert_line}. "
                            f"It should be within the range [0, {len(lines)}].")
        lines.insert(insert_line, insert_text.rstrip("\n"))
        new_content = "\n".join(lines)
        if not new_content.endswith("\n"):
            new_content += "\n"
        yield self.write(Node(rel, new_content), path)
        return f"The file {path} has been edited."

    def delete(self, path: str) -> Plan[str]:
        rel = resolve(path)
        if not rel:
            raise ToolError("Cannot delete the /memories directory itself")
        node = yield from self.lookup(rel)
        if node is None:
            raise ToolError(f"The path {path} does not exist")
        doomed = [rel]
        if not node.is_file:
            tree = yield from self.snapshot(f"delete {path}")
            doomed = [*sorted((r for r in tree if r.startswith(rel + "/")), reverse=True), rel]
        for r in doomed:  # innermost first, the directory itself last
            yield Delete(self.name(r))
        return f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str) -> Plan[str]:
        old, new = resolve(old_path), resolve(new_path)
        if not old:
            raise ToolError("Cannot rename the /memories directory itself")
        target = yield from self.lookup(new) if new else _root()
        if target is not None:
            raise ToolError(f"The destination {new_path} already exists")
        node = yield from self.lookup(old)
        if node is None:
            raise ToolError(f"The path {old_path} does not exist")
        if new.startswith(old + "/"):
            raise ToolError(f"Cannot move {old_path} into itself ({new_path})")
        parents = yield from self.missing_parents(new, new_path)
        moved = [node]
        if not node.is_file:
            tree = yield from self.snapshot(f"rename {old_path}")
            moved = [node] + [n for r, n in sorted(tree.items()) if r.startswith(old + "/")]
        # every copy is written before any original is deleted: a failure half-way loses nothing
        for n in moved:
            yield self.write(Node(new + n.rel[len(old):], n.text), new_path)
        for anc in parents:
            yield self.save(Node(anc, None))
        for n in reversed(moved):
            yield Delete(self.name(n.rel))
        return f"Successfully renamed {old_path} to {new_path}"

    def clear(self) -> Plan[str]:
        tree = yield from self.snapshot("clear the memory directory")
        for rel in sorted(tree, reverse=True):
            yield Delete(self.name(rel))
        return "All memory cleared"


def _root() -> Plan[Node]:
    """The root directory, which always exists and is never stored."""
    return Node("", None)
    yield  # a plan that makes no call


def listing(tree: dict[str, Node], rel: str, path: str) -> str:
    """A directory listing in the reference's shape: entries up to two levels below ``rel``,
    sorted by name at each level, hidden names (``.``) left out, directories ending in ``/``."""
    children: dict[str, list[Node]] = {}
    for node in tree.values():
        parent, _, _ = node.rel.rpartition("/")
        children.setdefault(parent, []).append(node)
    items: list[str] = []

    def collect(dir_rel: str, shown: str, depth: int) -> None:
        for child in sorted(children.get(dir_rel, []), key=lambda n: n.rel.rpartition("/")[2]):
            base = child.rel.rpartition("/")[2]
            if base.startswith("."):
                continue
            item = f"{shown}/{base}" if shown else base
            if child.is_file:
                items.append(f"{format_size(len((child.text or '').encode('utf-8', 'surrogatepass')))}\t{path}/{item}")
            else:
                items.append(f"{DIR_SIZE}\t{path}/{item}/")
                if depth < 2:
                    collect(child.rel, item, depth + 1)

    collect(rel, "", 1)
    header = f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
    return "\n".join([header, f"{DIR_SIZE}\t{path}", *items])


def _tool_error(err: CairnError | CairnConnectionError) -> ToolError:
    return ToolError(f"The memory store (Cairn) failed: {err}")


class CairnMemoryTool(BetaAbstractMemoryTool):
    """The memory tool on a ``Cairn`` client (``Cairn()`` from ``$CAIRN_URL``/``$CAIRN_TOKEN``
    when none is given), kept in the structured-memory ``scope`` (``user``: the token's own
    user; ``global``; or ``workstream`` with ``scope_id``), its records named ``<prefix>_...``
    (``prefix``: 1-16 of ``[a-z0-9]``, so several memory directories can share a scope). Every
    command returns the reference implementation's text or raises ``ToolError`` (the runner
    hands it to the model as an error result); a Cairn failure is a ``ToolError`` too."""

    def __init__(self, cairn: Cairn | None = None, *, scope: str = "user", scope_id: str | None = None,
                 prefix: str = "memory", cache_control: BetaCacheControlEphemeralParam | None = None) -> None:
        super().__init__(cache_control=cache_control)
        self.files = Files(prefix)
        self.scope = Scope(scope, scope_id)
        self.cairn = cairn if cairn is not None else Cairn()

    def _run(self, plan: Plan[T]) -> T:
        try:
            return _named.run(plan, self.cairn, self.scope)
        except (CairnError, CairnConnectionError) as err:
            raise _tool_error(err) from err

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._run(self.files.view(command.path, command.view_range))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._run(self.files.create(command.path, command.file_text))

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._run(self.files.str_replace(command.path, command.old_str, command.new_str))

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._run(self.files.insert(command.path, command.insert_line, command.insert_text))

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._run(self.files.delete(command.path))

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._run(self.files.rename(command.old_path, command.new_path))

    def clear_all_memory(self) -> str:
        """Delete every file and directory of this tool (its records stay in their history)."""
        return self._run(self.files.clear())


class AsyncCairnMemoryTool(BetaAsyncAbstractMemoryTool):
    """``CairnMemoryTool`` on an ``AsyncCairn`` client, for the SDK's async tool runner."""

    def __init__(self, cairn: AsyncCairn | None = None, *, scope: str = "user", scope_id: str | None = None,
                 prefix: str = "memory", cache_control: BetaCacheControlEphemeralParam | None = None) -> None:
        super().__init__(cache_control=cache_control)
        self.files = Files(prefix)
        self.scope = Scope(scope, scope_id)
        self.cairn = cairn if cairn is not None else AsyncCairn()

    async def _run(self, plan: Plan[T]) -> T:
        try:
            return await _named.arun(plan, self.cairn, self.scope)
        except (CairnError, CairnConnectionError) as err:
            raise _tool_error(err) from err

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await self._run(self.files.view(command.path, command.view_range))

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await self._run(self.files.create(command.path, command.file_text))

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await self._run(self.files.str_replace(command.path, command.old_str, command.new_str))

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await self._run(self.files.insert(command.path, command.insert_line, command.insert_text))

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await self._run(self.files.delete(command.path))

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await self._run(self.files.rename(command.old_path, command.new_path))

    async def clear_all_memory(self) -> str:
        """Delete every file and directory of this tool (its records stay in their history)."""
        return await self._run(self.files.clear())
