"""Test references for the recall core: Whoosh's own BM25F over the corpus statistics recall
uses, the reference its posting-block ranking is checked against (recall itself never runs
Whoosh's searcher)."""

from __future__ import annotations

from whoosh.scoring import BM25F, WeightLengthScorer, WeightScorer, bm25

from chalicelib.search.scorer import K1, B, CorpusStats


class _Scorer(WeightLengthScorer):
    def __init__(self, searcher, fieldname, text, idf, avgfl, qf=1):
        self.idf, self.avgfl, self.B, self.K1, self.qf = idf, avgfl or 1.0, B, K1, qf
        self.setup(searcher, fieldname, text)

    def _score(self, weight, length):
        return bm25(self.idf, weight, length, self.avgfl, self.B, self.K1)


class CorpusBM25F(BM25F):
    """Whoosh weighting whose idf and average field length come from ``CorpusStats``."""

    def __init__(self, stats: CorpusStats) -> None:
        super().__init__(B=B, K1=K1)
        self.stats = stats

    def scorer(self, searcher, fieldname, text, qf=1):
        if not searcher.schema[fieldname].scorable:
            return WeightScorer.for_(searcher, fieldname, text)
        return _Scorer(searcher, fieldname, text, self.stats.idf(fieldname, text),
                       self.stats.avgfl(fieldname), qf=qf)


def write_old_snapshot(org: str, bank: str, tmp_path, *without: str) -> str:
    """An S3 snapshot of ``bank`` as code before the fields ``without`` existed wrote it: none of
    them in the index's schema or in any document. Returns its key."""
    import copy
    import os
    import shutil

    from whoosh import index as whoosh_index

    from chalicelib.core import store
    from chalicelib.search import index
    from chalicelib.search.schema import schema, to_document

    head = store.get_bank_head(org, bank)
    old = copy.deepcopy(schema())
    for name in without:
        old.remove(name)
    path = str(tmp_path / "old-index")
    os.makedirs(path)
    ix = whoosh_index.create_in(path, old, indexname=index.INDEX_NAME)
    w = ix.writer()
    for rec in store.iter_records_any_order(head.incarnation):
        doc = dict(to_document(rec))
        for name in without:
            doc.pop(name, None)
        w.add_document(**doc)
    w.commit()
    entry = index.BankIndex(org, bank, head.incarnation, path, ix, clock=head.clock)
    entry.write_meta()
    key = index.IndexCache(str(tmp_path / "writer")).write_snapshot(entry)
    shutil.rmtree(path)
    return key
