"""The index's document format: a record decodes back exactly from its compact record value and
columns (through block boundaries, merges and purges); a damaged record value is skipped with the
``damaged`` metric; a directory or snapshot of another format is never opened (rebuilt, counted,
deleted with the next snapshot)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tests.api.lanes import word

NOW = 1_900_000_000_000


def _emf(out: str, event: str) -> list[dict]:
    return [d for d in (json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"'))
            if d["Event"] == event]


def _records():
    """Records with every field set, with every default, structured ones, and edge values."""
    from chalicelib.core.records import MAX_SAFE_INT, Memory, Source
    full = Memory(id="fp0123456789abcdef", text="Ana moved to Lisbon \u00e9t\u00e9 \u6771\u4eac\u90fd",
                  entities=["ana", "lisbon"], tags=["travel", "home"], confidence="inferred",
                  corroboration=MAX_SAFE_INT, pinned=True,
                  source=Source(session_id="s1", entry_id="e1", agent="claude"), created_at=1, updated_at=NOW,
                  invalid_at=NOW + 1, superseded_by="fpfeedfacefeedface", revision=7, purged_at=None)
    structured = Memory(id="3f2a9c1e-0000-4000-8000-000000000001", text="Deploys go through the staging queue",
                        created_at=NOW - 5, updated_at=NOW - 5, name="deploy_flow", description="how deploys run",
                        type="procedure", meta={"scope": "global", "n": [1, 2.5, None, {"deep": True}], "": ""},
                        source=Source(agent="a"))
    defaults = Memory(id="fp0000000000000001", text="plain", created_at=0, updated_at=0)
    purged = Memory(id="fp0000000000000002", text="", created_at=3, updated_at=9, purged_at=9, invalid_at=9,
                    revision=2)
    zeros = Memory(id="ent_00ff", text="x", created_at=5, updated_at=4, name="", description="", type="", meta={},
                   corroboration=0, pinned=False, entities=[], tags=[])
    many = [Memory(id=f"fp{i:016x}", text=f"filler memory {i} " + "word " * (i % 40), entities=[f"p{i % 7}"],
                   created_at=i, updated_at=i + (i % 2), corroboration=i % 3, pinned=i % 5 == 0) for i in range(600)]
    return [full, structured, defaults, purged, zeros, *many]


def _read_all(reader) -> dict:
    from chalicelib.search.schema import read_record
    out = {}
    for leaf, _off in reader.leaf_readers():
        for d in range(leaf.doc_count_all()):
            if not leaf.is_deleted(d):
                rec = read_record(leaf, d)
                out[rec.id] = rec
    return out


def test_records_decode_back_exactly_through_blocks_merges_and_purges(tmp_path):
    from whoosh import index as whoosh_index

    from chalicelib.core.store import Clock
    from chalicelib.search import index
    from chalicelib.search.schema import decode_record, encode_record, schema
    from chalicelib.search.whoosh_private import BLOCK_BYTES
    recs = _records()
    assert sum(len(encode_record(r)) for r in recs) > 3 * BLOCK_BYTES  # several blocks per segment
    for r in recs[:5]:  # the value alone, columns beside it
        assert decode_record(encode_record(r), id=r.id, updated_at=r.updated_at, pinned=int(r.pinned),
                             corroboration=r.corroboration) == r
    assert b"updated_at" not in encode_record(recs[0]) and b'"id"' not in encode_record(recs[0])
    assert encode_record(recs[2]) == b'{"text":"plain"}'  # defaults and columns left out

    # in memory (as_of), one segment
    assert _read_all(index.transient_index(recs).reader()) == {r.id: r for r in recs}

    # on disk: one commit per record for the first 25 (tiered merges rewrite the segments and
    # copy the record column), the rest in one batch, each replaced one found by id and deleted;
    # a purge (a tombstone under another id) is never applied: the cache rebuilds instead
    recs = [r for r in recs if r.purged_at is None]
    path = str(tmp_path / "ix")
    os.makedirs(path)
    entry = index.BankIndex("o", "b", "inc", path, whoosh_index.create_in(path, schema(), indexname=index.INDEX_NAME),
                            clock=Clock((0,)))
    for k, r in enumerate(recs[:25], start=1):
        entry.apply([(k, r)])
    entry.apply([(k, r) for k, r in enumerate(recs[25:], start=26)])
    replaced = recs[7].model_copy(update={"text": "replaced", "revision": recs[7].revision + 1})
    entry.apply([(len(recs) + 1, replaced)])
    tomb = replaced.model_copy(update={"id": "fp00000000000000aa", "text": "", "purged_at": NOW, "invalid_at": NOW})
    with pytest.raises(index.StaleHistory):
        entry.apply([(len(recs) + 2, tomb)])
    assert entry.clock == Clock((len(recs) + 1,))
    want = {r.id: r for r in recs} | {replaced.id: replaced}
    assert entry.reader().doc_count() == len(want)
    assert _read_all(entry.reader()) == want
    reopened = whoosh_index.open_dir(path, indexname=index.INDEX_NAME)
    with reopened.reader() as reader:
        assert _read_all(reader) == want


def _damaged_index(tmp_path, value: bytes):
    """A one-segment index of two good records and one whose record value is ``value``."""
    from whoosh import index as whoosh_index

    from chalicelib.core.records import Memory
    from chalicelib.search import index
    from chalicelib.search.schema import schema, to_document
    path = str(tmp_path / "d")
    os.makedirs(path, exist_ok=True)
    ix = whoosh_index.create_in(path, schema(), indexname=index.INDEX_NAME)
    w = ix.writer()
    for i, text in enumerate(["damson jam recipe", "damson tree pruning", "damson wine"]):
        doc = to_document(Memory(id=f"fp{i:016x}", text=text, created_at=NOW, updated_at=NOW - i))
        if i == 1:
            doc["record"] = value
        w.add_document(**doc)
    w.commit()
    return ix


@pytest.mark.parametrize("column", ["id", "updated_at", "pinned", "corroboration"])
def test_a_segment_without_a_record_column_ranks_but_returns_nothing(tmp_path, capsys, column):
    """Ranking reads a document's id and numbers from the segment's arrays; a segment that lacks
    one of those columns (a damaged snapshot) has its records refused, never filled with zeros."""
    from whoosh import index as whoosh_index

    from chalicelib.core.records import Memory
    from chalicelib.search import index
    from chalicelib.search.recall import _rank
    from chalicelib.search.schema import schema, to_document
    from chalicelib.tuning import MemoryTuning
    path = str(tmp_path / "c")
    os.makedirs(path)
    ix = whoosh_index.create_in(path, schema(), indexname=index.INDEX_NAME)
    w = ix.writer()
    for i, text in enumerate(["quince jelly", "quince tree"]):
        doc = to_document(Memory(id=f"fp{i:016x}", text=text, created_at=NOW, updated_at=NOW - i, corroboration=2))
        del doc[column]
        w.add_document(**doc)
    w.commit()
    capsys.readouterr()
    with ix.reader() as reader:
        hits, candidates = _rank([(reader, {}, "b")], "quince", limit=10, tag=None, include_superseded=False,
                                 tuning=MemoryTuning(), filter=None, now=NOW)
    assert (hits, candidates) == ([], 2)
    lines = _emf(capsys.readouterr().out, "damaged")
    assert len(lines) == 2 and all(x["kind"] == "memory" for x in lines)


@pytest.mark.parametrize("value", [b"not json", b"\xff\xfe\x00", b"[1, 2]", b'{"text": 5}',
                                   b'{"text": "x", "id": "fp_other"}', b'{"text": "x", "bogus": 1}'],
                         ids=["not_json", "not_utf8", "not_an_object", "wrong_type", "column_field", "unknown_field"])
def test_a_damaged_record_value_is_skipped_with_the_damaged_metric(tmp_path, capsys, value):
    from chalicelib.search.recall import _rank
    from chalicelib.tuning import MemoryTuning
    ix = _damaged_index(tmp_path, value)
    capsys.readouterr()
    with ix.reader() as reader:
        leaves = [(leaf, {}, "b") for leaf, _off in reader.leaf_readers()]
        hits, candidates = _rank(leaves, "damson", limit=10, tag=None, include_superseded=False,
                                 tuning=MemoryTuning(), filter=None, now=NOW)
    assert candidates == 3
    assert sorted(h.memory.text for h in hits) == ["damson jam recipe", "damson wine"]
    (line,) = _emf(capsys.readouterr().out, "damaged")
    assert line["DamagedRecords"] == 1 and line["kind"] == "memory"
    assert "damson" not in json.dumps(line)


def test_a_truncated_record_block_is_a_damaged_document(tmp_path, capsys, monkeypatch):
    """A record block that does not inflate (a damaged snapshot or directory) is skipped with the
    metric, whatever the column reader raises."""
    import zlib

    from chalicelib.search import whoosh_private
    from chalicelib.search.recall import stored_record
    from chalicelib.search.scorer import SegmentData
    ix = _damaged_index(tmp_path, b'{"text":"damson tree pruning"}')

    def broken(data, *a):
        raise zlib.error("Error -3 while decompressing data: invalid block type")

    monkeypatch.setattr(whoosh_private.zlib, "decompress", broken)
    capsys.readouterr()
    with ix.reader() as reader:
        assert stored_record(reader, 0, SegmentData(reader)) is None  # one segment: the reader is the leaf
    (line,) = _emf(capsys.readouterr().out, "damaged")
    assert line["kind"] == "index_document" and line["reason"] == "error"


def _save(bank: str, text: str) -> None:
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    service.save_memory("o", bank, SaveRequest(text=text), actor="t")


def test_a_directory_of_another_format_is_rebuilt_not_opened(aws, tmp_path):
    from chalicelib.core import store
    from chalicelib.search import index
    from chalicelib.search.recall import recall
    root = str(tmp_path / "root")
    with index.using(index.IndexCache(root)):
        _save("f", "figs grow in the format test")
        assert [h.memory.text for h in recall("o", ["f"], "figs", limit=5, now=NOW).hits] == [
            "figs grow in the format test"]
    # the same root, a new process's cache: the directory is reused while its format is current
    again = index.IndexCache(root)
    head = store.get_bank_head("o", "f")
    with again.lock("o", "f"):
        entry = again.fresh("o", "f", head)
    assert again.counters["rebuilds"] == 0
    meta_path = f"{entry.path}/{index.META_FILE}"
    with open(meta_path) as fh:
        meta = json.load(fh)
    assert meta["format"] == index.FORMAT
    meta.pop("format")  # as a directory written before formats were named
    with open(meta_path, "w") as fh:
        json.dump(meta, fh)
    third = index.IndexCache(root)
    with index.using(third):
        assert [h.memory.text for h in recall("o", ["f"], "figs", limit=5, now=NOW).hits] == [
            "figs grow in the format test"]
    assert third.counters["rebuilds"] == 1


def test_snapshots_of_another_format_are_never_loaded_and_go_with_the_next_snapshot(aws, tmp_path, capsys):
    from chalicelib.search import index
    from chalicelib.search.recall import recall, snapshot_banks
    from chalicelib.storage import blobs
    with index.using(index.IndexCache(str(tmp_path / "w"))):
        for i in range(3):
            _save("s", f"snapshot format memory {word(i)} about limes")
    prefix = index.snapshot_prefix("o", "s")
    blobs.put_bytes(prefix + "3.tar.gz", b"a snapshot of the first format", "application/gzip")
    blobs.put_bytes(prefix + "2.v1.tar.gz", b"another", "application/gzip")
    capsys.readouterr()
    cold = index.IndexCache(str(tmp_path / "cold"))
    with index.using(cold):
        got = recall("o", ["s"], "limes", limit=5, now=NOW)
    assert len(got.hits) == 3
    assert cold.counters["snapshot_loads"] == 0 and cold.counters["rebuilds"] == 1
    out = capsys.readouterr().out
    (line,) = [d for d in _emf(out, "index") if "SnapshotsOfOtherFormat" in d]
    assert line["SnapshotsOfOtherFormat"] == 2 and line["format"] == index.FORMAT
    assert not _emf(out, "damaged")  # never downloaded, so never reported as damaged
    assert index.newest_snapshot_seq("o", "s") == -1  # the schedule writes one of this format
    with index.using(cold):
        assert snapshot_banks(1, org_id="o") == [index.snapshot_key("o", "s", 3)]
    assert [o["Key"] for o in blobs.list_objects(prefix)] == [index.snapshot_key("o", "s", 3)]
    loaded = index.IndexCache(str(tmp_path / "loaded"))
    with index.using(loaded):
        again = recall("o", ["s"], "limes", limit=5, now=NOW)
    assert loaded.counters["snapshot_loads"] == 1 and loaded.counters["rebuilds"] == 0
    assert [(h.memory, h.score) for h in again.hits] == [(h.memory, h.score) for h in got.hits]


def test_a_replaced_record_is_found_by_id_through_the_writers_reader_too(tmp_path):
    """``apply`` finds the document a record replaces through the id column's per-segment lookup,
    in the open reader or, when that reader shows another commit, in the writer's own: either
    way one document per id remains."""
    from whoosh import index as whoosh_index

    from chalicelib.core.records import Memory
    from chalicelib.core.store import Clock
    from chalicelib.search import index
    from chalicelib.search.schema import schema
    path = str(tmp_path / "ix")
    os.makedirs(path)
    entry = index.BankIndex("o", "b", "inc", path, whoosh_index.create_in(path, schema(), indexname=index.INDEX_NAME),
                            clock=Clock((0,)))
    recs = [Memory(id=f"fp{i:016x}", text=f"quince {i}", created_at=i, updated_at=i) for i in range(30)]
    for k, r in enumerate(recs, start=1):  # thirty commits: tiered merges along the way
        entry.apply([(k, r)])
    entry.apply([(31, recs[3].model_copy(update={"text": "quince edited", "updated_at": 99}))])
    entry.reader()
    entry._reader_gen = -5  # as if the open reader showed an older commit
    entry.apply([(32, recs[17].model_copy(update={"text": "quince edited again", "updated_at": 100}))])
    got = _read_all(entry.reader())
    assert entry.reader().doc_count() == len(got) == 30
    assert got[recs[3].id].text == "quince edited" and got[recs[17].id].text == "quince edited again"


def test_two_transient_indexes_pool_their_postings_apart():
    """An ``as_of`` recall's in-memory index pools postings in ``<tmp>/<indexname>.tmp``: each has
    a name of its own, so two at once (threads of one process, or two processes) never delete
    each other's pool."""
    from chalicelib.core.records import Memory
    from chalicelib.search.index import transient_index

    recs = [Memory(id=f"m{i}", text=f"tea {i}", created_at=1, updated_at=1) for i in range(3)]
    a, b = transient_index(recs), transient_index(recs)
    assert a.indexname != b.indexname
    with a.searcher() as s:
        assert s.doc_count() == 3


