"""Guideline QA: fail-closed tiered RAG over the guideline and drug-label knowledge bases.

Import from the modules (this package stays import-light because :mod:`core.settings`
imports its settings group):

* :mod:`core.guideline.pipeline` — ``GuidelineQA(settings).answer(question) -> QAAnswer | QAAbstention``
* :mod:`core.guideline.types` — ``QAAnswer``, ``Bullet``, ``Snippet``, ``QAAbstention``, ``Trace``, ``RouteDecision``
* :mod:`core.guideline.router` — ``route_question``, ``drug_synonyms``
* :mod:`core.guideline.constraints` — section boost, drug anchor filter, diagnosis evidence gate
* :mod:`core.guideline.gates` — lexical entailment gate, claim-snippet alignment, medical entity guard
* :mod:`core.guideline.calibration` — calibrated retrieval confidence
* :mod:`core.guideline.evaluate` — the evaluation and calibration fit
* :mod:`core.guideline.cli` — ``qa`` and ``eval-guidelines``

Design and numbers: docs/GUIDELINE_QA.md.
"""
