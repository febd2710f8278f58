"""A signed report as a DICOM Comprehensive SR (``highdicom``), in the PACS's own study.

The SR follows the shape of TID 2000 (Basic Diagnostic Imaging Report): a root
container *Diagnostic Imaging Report* (LOINC 18748-4) holding one section per
non-empty report part (prior procedure descriptions for COMPARISON, findings,
impressions, recommendations), each a TEXT item. Patient and study attributes come
from ``evidence``: the original instances' headers, read from the PACS at export
time and kept in memory only, so the SR files under the PACS's own patient and
study (the *original* Study Instance UID). An amendment names the SR of the version
it supersedes in PredecessorDocumentsSequence. UIDs are derived from the report
version (:meth:`core.pacs.sealed.Sealer.uid`), so sending it again stores the same
object, never a second one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from core.reports.drafts import split_findings

__all__ = ["COMPREHENSIVE_SR", "SrRef", "build_sr", "evidence_from_metadata"]

# highdicom logs at INFO the SOP Instance UID of the dataset it copies the patient from: an original identifier
logging.getLogger("highdicom").setLevel(logging.WARNING)
COMPREHENSIVE_SR = "1.2.840.10008.5.1.4.1.1.88.33"
_SR_CLASSES = "1.2.840.10008.5.1.4.1.1.88."  # every structured report storage class
SERIES_NUMBER = 9001  # a series number no modality uses, so the PACS viewer shows the reports apart


@dataclass(frozen=True)
class SrRef:
    """Where one SR lives: its study (original), series and instance UIDs."""

    study_uid: str
    series_uid: str
    sop_uid: str

    def as_dataset(self) -> Any:
        """A minimal dataset naming this SR (what highdicom reads for PredecessorDocumentsSequence)."""
        from pydicom import Dataset

        ds = Dataset()
        ds.StudyInstanceUID, ds.SeriesInstanceUID, ds.SOPInstanceUID = self.study_uid, self.series_uid, self.sop_uid
        ds.SOPClassUID = COMPREHENSIVE_SR
        return ds


def evidence_from_metadata(items: list[Any]) -> list[Any]:
    """The image instances among a study's headers (earlier SRs are not evidence), with no bulk data."""
    out = []
    for ds in items:
        if str(ds.get("SOPClassUID", "")).startswith(_SR_CLASSES):
            continue
        for elem in list(ds):
            if elem.VR in ("OB", "OW", "OF", "OD", "OL", "UN") or elem.tag.is_private:
                del ds[elem.tag]
        out.append(ds)
    return out


def _section(name: Any, item: Any, text: str) -> Any:
    import highdicom as hd

    container = hd.sr.ContainerContentItem(name=name, relationship_type="CONTAINS")
    container.ContentSequence = hd.sr.ContentSequence(
        [hd.sr.TextContentItem(name=item, value=text, relationship_type="CONTAINS")], is_root=False
    )
    return container


def build_sr(
    *,
    findings: str,
    impression: str,
    recommendations: str,
    evidence: list[Any],
    ref: SrRef,
    version: int,
    signer: str,
    organization: str,
    predecessor: SrRef | None = None,
) -> Any:
    """The Comprehensive SR of one signed report version (a pydicom dataset, in memory)."""
    import highdicom as hd
    from pydicom.sr.codedict import codes

    if not evidence:
        raise ValueError("an SR needs at least one image instance of the study as evidence")
    comparison, current = split_findings(findings)
    parts = [
        (codes.DCM.PriorProcedureDescriptions, codes.DCM.PriorProcedureDescriptions, comparison),
        (codes.DCM.Findings, codes.DCM.Finding, current),
        (codes.DCM.Impressions, codes.DCM.Impression, impression),
        (codes.DCM.Recommendations, codes.DCM.Recommendation, recommendations),
    ]
    root = hd.sr.ContainerContentItem(name=codes.LN.DiagnosticImagingReport, template_id="2000")
    root.ContentSequence = hd.sr.ContentSequence(
        [_section(name, item, text.strip()) for name, item, text in parts if text.strip()], is_root=False
    )
    return hd.sr.ComprehensiveSR(
        evidence=evidence,
        content=root,
        series_instance_uid=ref.series_uid,
        series_number=SERIES_NUMBER,
        sop_instance_uid=ref.sop_uid,
        instance_number=version,
        manufacturer=organization,
        is_complete=True,
        is_final=True,
        is_verified=True,
        verifying_observer_name=signer if "^" in signer else signer + "^",  # one PN component: the display name
        verifying_organization=organization,
        previous_versions=[predecessor.as_dataset()] if predecessor else None,
        series_description="Casebook signed report",
    )
