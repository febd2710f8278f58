"""The report lifecycle in one package: drafts, signing, versions, reads and the audit of report events.

* :mod:`core.reports.drafts`: a draft's shape and the template written from the record;
* :mod:`core.reports.writer`: the model's part of a draft (estimate, live stream, Cancel); it
  never writes a draft (import it directly: it loads the answer guard and the case search);
* :mod:`core.reports.store`: saving, signing and amending, the only writes;
* :mod:`core.reports.signing` and :mod:`core.reports.critical`: attestation, and which critical
  findings need a communication record (at signing, and for an amendment that newly names one);
* :mod:`core.reports.reads`: a scan's saved drafts and signed versions, and their verification;
* :mod:`core.reports.autosave`: the editor's text kept as the doctor's unsigned draft, reopened after a reload;
* :mod:`core.reports.audit`: one audit row per report event.

The light parts are re-exported here: ``from core.reports import save_draft, report_versions``.
"""

from core.reports.autosave import Autosaved, autosave_draft, restored_note
from core.reports.drafts import AI_MARK, COMPARISON_LABEL, DraftText, join_findings, split_findings
from core.reports.reads import (
    DraftRow,
    ReportRow,
    ReportVerification,
    get_draft,
    list_drafts,
    report_versions,
    restorable_draft,
    verify_reports,
)
from core.reports.store import amend_report, save_draft, sign_draft

__all__ = [
    "AI_MARK",
    "COMPARISON_LABEL",
    "Autosaved",
    "DraftRow",
    "DraftText",
    "ReportRow",
    "ReportVerification",
    "amend_report",
    "autosave_draft",
    "get_draft",
    "join_findings",
    "list_drafts",
    "report_versions",
    "restorable_draft",
    "restored_note",
    "save_draft",
    "sign_draft",
    "split_findings",
    "verify_reports",
]
