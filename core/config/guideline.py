"""Settings group for Guideline QA (registered in :mod:`core.settings` as ``guideline``).

Every number and every configurable list of :mod:`core.guideline` lives here
once, with its default and a description; no function in the package carries a
second default. Override from the environment with
``CASEBOOK_GUIDELINE__<FIELD>``, for example ``CASEBOOK_GUIDELINE__TAU=0.3``.
How the retrieval-confidence scale is calibrated: docs/GUIDELINE_QA.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from core.config import guideline_vocab as vocab
from core.config.common import Group

__all__ = ["GuidelineQASettings"]

# Fitted on the train split of tests/data/guideline_qa_eval.json (`eval-guidelines --calibrate`), 2026-11-25.
_CALIB_MODEL = {
    "guidelines": {"intercept": -75.9008, "cosine": 88.1126, "margin": 77.414, "section_match": 1.0594,
                   "query_tokens": -0.2626},
    "druglabels": {"intercept": -52.9932, "cosine": 62.9894, "margin": 110.5754, "section_match": 0.1997,
                   "query_tokens": -0.6268},
}  # fmt: skip
# The shown confidence over document spaces: fitted by bench/fit_answer_confidence.py on the train splits of both
# outside question sets (2026-11-28, 200 answers, 148 correct: the first set's 116/94, read failure by failure for
# four rounds, and the second set's 84/54, not tuned on). Two features lower the base rate's 5-fold log-loss (0.573):
# the share of bullets quoted from the doctor's documents (0.559) and of the question's words the bullets and their
# sections mention (0.542). Fitted on one set and scored on the other, every map misses by about 0.17 (ECE): the two
# sets' accuracies differ (81% and 64%). docs/benchmarks/guideline_realdocs.md.
_ANSWER_CALIB = {"intercept": -2.787, "space": 2.7529, "overlap": 2.229}


class GuidelineQASettings(Group):
    """Routing, structural retrieval constraints, verification gates and abstention (docs/GUIDELINE_QA.md)."""

    enabled: bool = Field(True, description="Whether this feature is offered in the app and CLI.")
    writer: Literal["extractive", "llm"] = Field(
        "extractive",
        description="Who writes the answer bullets: `extractive` (evidence sentences chosen verbatim) or `llm` "
        "(the `llm.backend` model, then the same gates). Extractive by default: a manual read of the small local "
        "model's answers found clinically wrong bullets that still passed the lexical gates (docs/GUIDELINE_QA.md).",
    )

    # Router.
    domain_triggers: list[str] = Field(
        vocab.DOMAIN_TRIGGERS, description="Words/phrases that put a question in the TB/CAP domain (whole words)."
    )
    drug_task_keywords: list[str] = Field(
        vocab.DRUG_TASK_KEYWORDS, description="Task words of a drug-label question."
    )
    guideline_task_keywords: list[str] = Field(
        vocab.GUIDELINE_TASK_KEYWORDS, description="Task words of a guideline question."
    )
    diagnosis_intent_keywords: list[str] = Field(
        vocab.DIAGNOSIS_INTENT_KEYWORDS,
        description="Words that give a question diagnosis intent (switches on the diagnosis gate).",
    )
    diagnosis_descriptive: list[str] = Field(
        [r"\b(newly|recently|already|previously|just|been)\s+diagnosed\b", r"\bdiagnosed\s+(with|as)\b"],
        description="Regular expressions (case-insensitive) of a diagnosis word that describes the patient (\"newly "
        "diagnosed TB\", \"diagnosed with HIV\"): removed before `diagnosis_intent_keywords` are looked for, so a "
        "question about treating a diagnosed patient keeps the passages that answer it.",
    )
    concepts: dict[str, list[str]] = Field(
        vocab.CONCEPTS,
        description="Concept -> word forms, abbreviations and synonyms (whole words). A variant of a domain concept "
        "puts a question in the domain; retrieval adds the concept's name to the search query (`expand_query`).",
    )
    domain_stems: list[str] = Field(
        vocab.DOMAIN_STEMS,
        description="Word starts that put a question in the TB/CAP domain in any inflection (`tubercul` matches "
        "tuberculous, tubercular).",
    )
    refusal_patterns: list[str] = Field(
        vocab.REFUSAL_PATTERNS,
        description="Regular expressions (case-insensitive) of prompt-injection and harm requests (lethal dose); a "
        "match is refused with `refusal_message` before anything is searched.",
    )
    refusal_message: str = Field(vocab.REFUSAL_MESSAGE, description="The fixed reply to a refused request.")
    request_guard: bool = Field(
        True, description="Read every question by meaning too (core/guideline/request_guard.py): a logistic "
        "regression over the knowledge bases' embedder, fitted on `request_guard_exemplars`, refuses a question one "
        "of whose clauses (a sentence, a quoted passage, or the whole) reaches `request_guard_threshold`.",
    )
    request_guard_exemplars: Path = Field(
        Path("assets/guideline/request_exemplars.json"),
        description="The request guard's reference lines (relative to the repository root): requests to refuse, by "
        "class, and ordinary clinical questions, in our own words.",
    )
    request_guard_threshold: float = Field(
        0.70, gt=0, lt=1, description="P(refuse) at which the request guard refuses a question (chosen on the train "
        "splits of both real-document question sets: above every answerable one there, 0.68 at most).",
    )
    request_guard_c: float = Field(
        10.0, gt=0, description="Inverse L2 strength of the request guard's logistic regression (scikit-learn `C`).",
    )
    expand_query: bool = Field(
        True, description="Add the names of the concepts a question names (TB -> tuberculosis) to the search query."
    )

    # Retrieval and structural constraints.
    candidates: int = Field(30, ge=1, le=100, description="Chunks fetched from each searched KB before the filters.")
    search_mode: Literal["hybrid", "dense", "bm25"] = Field(
        "hybrid", description="Search mode for candidates: `hybrid`, `dense` or `bm25`."
    )
    fusion: dict[str, Literal["rrf", "score"]] = Field(
        {"druglabels": "score"},
        description="Per KB, how hybrid candidates are re-ranked after the section boost: reciprocal rank fusion "
        "(`rrf`, the default for a KB not listed) or the mean of the min-max scaled boosted cosine and BM25 / best "
        "BM25 (`score`, which keeps the boost's size: labels, where the question names a section).",
    )
    mixed_corpora: list[str] = Field(
        default_factory=list,
        description="Corpora ingested with `kb ingest-corpus` searched on the mixed route as one more knowledge "
        "base, `corpus:A+B` (fused by RRF); set its threshold and calibration under that key "
        "(docs/LARGE_CORPORA.md).",
    )
    evidence_chunks: int = Field(4, ge=1, description="Best surviving chunks (per answer) used as evidence.")
    alpha: float = Field(
        0.12,
        ge=0,
        description="Section boost added to the dense similarity of a chunk whose section matches the question's "
        "section words, before the dense and BM25 rankings are fused and before the thresholds.",
    )
    section_groups: dict[str, list[str]] = Field(
        vocab.SECTION_GROUPS,
        description="Question keyword (prefix, lowercase) -> section group: LOINC codes or words matched against "
        "the section title/path. When one matched keyword contains another, only the longer one counts.",
    )
    drug_aliases: dict[str, list[str]] = Field(
        {"rifampin": ["rifampicin", "rif", "rmp"], "rifapentine": ["rifapentin", "rpt"],
         "isoniazid": ["isonicotinic acid hydrazide", "inh"], "pyrazinamide": ["pza"], "ethambutol": ["emb"],
         "bedaquiline": ["bdq"], "linezolid": ["lzd"], "moxifloxacin": ["mfx"], "levofloxacin": ["lfx"]},
        description="Extra spellings of a lexicon name that guidelines and clinicians use: the INN where a label uses "
        "the USAN (rifampicin) and the standard abbreviations of TB drugs (INH, RIF, PZA, EMB, ...). A question "
        "naming one names the drug (routing, the drug anchor filter, dose comparison); the Xpert MTB/RIF test's "
        "name is not the drug.",
    )
    label_must_match_drug: bool = Field(
        True,
        description="Drug anchor filter: a drug-label chunk passes only when it is the target drug's own label "
        "(a mention inside another drug's label does not count). Guideline chunks need the name in title or text.",
    )
    diagnosis_keywords: list[str] = Field(
        vocab.DIAGNOSIS_KEYWORDS,
        description="Diagnosis gate: a chunk must contain one of these (prefix match) in its window.",
    )
    diagnosis_window_chars: int = Field(
        900, ge=1, description="Diagnosis gate: characters of chunk text inspected (plus its metadata)."
    )

    # Abstention: calibrated retrieval confidence.
    thresholds: dict[str, float] = Field(
        {"guidelines": 0.80, "druglabels": 0.50, "user": 0.65},
        description="Per-KB minimum calibrated retrieval confidence of the best surviving chunk (guidelines and "
        "druglabels chosen on the train split by `eval-guidelines --calibrate`; see docs/GUIDELINE_QA.md).",
    )
    default_threshold: float = Field(0.65, ge=0, le=1, description="Threshold for a KB missing from `thresholds`.")
    calib_midpoint: dict[str, float] = Field(
        {"guidelines": 0.8641, "druglabels": 0.8583, "default": 0.8612},
        description="Logistic calibration: dense cosine at which confidence is 0.5, per KB (`default` for others; "
        "fitted, see docs/GUIDELINE_QA.md).",
    )
    calib_scale: dict[str, float] = Field(
        {"guidelines": 0.01065, "druglabels": 0.01153, "default": 0.0111},
        description="Logistic calibration: cosine change that moves the log-odds by 1, per KB (fitted).",
    )
    calib_l2: float = Field(1.0, ge=0, description="L2 penalty on the logistic slope when refitting calibration.")
    calib_false_pass_weight: float = Field(
        0.5,
        ge=0,
        description="Threshold choice when refitting: maximise answer rate minus this times the share of "
        "out-of-domain questions whose retrieval would pass (they must get past the router first).",
    )
    calib_model: dict[str, dict[str, float]] = Field(
        _CALIB_MODEL,
        description="Per KB: logistic confidence model over retrieval features (`intercept`, `cosine`, `margin`, "
        "`section_match`, `query_tokens`), fitted on the train split by `eval-guidelines --calibrate`. A KB "
        "without one uses the cosine-only curve (`calib_midpoint`, `calib_scale`).",
    )
    answer_calib: dict[str, float] = Field(
        _ANSWER_CALIB,
        description="Shown confidence of an answer that quotes a doctor's document: coefficients of the "
        "monotone P(correct) map over the answer's evidence features (`intercept` and any of `retrieval`, `cosine`, "
        "`focus`, `space`, `sources`, `other_population`, `bullets`; core/guideline/answer_confidence.py), fitted on "
        "the train split of the real-document benchmark by bench/fit_answer_confidence.py. Empty: the retrieval "
        "confidence is shown. An answer whose every bullet quotes a curated knowledge base shows the retrieval confidence "
        "(demo-KB calibration), with or without spaces.",
    )

    # Generation.
    max_bullets: int = Field(4, ge=1, description="Most bullets in an answer.")
    bullets_per_source: int = Field(
        2, ge=1, description="Extractive, when the evidence comes from several documents: most bullets drafted from "
        "each document (each document's answer is drafted on its own, never merged with another's).",
    )
    dose_band_tolerance: float = Field(
        3.0, gt=1.0, description="An uploaded document's fixed dose for a weight band and the curated label's dose in "
        "mg/kg are different slots; the band's dose is a conflict only when, read as mg/kg over the band, it lies more "
        "than this many times outside the label's mg/kg range for the same drug and patient group.",
    )
    max_sources: int = Field(
        4, ge=1, description="Most documents an answer draws on: beyond the best evidence_chunks, the best chunk of each "
        "other document whose confidence passes its KB's threshold is kept, up to this many documents.",
    )
    evidence_per_source: int = Field(
        2, ge=1, description="Most chunks each document other than the best one keeps in the evidence: its best, and "
        "further ones that mention one of the question's focus words, so the passage each document "
        "answers with reaches the comparison between documents (sources.by_document).",
    )
    coverage_floor: float = Field(
        0.65, ge=0, le=1, description="Scope by coverage: a question the router calls out of domain is still answered "
        "when every topic word is a word of the loaded documents (as written, as an abbreviation they define, "
        "misspelt or contracted), a loaded document's calibrated retrieval confidence reaches this floor, and the "
        "evidence mentions enough of the focus (coverage_focus_share); every gate still applies.",
    )
    coverage_everyday_words: int = Field(
        1, ge=0, description="Scope by coverage: most everyday English words (whole words of the general WordPiece "
        "vocabulary shipped with all-MiniLM-L6-v2) a question may use that no loaded document contains; a "
        "specialist word no document contains always leaves the question out of domain.",
    )
    coverage_min_known_words: int = Field(
        3, ge=0, description="Scope by coverage: a question using an everyday word no loaded document contains needs "
        "at least this many words the documents know (\"malaria treatment\" is not covered by a TB guideline).",
    )
    naming_elsewhere_chunks: int = Field(
        3, ge=0, description="A question names a loaded document by a word of its title, issuer or file name only when "
        "no other document's identity has that word and other documents' chunks use it at most this often (so "
        "\"health workers\" in a manual's title does not name the manual); then only that document answers.",
    )
    coverage_focus_share: float = Field(
        0.5, ge=0, le=1, description="Scope by coverage: share of the question's focus words the covering evidence must "
        "mention once the loaded documents know every topic word (all of them when no vocabulary can be read).",
    )
    min_sentence_tokens: int = Field(4, ge=1, description="Evidence sentences with fewer key tokens are not used.")
    max_sentence_chars: int = Field(600, ge=40, description="Longer evidence sentences are not used as bullets.")
    extractive_chunk_weight: float = Field(
        0.5, ge=0, description="Extractive: weight of the chunk's rank score added to a sentence's question overlap."
    )
    min_question_overlap: float = Field(
        0.2, ge=0, le=1, description="Extractive: a sentence must share this share of the question's key tokens."
    )
    llm_max_tokens: int = Field(200, ge=16, description="Token budget of the bullet-writing LLM call.")
    patient_max_tokens: int = Field(200, ge=16, description="Token budget of the patient-summary LLM call.")
    llm_evidence_sentences: int = Field(
        8, ge=1, description="Most relevant evidence sentences (numbered) put in the bullet-writing LLM prompt."
    )
    llm_empty_fallback: bool = Field(
        True,
        description="When the LLM drafts no bullet (`INSUFFICIENT EVIDENCE`, or nothing parseable) although the "
        "evidence passed the confidence threshold, draft with the extractive composer instead (same gates). "
        "Bullets the LLM wrote but the gates rejected still end in ABSTAIN.",
    )
    patient_summary: Literal["llm", "glossary", "off"] = Field(
        "llm",
        description="Patient summary: written by the LLM when one is configured (`llm`), always the glossary "
        "rewording (`glossary`), or none (`off`). Either way the entity guard checks it.",
    )

    slot_patterns: dict[str, list[str]] = Field(
        vocab.SLOT_PATTERNS,
        description="Answer slot -> question patterns (regular expressions). A slot decides which sentences answer: "
        "a dose needs a number and a unit, a duration a time span, a regimen a drug or regimen code, a "
        "contraindication or boxed warning that label section, a result's meaning the asked result (positive, "
        "negative) with what it means or does not show.",
    )
    yes_no_starts: list[str] = Field(
        vocab.YES_NO_STARTS, description="First words of a yes/no question (answered Yes or No with the evidence)."
    )
    negation_cues: list[str] = Field(
        vocab.NEGATION_CUES, description="Words that flip polarity when deciding Yes or No (whole words)."
    )
    question_filler: list[str] = Field(
        vocab.QUESTION_FILLER,
        description="Question words that carry no topic; the other key words are the focus every answer sentence "
        "must mention (by word start).",
    )
    section_names: dict[str, str] = Field(
        vocab.SECTION_NAMES,
        description="LOINC section code -> its name in plain statements (\"The X label lists no contraindications\").",
    )
    slot_fill_weight: float = Field(
        0.25, ge=0, description="Extractive: added to a sentence that fills the slot fully (a dose with its population)."
    )
    yes_no_min_coverage: float = Field(
        0.5, ge=0, le=1, description="A yes/no question is answered Yes or No only when the best bullet mentions "
        "this share of the question's focus words (otherwise the bullets stand alone)."
    )
    focus_weight: float = Field(
        0.0, ge=0, description="Weight of the share of the question's focus words a chunk (choosing the evidence) "
        "or a sentence (choosing the bullets) mentions."
    )
    populations: dict[str, str] = Field(
        vocab.POPULATIONS,
        description="Patient groups a question may name -> regular expression of the words documents use for them "
        "(children: pediatric, infants...). Extractive: see population_weight.",
    )
    population_cues: dict[str, str] = Field(
        vocab.POPULATION_CUES,
        description="Patient groups a question places the patient in without naming them -> regular expression read "
        "in the question only (jaundice, DILI, raised ALT: hepatic). Never read in passages, where such words are "
        "often a side effect or a monitoring rule, not a patient group. A hand-written floor: see GUIDELINE_QA.md.",
    )
    population_weight: float = Field(
        0.5, ge=0, description="Extractive: added to a sentence that names (itself or in its section heading) a "
        "patient group the question names, so \"for children\" quotes the pediatric line before the adult one.",
    )
    population_evidence_weight: float = Field(
        0.1, ge=0, description="Choosing the evidence chunks: added to the rank score of a chunk whose section heading "
        "names a patient group the question names (\"Urine LF-LAM in People Living with HIV\" for a question on HIV).",
    )
    conditions: dict[str, str] = Field(
        vocab.CONDITIONS,
        description="Diseases a question may be about -> regular expression of their names. A question naming one "
        "is answered only by sentences whose nearest context naming a disease (the sentence, its section headings, "
        "its document title) names that one: \"tuberculous meningitis\" never quotes a pneumonia line on meningitis.",
    )
    focus_prefix: int = Field(
        5, ge=3, description="Characters of a word compared when checking a sentence mentions the question's focus."
    )

    # Verification gates.
    tau: float = Field(0.25, ge=0, le=1, description="Entailment gate: least |K_evidence ∩ K_bullet| / |K_bullet|.")
    min_alignment: float = Field(
        0.1, ge=0, le=1, description="A bullet whose best claim-snippet Jaccard is below this is unsupported."
    )
    high_risk_terms: list[str] = Field(
        vocab.HIGH_RISK_TERMS,
        description="A bullet with one of these (whole words) absent from the evidence is rejected.",
    )
    medical_terms: list[str] = Field(
        vocab.MEDICAL_TERMS,
        description="Curated medical entities for the patient-summary guard (with drug names and abbreviations).",
    )
    patient_glossary: dict[str, str] = Field(
        vocab.PATIENT_GLOSSARY,
        description="Extractive patient summary: clinical phrase -> plain-language replacement.",
    )
    stopwords: list[str] = Field(vocab.STOPWORDS, description="Words removed before token overlap and Jaccard.")

    # Evaluation (`python -m core eval-guidelines`).
    eval_path: Path = Field(
        Path("tests/data/guideline_qa_eval.json"), description="Evaluation set (relative to the repository root)."
    )
    target_answer_rate: float = Field(
        0.90, ge=0, le=1, description="Target (test split): least answer rate on answerable items."
    )
    target_fact_rate: float = Field(
        0.85, ge=0, le=1, description="Target (test split): least share of answers containing the expected fact."
    )
    target_section_rate: float = Field(
        0.90, ge=0, le=1, description="Target (test split): least share of answers citing the expected section."
    )
    target_ood_abstention: float = Field(
        1.0, ge=0, le=1, description="Target: least abstention rate on out-of-domain items."
    )
    target_contamination: float = Field(
        0.0, ge=0, le=1, description="Target: most share of drug answers citing another drug's label."
    )
    target_unsupported: float = Field(
        0.0, ge=0, le=1, description="Target: most share of delivered sentences failing the support checks."
    )

    @staticmethod
    def kb_key(kb: str, table: dict[str, object]) -> str:
        """The key ``kb`` reads its values under in ``table``: a doctor's space ``user.<slug>`` uses ``user``'s."""
        if kb not in table and kb.startswith("user."):
            return "user"
        return kb

    def calibration(self, kb: str) -> tuple[float, float]:
        """``(midpoint, scale)`` of the logistic confidence curve for ``kb``."""
        return (
            self.calib_midpoint.get(self.kb_key(kb, dict(self.calib_midpoint)), self.calib_midpoint["default"]),
            self.calib_scale.get(self.kb_key(kb, dict(self.calib_scale)), self.calib_scale["default"]),
        )

    def threshold(self, kb: str) -> float:
        """Minimum calibrated retrieval confidence for ``kb`` (a doctor's space: the ``user`` value)."""
        return self.thresholds.get(self.kb_key(kb, dict(self.thresholds)), self.default_threshold)

    def confidence_model(self, kb: str) -> dict[str, float] | None:
        """The fitted confidence model of ``kb`` (a doctor's space: ``user``'s), or ``None``."""
        return self.calib_model.get(self.kb_key(kb, dict(self.calib_model)))
