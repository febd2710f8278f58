"""Guideline QA: fail-closed tiered RAG over the guideline and drug-label knowledge bases."""