def test_a_record_column_reads_any_order_across_more_blocks_than_it_keeps():
    """Blocks are inflated on demand and the least recently read dropped: every value reads back
    exactly, in order, shuffled and again, with far more blocks than the reader keeps."""
    import random

    from whoosh.filedb.filestore import RamStorage

    from chalicelib.search.whoosh_private import BLOCKS_KEPT, RecordColumn
    values = [f"value {i} ".encode() * (i % 9) for i in range(3000)]  # some empty
    st = RamStorage()
    f = st.create_file("c")
    w = RecordColumn(block_bytes=256).writer(f)
    for d, v in enumerate(values):
        if v:
            w.add(d, v)
    w.finish(len(values))
    length = f.tell()
    f.close()
    reader = RecordColumn().reader(st.open_file("c"), 0, length, len(values))
    assert sum(map(len, values)) // 256 > 4 * BLOCKS_KEPT  # the blocks far outnumber the kept ones
    order = list(range(len(values)))
    assert [reader[d] for d in order] == values
    random.Random(5).shuffle(order)
    assert [reader[d] for d in order] == [values[d] for d in order]
    assert [reader[d] for d in order] == [values[d] for d in order]
    assert reader[len(values)] == b""


def test_a_string_column_decodes_each_value_on_demand_like_a_list():
    """``StrColumn`` (the ids ranking reads) indexes, slices and iterates as the list of its
    decoded values would, and refuses a position outside ``0..len-1`` (a negative one too)."""
    from chalicelib.search.whoosh_private import StrColumn
    values = ["fp0001", "", "\u00e9t\u00e9", "\u6771\u4eac", "x" * 300]
    col = StrColumn("".join(values).encode(), [len(v.encode()) for v in values])
    assert len(col) == 5 and list(col) == values and col[1:4] == values[1:4]
    assert [col[i] for i in (4, 0, 4, 2)] == [values[i] for i in (4, 0, 4, 2)]
    for bad in (5, -1):
        with pytest.raises(IndexError):
            col[bad]


