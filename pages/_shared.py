"""What every page shares: the cached runtime, cached lookups, notices. Pages stay thin."""

from __future__ import annotations

from typing import Any

import streamlit as st
from sqlalchemy import select

from core.contracts import SimilarCasesResult
from core.runtime import Runtime, open_runtime
from core.settings import load_settings
from core.store.models import Scan, User

DRAFT_NOTICE = "AI output is a draft for review. Nothing is part of the record until a doctor signs it."
DEMO_NOTICE = "Demo data: invented patients and cases, not for clinical use."


@st.cache_resource(show_spinner="Opening the case store…")
def get_runtime() -> Runtime:
    """One runtime per server process (settings from the environment and preset)."""
    return open_runtime(load_settings())


@st.cache_data(ttl=60, show_spinner=False)
def list_scans() -> list[dict[str, Any]]:
    """Every scan with its patient's display name (doctors only see this list)."""
    rt = get_runtime()
    with rt.db.read_only() as s:
        rows = s.execute(
            select(
                Scan.id,
                User.display_name,
                Scan.anatomy,
                Scan.region,
                Scan.ai_diagnosis,
                Scan.ai_confidence,
                Scan.created_at,
            )
            .join(User, User.id == Scan.patient_id)
            .order_by(User.display_name, Scan.created_at.desc())
        ).all()
    return [
        {
            "scan_id": r[0],
            "patient": r[1],
            "anatomy": r[2],
            "region": r[3],
            "diagnosis": r[4],
            "confidence": r[5],
            "created_at": r[6],
        }
        for r in rows
    ]


@st.cache_data(show_spinner="Finding similar cases…", max_entries=2048)
def similar_cases(scan_id: str, top_k: int, index_version: str) -> SimilarCasesResult:
    """Similar cases, cached per scan, top_k and index version."""
    return get_runtime().search.similar_cases(scan_id, top_k)


def index_version() -> str:
    """Current case index version (part of every per-scan cache key)."""
    return get_runtime().search.index.version


def pick_scan() -> dict[str, Any] | None:
    """Patient search and scan picker in the sidebar; the opaque scan id lives in the URL."""
    scans = list_scans()
    if not scans:
        st.info("No scans yet. Run `python -m core seed-demo` to load the demo patients.")
        return None
    wanted = st.query_params.get("scan")
    query = st.sidebar.text_input("Search patients", placeholder="Name…", help="Filters the patient list by name.")
    patients = sorted({s["patient"] for s in scans if query.lower() in s["patient"].lower()})
    if not patients:
        st.sidebar.warning("No patient matches that name.")
        return None
    current = next((s for s in scans if s["scan_id"] == wanted), None)
    default_patient = current["patient"] if current and current["patient"] in patients else patients[0]
    patient = st.sidebar.selectbox("Patient", patients, index=patients.index(default_patient))
    own = [s for s in scans if s["patient"] == patient]
    labels = [f"{s['created_at']:%Y-%m-%d} · {s['anatomy']} · {s['diagnosis']}" for s in own]
    default_scan = next((i for i, s in enumerate(own) if s["scan_id"] == wanted), 0)
    choice = st.sidebar.selectbox("Scan", range(len(own)), index=default_scan, format_func=lambda i: labels[i])
    scan = own[choice]
    if st.query_params.get("scan") != scan["scan_id"]:
        st.query_params["scan"] = scan["scan_id"]
    return scan


def not_yet(title: str, what: str) -> None:
    """A clear placeholder for a page whose core has not landed yet."""
    st.title(title)
    st.info(f"Not yet available. {what}", icon="🚧")
