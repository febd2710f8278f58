"""Task-aware router: guideline, drug, mixed or out-of-domain.

Inputs are the question, the :class:`~core.kb.DrugLexicon` of the ingested
labels (every proprietary, generic and ingredient name: nothing hard-coded)
and the keyword lists of :class:`GuidelineQASettings`. Rules, in order:

1. no domain trigger and no known drug -> ``out_of_domain`` (abstain at once);
2. a known drug and a guideline task word (regimen, treatment, diagnose...) -> ``mixed``;
3. a known drug otherwise -> ``drug`` (labels only);
4. no drug and a guideline task word -> ``guideline`` (guidelines only);
5. no drug and no guideline task word (``How does TB spread?``, ``side effects of TB drugs``) -> ``mixed``.

Diagnosis intent (switching on the diagnosis evidence gate) is any diagnosis
keyword outside the ``drug`` route.
"""

from __future__ import annotations

from core.guideline.settings import GuidelineQASettings
from core.guideline.text import find_phrases
from core.guideline.types import RouteDecision
from core.kb.lexicon import DrugLexicon

__all__ = ["drug_synonyms", "route_question"]


def drug_synonyms(lexicon: DrugLexicon, names: list[str], aliases: dict[str, list[str]]) -> set[str]:
    """Every name that shares a label with one of ``names`` (brand, generic, salt, ingredient), plus aliases."""
    docs = {d for n in names if (e := lexicon.lookup(n)) for d in e.doc_ids}
    found = {e.name for e in lexicon.entries.values() if docs.intersection(e.doc_ids)} | {n.lower() for n in names}
    return found | {a.lower() for n in found for a in aliases.get(n, [])}


def route_question(question: str, lexicon: DrugLexicon, cfg: GuidelineQASettings) -> RouteDecision:
    """Classify ``question``; the decision lists the words it was based on."""
    drugs = [e.name for e in lexicon.find_in(question)]
    drugs += [n for n, alias in cfg.drug_aliases.items() if lexicon.lookup(n) and find_phrases(question, alias)]
    drugs = list(dict.fromkeys(drugs))
    triggers = find_phrases(question, cfg.domain_triggers)
    drug_task = find_phrases(question, cfg.drug_task_keywords)
    guide_task = find_phrases(question, cfg.guideline_task_keywords)
    diagnosis = bool(find_phrases(question, cfg.diagnosis_intent_keywords))
    words = {"drugs": drugs, "triggers": triggers, "drug_task": drug_task, "guideline_task": guide_task}
    if not drugs and not triggers:
        reason = "out of domain: the question names no tuberculosis or pneumonia term and no drug in the labels KB"
        return RouteDecision(route="out_of_domain", reason=reason, **words)
    if drugs and guide_task:
        route, reason = "mixed", f"drug {drugs[0]!r} with guideline task {guide_task[0]!r}"
    elif drugs:
        route, reason = "drug", f"drug {drugs[0]!r}" + (f" with task {drug_task[0]!r}" if drug_task else "")
    elif guide_task:
        route, reason = "guideline", f"domain term {triggers[0]!r} with guideline task {guide_task[0]!r}"
    else:
        route, reason = "mixed", f"domain term {triggers[0]!r} without a specific guideline task"
    return RouteDecision(route=route, reason=reason, diagnosis=diagnosis and route != "drug", **words)