def test_a_string_column_finds_the_positions_of_a_whole_value_only():
    """``positions`` answers the positions holding exactly the value: never a find that spans two
    values or lies inside one, empty values and repeats included, as a list's search would."""
    from chalicelib.search.whoosh_private import StrColumn, positions
    values = ["ab", "c", "", "abc", "bc", "c", "\u00e9t\u00e9", "c"]
    col = StrColumn("".join(values).encode(), [len(v.encode()) for v in values])
    for v in ["c", "bc", "ab", "abc", "", "\u00e9t\u00e9", "t", "cab", "x"]:
        assert col.positions(v) == [i for i, x in enumerate(values) if x == v], v
        assert positions(list(values), v) == col.positions(v)


def test_a_term_looked_up_through_the_segments_term_keys_finds_the_same_postings(tmp_path):
    """``posting_arrays`` given the segment's ``term_keys`` returns what the term index's own
    lookup returns, for every term of the segment (each field) and for absent ones; a reader that
    is not a W3 segment reader has no term keys."""
    from whoosh import index as whoosh_index

    from chalicelib.core.store import Clock
    from chalicelib.search import index
    from chalicelib.search.schema import schema
    from chalicelib.search.whoosh_private import posting_arrays, term_keys
    path = str(tmp_path / "ix")
    os.makedirs(path)
    entry = index.BankIndex("o", "b", "inc", path, whoosh_index.create_in(path, schema(), indexname=index.INDEX_NAME),
                            clock=Clock((0,)))
    recs = [r for r in _records() if r.purged_at is None]  # a tombstone comes with a rebuild only
    entry.apply([(k, r) for k, r in enumerate(recs, start=1)])
    [(seg, _off)] = entry.reader().leaf_readers()
    keys = term_keys(seg)
    assert keys is not None and len(keys) > 50
    looked = [(f, t if isinstance(t, str) else t.decode()) for f, t in seg.all_terms()
              if f in ("text", "entities", "tags", "live")]
    assert len(looked) > 50
    for f, t in [*looked, ("text", "absent-term"), ("entities", "nobody"), ("tags", "")]:
        want, got = posting_arrays(seg, f, t), posting_arrays(seg, f, t, keys)
        assert want[0].tolist() == got[0].tolist() and want[1].tolist() == got[1].tolist(), (f, t)
    assert sum(len(posting_arrays(seg, f, t, keys)[0]) for f, t in looked) > len(looked)
    from whoosh.reading import EmptyReader
    assert term_keys(EmptyReader(schema())) is None


