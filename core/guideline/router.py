"""Task-aware router by concepts: refused, guideline, drug, mixed or out-of-domain.

Inputs are the question, the :class:`~core.kb.DrugLexicon` of the ingested
labels (every proprietary, generic and ingredient name: nothing hard-coded)
and the vocabularies of :class:`GuidelineQASettings`. A question names a domain
concept by a trigger word, a word start (``tubercul`` in "tuberculous") or a
variant in ``concepts`` (TB, LTBI, IGRA, TST, CAP, CURB-65). Rules, in order:

0. a prompt injection or harm request (``refusal_patterns``) -> refused with
   the fixed ``refusal_message`` (route ``out_of_domain``, stage ``policy``);
1. no domain concept and no known drug -> ``out_of_domain`` (abstain at once);
2. a known drug, a guideline task word and either a domain concept or several
   drugs -> ``mixed`` ("How long is rifampin given for latent TB?");
3. a known drug otherwise -> ``drug`` (labels only), even with a task word
   ("Who should not take amoxicillin?");
4. no drug and a guideline task word -> ``guideline`` (guidelines only);
5. no drug and no guideline task word (``How does TB spread?``) -> ``mixed``.

Diagnosis intent (switching on the diagnosis evidence gate) is any diagnosis
keyword outside the ``drug`` route.
"""

from __future__ import annotations

import re

from core.config.guideline import GuidelineQASettings
from core.guideline.request_guard import decoded_runs
from core.guideline.text import find_phrases
from core.guideline.types import RouteDecision
from core.kb.lexicon import DrugLexicon
from core.kb.provenance import instruction_sentences

__all__ = ["concepts_in", "drug_synonyms", "expand_query", "is_refused", "route_question"]


def drug_synonyms(lexicon: DrugLexicon, names: list[str], aliases: dict[str, list[str]]) -> set[str]:
    """Every name that shares a label with one of ``names`` (brand, generic, salt, ingredient), plus aliases."""
    docs = {d for n in names if (e := lexicon.lookup(n)) for d in e.doc_ids}
    found = {e.name for e in lexicon.entries.values() if docs.intersection(e.doc_ids)} | {n.lower() for n in names}
    return found | {a.lower() for n in found for a in aliases.get(n, [])}


def spelled_out(question: str, drugs: list[str], aliases: dict[str, list[str]]) -> str:
    """``question`` with each abbreviation of a named drug (an alias of at most four letters: INH, PZA) replaced by
    the drug's name and its longer spellings ("RIF" -> "rifampin rifampicin"), so the words the evidence uses are
    the words sentences are matched on; the Xpert MTB/RIF test's name is kept."""
    for name in drugs:
        spelled = " ".join([name, *(a for a in aliases.get(name, []) if len(a) > 4 and " " not in a)])
        for short in (a for a in aliases.get(name, []) if len(a) <= 4):
            question = re.sub(rf"(?<!\w)(?<!mtb/){re.escape(short)}(?!\w)", spelled, question, flags=re.IGNORECASE)
    return question


def is_refused(question: str, cfg: GuidelineQASettings) -> str | None:
    """The refusal pattern ``question`` matches (a prompt injection or a harm request), or ``None``.

    A sentence addressed to a model or system (the detector that keeps such sentences of uploaded
    documents out of answers, :func:`core.kb.provenance.instruction_sentences`) is refused too, and so is
    a request wrapped in base64 (:func:`core.guideline.request_guard.decoded_runs`).
    """
    for text in (question, *decoded_runs(question)):  # a request wrapped in base64 is read as its text
        found = next((p for p in cfg.refusal_patterns if re.search(p, text, re.IGNORECASE)), None)
        if found is None and instruction_sentences(text):
            return "an instruction addressed to the system"
        if found is not None:
            return found
    return None


def concepts_in(question: str, cfg: GuidelineQASettings) -> dict[str, list[str]]:
    """Concepts the question names -> the variants found (the canonical name counts as a variant)."""
    found: dict[str, list[str]] = {}
    for concept, variants in cfg.concepts.items():
        hits = find_phrases(question, [concept, *variants])
        if hits:
            found[concept] = hits
    return found


def expand_query(question: str, cfg: GuidelineQASettings) -> str:
    """The question plus the names of the concepts it names only by a variant (``TB`` -> ``tuberculosis``)."""
    if not cfg.expand_query:
        return question
    extra = [c for c, hits in concepts_in(question, cfg).items() if c not in {h.lower() for h in hits}]
    return f"{question} ({'; '.join(extra)})" if extra else question


def _domain_words(question: str, cfg: GuidelineQASettings) -> list[str]:
    """Domain triggers, domain word starts and variants of domain concepts found in ``question``."""
    words = find_phrases(question, cfg.domain_triggers)
    words += find_phrases(question, cfg.domain_stems, prefix=True)
    for concept, hits in concepts_in(question, cfg).items():
        if find_phrases(concept, cfg.domain_triggers) or find_phrases(concept, cfg.domain_stems, prefix=True):
            words += hits
    return list(dict.fromkeys(w.lower() for w in words))


def route_question(question: str, lexicon: DrugLexicon, cfg: GuidelineQASettings) -> RouteDecision:
    """Classify ``question``; the decision lists the words it was based on."""
    pattern = is_refused(question, cfg)
    if pattern is not None:
        return RouteDecision(route="out_of_domain", reason=cfg.refusal_message, refused=True)
    drugs = [e.name for e in lexicon.find_in(question)]
    named = re.sub(r"mtb/rif", " ", question, flags=re.IGNORECASE)  # the Xpert MTB/RIF test, not rifampicin
    drugs += [n for n, alias in cfg.drug_aliases.items() if lexicon.lookup(n) and find_phrases(named, alias)]
    drugs = list(dict.fromkeys(drugs))
    labels = {d for n in drugs if (e := lexicon.lookup(n)) for d in e.doc_ids}
    triggers = _domain_words(question, cfg)
    drug_task = find_phrases(question, cfg.drug_task_keywords)
    guide_task = find_phrases(question, cfg.guideline_task_keywords)
    asked = question
    for pattern in cfg.diagnosis_descriptive:  # "newly diagnosed TB" describes the patient: no diagnosis task
        asked = re.sub(pattern, " ", asked, flags=re.IGNORECASE)
    diagnosis = bool(find_phrases(asked, cfg.diagnosis_intent_keywords))
    words = {"drugs": drugs, "triggers": triggers, "drug_task": drug_task, "guideline_task": guide_task}
    if not drugs and not triggers:
        reason = "out of domain: the question names no tuberculosis or pneumonia term and no drug in the labels KB"
        return RouteDecision(route="out_of_domain", reason=reason, **words)
    several = len(labels) > 1
    if drugs and guide_task and (triggers or several):
        route, reason = "mixed", f"drug {drugs[0]!r} with guideline task {guide_task[0]!r}"
    elif drugs:
        route, reason = "drug", f"drug {drugs[0]!r}" + (f" with task {drug_task[0]!r}" if drug_task else "")
    elif guide_task:
        route, reason = "guideline", f"domain term {triggers[0]!r} with guideline task {guide_task[0]!r}"
    else:
        route, reason = "mixed", f"domain term {triggers[0]!r} without a specific guideline task"
    return RouteDecision(route=route, reason=reason, diagnosis=diagnosis and route != "drug", **words)
