"""Casebook: clinical review workbench. Start with `make run`.

A log-in form comes first; doctors then get every review page, patients a
reduced navigation (their own scans, no Ask AI, no drafts).
"""

from __future__ import annotations

import streamlit as st

from core.auth import CurrentUser
from pages._shared import current_user, login_form

st.set_page_config(page_title="Casebook", page_icon="🩺", layout="wide")


def logout() -> None:
    """Forget the signed-in user and everything this session held."""
    st.session_state.clear()


def pages_for(user: CurrentUser | None) -> dict[str, list[st.Page]] | list[st.Page]:
    """The navigation a user gets."""
    if user is None:
        return [st.Page(login_form, title="Log in", icon="🔒", url_path="login")]
    if not user.is_doctor:
        return [st.Page("pages/scan_review.py", title="My scans", icon="🩻", default=True)]
    return {
        "Review": [
            st.Page("pages/scan_review.py", title="Scan Review", icon="🩻", default=True),
            st.Page("pages/similar_cases.py", title="Similar Cases", icon="🧭"),
            st.Page("pages/patient_explorer.py", title="Patient Explorer", icon="🗺️"),
            st.Page("pages/report_draft.py", title="Report Draft", icon="📝"),
        ],
        "Knowledge": [
            st.Page("pages/guideline_qa.py", title="Guideline QA", icon="📚"),
            st.Page("pages/evaluation.py", title="Self-reflective RAG", icon="🔬"),
        ],
        "System": [st.Page("pages/settings_status.py", title="Settings / Status", icon="⚙️")],
    }


user = current_user()
if user is not None:
    st.sidebar.markdown(f"Signed in as **{user.display_name}** ({user.role})")
    st.sidebar.button("Log out", on_click=logout, icon="🚪")
st.sidebar.caption("Casebook · demo data, not for clinical use")
st.navigation(pages_for(user)).run()