def test_inlined_postings_keep_their_frequencies_through_matchers_and_merges_in_a_few_bytes(tmp_path):
    """A short posting list inlined in its term info leaves its values out when they are the
    weights' frequencies, and its term info stays small (a frequency value pickles to about 50
    bytes); Whoosh's matcher still reads each posting's frequency, and a merge of such segments
    keeps every frequency."""
    from whoosh import index as whoosh_index
    from whoosh.codec.whoosh3 import W3TermInfo

    from chalicelib.core.records import Memory
    from chalicelib.core.store import Clock
    from chalicelib.search import index
    from chalicelib.search.schema import schema
    path = str(tmp_path / "ix")
    os.makedirs(path)
    entry = index.BankIndex("o", "b", "inc", path, whoosh_index.create_in(path, schema(), indexname=index.INDEX_NAME),
                            clock=Clock((0,)))
    texts = ["zebra zebra zebra quokka", "quokka lemur", "lemur lemur", "okapi"]
    for k, t in enumerate(texts, start=1):  # one segment per record: each term's list inlined
        entry.apply([(k, Memory(id=f"fp{k:016x}", text=t, entities=["ana"], created_at=k, updated_at=k))])

    def freqs(reader) -> dict:
        """``{(term, memory id): (frequency, weight)}`` through Whoosh's own matchers."""
        out: dict = {}
        for leaf, _off in reader.leaf_readers():
            ids = leaf.column_reader("id")
            for term in ("zebra", "quokka", "lemur", "okapi"):
                if ("text", term.encode()) not in leaf:
                    continue
                m = leaf.postings("text", term)
                while m.is_active():
                    out[(term, ids[m.id()])] = (m.value_as("frequency"), m.weight())
                    m.next()
        return out

    before = freqs(entry.reader())
    assert len(before) == 6
    assert before[("zebra", "fp0000000000000001")] == (3, 3.0)
    assert before[("lemur", "fp0000000000000003")] == (2, 2.0)
    for leaf, _off in entry.reader().leaf_readers():
        info = W3TermInfo.from_bytes(leaf._terms._tindex[leaf._terms._keycoder("text", b"quokka")]) \
            if ("text", b"quokka") in leaf else None
        if info is not None:
            assert info.is_inlined() and info.inlined_postings()[2] is None
            assert len(info.to_bytes()) < 40
    writer = entry.ix.writer()
    writer.commit(optimize=True)  # one segment from all of them
    entry.close_reader()
    assert len(entry.reader().leaf_readers()) == 1
    assert freqs(entry.reader()) == before


