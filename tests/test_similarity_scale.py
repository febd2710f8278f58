"""The similarity doctors read: a calibrated scale that separates same-diagnosis from other-diagnosis cases."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select

from core.cases import build_context_bundle, get_similar_cases
from core.cases.search import cosine_to_similarity
from core.runtime import Runtime
from core.store.models import HistoricalCase
from tests.conftest import scan_of


def test_same_diagnosis_reads_at_least_0_2_above_other_diagnoses(demo: Runtime) -> None:
    with demo.db.read_only() as s:
        rows = s.execute(select(HistoricalCase.anatomy, HistoricalCase.diagnosis, HistoricalCase.embedding)).all()
    anatomy = np.array([r[0] for r in rows])
    diagnosis = np.array([r[1] for r in rows])
    vectors = np.stack([np.asarray(r[2], dtype=np.float32) for r in rows])
    p = demo.settings.search
    scale = np.vectorize(lambda c: cosine_to_similarity(float(c), p.similarity_cos_zero, p.similarity_cos_one))
    same: list[float] = []
    other: list[float] = []
    for i in np.random.default_rng(13).choice(len(rows), 120, replace=False):
        peers = anatomy == anatomy[i]
        peers[i] = False
        shown = scale(vectors[peers] @ vectors[i])
        same += shown[diagnosis[peers] == diagnosis[i]].tolist()
        other += shown[diagnosis[peers] != diagnosis[i]].tolist()
    gap = float(np.median(same) - np.median(other))
    assert gap >= 0.2, gap
    # The old (1 + cos) / 2 squeezed them: the same cosines read barely 0.2 apart there.
    old = float(np.median([(1 + c) / 2 for c in np.array(same)]) - np.median([(1 + c) / 2 for c in np.array(other)]))
    assert gap > old


def test_scale_is_monotone_clipped_and_the_bundle_floor_uses_it(demo: Runtime) -> None:
    assert cosine_to_similarity(-0.5) == 0.0 and cosine_to_similarity(0.99) == 1.0
    assert cosine_to_similarity(0.4) < cosine_to_similarity(0.5) < cosine_to_similarity(0.6)
    sid = scan_of(demo, "rahul.mehta")
    shown = [c.similarity for c in get_similar_cases(demo, sid).cases]
    assert all(0.0 <= s <= 1.0 for s in shown) and shown == sorted(shown, reverse=True)
    result = build_context_bundle(demo, sid)
    assert result.bundle is not None
    assert all(c.similarity >= demo.settings.safety.min_similarity for c in result.bundle.similarCases)
