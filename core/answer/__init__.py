"""Ask AI and report drafts: grounded answers with case citations, fail-closed."""