def test_merge_plan_merges_the_smallest_segments_geometrically_and_only_when_there_are_too_many():
    """Background merges: nothing below ``MERGE_MIN_DOCS`` or up to ``MERGE_MAX_SEGMENTS``
    segments; else the smallest segments, each at most ``MERGE_RATIO`` times those merged with
    it, at most ``MERGE_MAX_DOCS`` documents."""
    from chalicelib.search import index

    class Seg:
        def __init__(self, n):
            self.n = n

        def doc_count_all(self):
            return self.n

    def plan(sizes):
        return sorted(s.n for s in index.merge_plan([Seg(n) for n in sizes]))

    assert plan([10, 10, 10, 10, 10, 10]) == []  # a small bank: the write path's tiers only
    assert plan([23000, 23000, 2300, 2300]) == []  # few segments
    assert plan([23000, 23000, 23000, 23000, 2300, 2300, 230, 23, 23]) == [23, 23, 230, 2300, 2300]
    assert plan([23000, 23000, 23000, 23000, 5000, 1]) == []  # 5000 > 10 x 1: not rewritten for one
    assert plan([24000, 24000, 24000, 24000, 20000, 6000, 5000]) == [5000, 6000]  # at most MERGE_MAX_DOCS


def test_a_background_merge_leaves_fewer_segments_and_the_same_ranking(tmp_path):
    """A bank indexed in many small commits (as the import path commits) is merged by the
    cache's merge thread into fewer segments: every document stays, recall ranks the same."""
    from whoosh import index as whoosh_index

    from chalicelib.core.records import Memory
    from chalicelib.core.store import Clock
    from chalicelib.search import index
    from chalicelib.search.recall import _rank
    from chalicelib.tuning import MemoryTuning
    path = str(tmp_path / "ix")
    os.makedirs(path)
    entry = index.BankIndex("o", "b", "inc", path, whoosh_index.create_in(path, schema_(), indexname=index.INDEX_NAME),
                            clock=Clock((0,)))
    words = ["apple", "pear", "plum", "fig", "kiwi", "lime", "date", "yuzu"]
    recs = [Memory(id=f"fp{i:016x}", text=f"{words[i % 8]} {words[(i * 3) % 8]} note {i}", entities=[f"p{i % 5}"],
                   created_at=i, updated_at=i) for i in range(5400)]
    for start in range(0, len(recs), 600):  # nine segments: one short of the write path's tier merge
        entry.apply([(k, r) for k, r in enumerate(recs[start:start + 600], start=start + 1)])
    for start in range(5400, 5400 + 23 * 4, 23):  # a few import-sized commits on top
        more = [Memory(id=f"fq{i:016x}", text=f"plum kiwi later {i}", created_at=i, updated_at=i)
                for i in range(start, start + 23)]
        entry.apply([(k, r) for k, r in enumerate(more, start=start + 1)])
    cache = index.IndexCache(str(tmp_path / "root"))
    cache.entries[("o", "b")] = entry
    tuning = MemoryTuning()

    def ranked():
        leaves = [(leaf, entry.stats_cache, "b") for leaf, _off in entry.reader().leaf_readers()]
        hits, _n = _rank(leaves, "plum kiwi", limit=20, tag=None, include_superseded=False, tuning=tuning,
                         filter=None, now=10_000)
        return [(h.memory.id, round(h.score, 9)) for h in hits]

    before, segments = ranked(), len(entry.segments())
    assert segments > index.MERGE_MAX_SEGMENTS
    assert cache.schedule_merge(("o", "b"))
    cache.wait_merges()
    assert cache.counters["merges"] >= 1
    assert len(entry.segments()) < segments
    assert entry.reader().doc_count() == 5400 + 92
    assert ranked() == before


