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
