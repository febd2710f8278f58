"""The hospital PACS and EHR: studies in over DICOMweb, signed reports out as DICOM SR and FHIR (docs/INTEGRATION.md)."""