def schema_():
    from chalicelib.search.schema import schema
    return schema()


def test_the_cache_budget_holds_what_an_open_bank_keeps_resident(tmp_path):
    """An open bank's segment files are resident twice (mapped, and Whoosh's copy of each part),
    so the budget counts ``resident_bytes``: two banks whose files and arrays fit the budget once
    but not twice do not both stay."""
    from whoosh import index as whoosh_index

    from chalicelib.core.records import Memory
    from chalicelib.core.store import Clock
    from chalicelib.search import index
    cache = index.IndexCache(str(tmp_path / "root"), budget_mb=1000)
    for b in ("b1", "b2"):
        path = str(tmp_path / b)
        os.makedirs(path)
        ix = whoosh_index.create_in(path, schema_(), indexname=index.INDEX_NAME)
        entry = index.BankIndex("o", b, "inc", path, ix, clock=Clock((0,)))
        entry.apply([(k, Memory(id=f"fp{k:016x}", text=f"memory {k} of {b}", created_at=k, updated_at=k))
                     for k in range(1, 301)])
        cache.admit(("o", b), entry)
    one = cache.entries[("o", "b1")]
    assert one.resident_bytes() == index.OPEN_FILE_COPIES * one.size_bytes + one.memory_bytes() > one.size_bytes
    files_and_arrays = sum(e.size_bytes + e.memory_bytes() for e in cache.entries.values())
    cache.budget_bytes = files_and_arrays + 1024
    cache._evict(keep=("o", "b2"))
    assert list(cache.entries) == [("o", "b2")]


