"""What a question's words mean to :mod:`core.answer.understand` (data only): intents, shorthand, cue patterns.

The intents a question can have, the shorthand a doctor types ("pt", "f/u", "c/w")
and the cue patterns checked in a fixed precedence to find the intent. The
understanding logic itself, and the condition and finding vocabulary, stay in
:mod:`core.answer.understand` and :mod:`core.answer.lexicon`.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["CUES", "SHORTHAND", "SHORT_WORDS", "Intent"]

Intent = Literal[
    "injection",
    "off_topic",
    "outcomes",
    "count",
    "differential",
    "severity",
    "prior",
    "why_similar",
    "treatment",
    "prediction",
    "general_knowledge",
    "demographics",
    "summary",
]

# Shorthand spelled with punctuation (regular expression -> expansion), applied before tokenising.
SHORTHAND: tuple[tuple[str, str], ...] = (
    (r"\bf/u\b", " follow-up "),
    (r"\bc/w\b", " compared with "),
    (r"\bw/o\b", " without "),
    (r"\bw/", " with "),
    (r"\br/o\b", " rule out "),
    (r"\bh/o\b", " history of "),
    (r"\bs/p\b", " status post "),
    (r"#\s*(?:of\b)?", " number of "),
    (r"\bno\.\s*(?:of\b)?", " number of "),
    (r"\bvs\.?\b", " versus "),
    (r"\b5-?yr\b", " five year "),
    (r"(?<=[a-z])\s*/\s*(?=[a-z])", " or "),  # "foot drop / weakness", "age/sex": alternatives
)
# Shorthand words and chat spellings -> what they stand for.
SHORT_WORDS: dict[str, str] = {
    "pt": "patient", "pts": "patients", "px": "prognosis", "dx": "diagnosis", "ddx": "differential",
    "tx": "treatment", "rx": "treatment", "mgmt": "management", "mx": "management", "sim": "similar", "sev": "severity",
    "abx": "antibiotics", "recs": "recommendations", "r": "are", "u": "you", "wud": "would", "wat": "what",
    "wats": "what is", "wy": "why", "y": "why", "wil": "will", "whats": "what is", "hows": "how is", "ur": "your", "gonna": "going to", "hx": "history",
    "prev": "previous", "fn": "function", "sx": "symptoms", "fu": "follow-up", "mets": "mets", "approx": "approximately", "yrs": "years", "yr": "year", "imgs": "images", "ct": "ct",
}

# Cue patterns per intent, checked in this order (the first that matches wins).
CUES: tuple[tuple[Intent, str], ...] = (
    (
        "injection",
        r"(\b(ignore|forget|disregard|override|bypass)\b.{0,40}\b(rules?|instructions?|evidence|policy)\b|"
        r"\bsystem\s*(?:override)?\s*:|\badmin mode\b|\bnew (?:instruction|policy|task)s?\b|</?\s*context\s*>|"
        r"\byou are now\b|\brules? (?:are )?(?:suspended|lifted|disabled)\b|\bauthori[sz]e you\b|\b\w+ mode (?:enabled|on)\b)",
    ),
    (
        "off_topic",
        r"\b(weather|joke|haiku|poem|song|lunch|dinner|coffee|restaurant|password|wi-?fi|billing|invoice|share price|stock|"
        r"cricket|football|soccer|movie|film night|what time is it|book (?:the|a|me)|order me|parking|holiday|recipe)\b",
    ),
    (
        "treatment",
        r"\b(treat\w*|therap\w*|manag\w*|medicat\w*|medicines?|drugs?|doses?|dosing|dosage|prescri\w*|antibiotics?|steroids?|"
        r"inhalers?|bronchodilat\w*|rehab\w*|physio\w*|surg\w*|\w+ectomy|\w+otomy|drains?|thromboly\w*|alteplase|"
        r"tpa|tamoxifen|chemo\w*|radiotherap\w*|radiation therapy|ablation|tace|laser|anti-?vegf|injections?|"
        r"excision|excise|margins?|dmt|disease-modifying|regimen|candidate for|next step|operat\w*|"
        r"(?:should|shall|can|do) (?:we|i|he|she|they) (?:start|give|go on|insert|use|stop|continue|switch)|"
        r"should (?:he|she|they|the patient) (?:go on|be (?:given|started|put))|what should we give|"
        r"recommendations? for (?:this|the) patient|(?:ok|safe|appropriate|suitable|indicated|fine) (?:for|to give|to start) (?:him|her|them|this patient)|\w+(?:mab|nib|cillin|mycin|pril|olol|statin|parin|xaban|plase))\b",
    ),
    (
        "general_knowledge",
        r"\b(literature|studies (?:show|say|suggest)|research|study shows?|published|trials?|guidelines?|in general|general population|"
        r"incidence|prevalence|sensitivity|specificity|pathophysiology|aetiology|etiology|epidemiology|"
        r"worldwide|globally|nationally|textbook|evidence says|what causes|define|definition of|"
        r"what (?:is|are) (?:a|an) (?!good|close|similar)\w+|what does \w+ mean)\b",
    ),
    (
        "prediction",
        r"\b(will (?:he|she|they|this patient|the patient|this pt|it) |going to be|chances?|odds|"
        r"is (?:he|she|this patient|the patient) likely|likely to (?:survive|recover|die))",
    ),
    (
        "count",
        r"\b(how many|how (?:often|frequently)|number of|what (?:proportion|fraction|percentage|share)|"
        r"what % |count of|any of them .* how many|out of the)\b",
    ),
    (
        "prior",
        r"\b(prior|previous\w*|before|earlier|last (?:time|scan|study|imaging|report|exam|mri|ct|cxr|x-ray|film|visit)|"
        r"interval|"
        r"since (?:the )?last|old report|baseline|getting worse|change since|change from)\b",
    ),
    (
        "why_similar",
        r"\b(why (?:are|were|is|these|those|this|the)\b.*\b(similar|match\w*|picked|chosen|cases)|"
        r"what makes (?:them|these|it)|how (?:close|good|similar|reliable) (?:are|were|is)|similarity scores?)",
    ),
    (
        "demographics",
        r"\b(how old|ages?|aged|sex|gender|male|female|men|women|demographic\w*|older|younger|elderly|youngest|oldest|"
        r"m or f|f or m|m versus f|f versus m|ratio)\b",
    ),
    (
        "severity",
        r"\b(sever\w*|critical\w*|serious\w*|worried|worry|concern\w*|sick|how bad|urgent\w*|emergenc\w*|worst|"
        r"life-?threatening|acuity)\b",
    ),
    (
        "differential",
        r"\b(diagnos\w*|differential|what else|agree\w*|is (?:this|it) really|consistent with|could (?:this|it) be|"
        r"confiden\w*|ai (?:read|reading)|rule out|likely diagnosis|what is this|is (?:this|it) (?:a |an )?\w+)",
    ),
    (
        "outcomes",
        r"\b(outcome\w*|prognos\w*|course|happen\w*|turn(?:ed)? out|do over time|how (?:did|do|does) .* do|"
        r"recover\w*|surviv\w*|follow-up|fare|end(?:ed)? up|results?)\b",
    ),
)
