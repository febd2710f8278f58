"""Similar-case search and context bundles over the historical-case memory bank.

>>> rt = open_runtime()
>>> get_similar_cases(rt, "scan_ab12...", top_k=5).cases[0].caseId
'HC-00042'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.contracts import BundleResult, SimilarCasesResult
    from core.runtime import Runtime

__all__ = ["build_context_bundle", "get_similar_cases"]


def get_similar_cases(runtime: Runtime, scan_id: str, top_k: int | None = None) -> SimilarCasesResult:
    """Neighbours of a scan filtered by anatomy and region (``settings.search.top_k`` by default)."""
    return runtime.case_search.similar_cases(scan_id, top_k)


def build_context_bundle(runtime: Runtime, scan_id: str) -> BundleResult:
    """The strict context bundle for a scan, with its case ids kept beside it."""
    from core.cases.bundle import build_context_bundle as bundle  # FAISS and the store load here, not at import

    return bundle(runtime.case_search, scan_id)