def test_posting_blocks_decoded_from_their_bytes_equal_whooshs_own_matcher(tmp_path):
    """``posting_arrays`` decodes a term's posting blocks from the postings file's bytes; every
    term's documents and weights equal what Whoosh's own matcher reads, for lists of many blocks
    (deleted documents included), weights all 1, all equal and varied, and inlined lists."""
    from whoosh import index as whoosh_index

    from chalicelib.core.records import Memory
    from chalicelib.core.store import Clock
    from chalicelib.search import index
    from chalicelib.search.schema import schema
    from chalicelib.search.whoosh_private import posting_arrays
    path = str(tmp_path / "ix")
    os.makedirs(path)
    entry = index.BankIndex("o", "b", "inc", path, whoosh_index.create_in(path, schema(), indexname=index.INDEX_NAME),
                            clock=Clock((0,)))
    recs = []
    for k in range(1, 701):  # "zephyr" in all 700 (several blocks), "quokka" twice in some, "lemur" in a few
        words = (["zephyr"] + ["quokka", "quokka"] * (k % 3 == 0) + ["lemur"] * (k % 97 == 0)
                 + [f"w{k % 211}"] * (1 + k % 4))
        recs.append((k, Memory(id=f"fp{k:016x}", text=" ".join(words), entities=[f"e{k % 5}"],
                               created_at=k, updated_at=k)))
    entry.apply(recs)
    entry.apply([(701, recs[10][1].model_copy(update={"text": "zephyr replaced"}))])  # a deletion in the segment
    leaves = [leaf for leaf, _off in entry.reader().leaf_readers()]
    looked = deleted = 0
    for leaf in leaves:
        for f, t in leaf.all_terms():
            if f not in ("text", "entities"):
                continue
            t = t if isinstance(t, str) else t.decode()
            m = leaf.postings(f, t)  # Whoosh's matcher leaves deleted documents out
            want = []
            while m.is_active():
                want.append((m.id(), m.weight()))
                m.next()
            got_ids, got_w = posting_arrays(leaf, f, t)
            assert got_ids.dtype == np.int32 and got_w.dtype == np.float64
            got = list(zip(got_ids.tolist(), got_w.tolist(), strict=True))
            assert [(d, w) for d, w in got if not leaf.is_deleted(d)] == want, (f, t)
            deleted += sum(1 for d, _w in got if leaf.is_deleted(d))
            looked += 1
    assert looked > 200 and deleted > 0  # the replaced document's postings are still read
    zephyr = [posting_arrays(leaf, "text", "zephyr") for leaf in leaves]
    assert max(len(ids) for ids, _w in zephyr) > 300  # spans blocks
