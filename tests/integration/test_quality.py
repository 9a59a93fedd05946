"""The classification of the hand-labelled corpus (``tests/data/labelled_findings.json``),
replayed through the real libraries: suspected bugs must be real bugs, and real bugs must be
suspected."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from xamt.catalog import model
from xamt.known import load_known
from xamt.replay import Replay
from xamt.workers.pool import WorkerPool

# the corpus evaluation lives with the benchmark that reports it (bench/quality_corpus.py)
BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from quality_corpus import (  # noqa: E402
    LABELS,
    corpus_groups,
    evaluate,
    interpreters,
    load_corpus,
)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "labelled_findings.json"
# bench/quality.py measures 98.8% and 96.0% on this corpus (483 entries); the test keeps a
# margin for the few behaviours that are not deterministic (a crash in a batch, uninitialised
# memory).
PRECISION = 0.88
RECALL = 0.88


def test_the_corpus_is_broad() -> None:
    entries = load_corpus(CORPUS)
    assert len(entries) >= 100
    assert {e.label for e in entries} == set(LABELS)
    libs = {e.library for e in entries}
    assert len(libs) == 7, libs
    for e in entries:
        if e.label == "documented-difference":
            assert e.link.startswith("https://"), e.id


def test_labelled_corpus_precision_and_recall(pythons: dict[str, str]) -> None:
    entries = load_corpus(CORPUS)
    groups = corpus_groups(entries, model.load())
    with WorkerPool(interpreters(entries, pythons)) as pool:
        pool.start()
        quality = evaluate(entries, Replay(pool, groups), load_known())
    report = "\n".join(quality.lines())
    print(report)
    assert quality.precision >= PRECISION, report
    assert quality.recall >= RECALL, report


@pytest.mark.parametrize("label", ["bug", "fuzzer-fault"])
def test_the_verdict_is_stable_across_fresh_workers(label: str, pythons: dict[str, str]) -> None:
    """Replaying a slice of the corpus in new processes gives the same classifications.

    Wrong results only: whether a segfault on garbage memory happens again is the process's
    nondeterminism (reproduction in fresh workers sorts those), not the verdict's.
    """
    chosen = [e for e in load_corpus(CORPUS) if e.label == label]
    entries = [e for e in chosen if e.kind not in ("crash", "hang", "resource")][:10]
    groups = corpus_groups(entries, model.load())
    seen = []
    for _ in range(2):
        with WorkerPool(interpreters(entries, pythons)) as pool:
            pool.start()
            quality = evaluate(entries, Replay(pool, groups), load_known())
        seen.append([j.classification for j in quality.judged])
    assert seen[0] == seen[1]
