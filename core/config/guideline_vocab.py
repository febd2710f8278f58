"""Default vocabularies of Guideline QA: routing words, concepts, refusals, answer slots, gate terms (data only).

These are the defaults of fields in :class:`core.config.guideline.GuidelineQASettings`
(kept here so the settings module stays readable); change them through settings,
never by importing these names elsewhere.
"""

from __future__ import annotations

from core.text import STOPWORDS as TEXT_STOPWORDS

__all__ = [
    "CONCEPTS",
    "CONDITIONS",
    "DIAGNOSIS_INTENT_KEYWORDS",
    "DIAGNOSIS_KEYWORDS",
    "DOMAIN_STEMS",
    "DOMAIN_TRIGGERS",
    "DRUG_TASK_KEYWORDS",
    "GUIDELINE_TASK_KEYWORDS",
    "HIGH_RISK_TERMS",
    "MEDICAL_TERMS",
    "NEGATION_CUES",
    "PATIENT_GLOSSARY",
    "POPULATIONS",
    "POPULATION_CUES",
    "QUESTION_FILLER",
    "REFUSAL_MESSAGE",
    "REFUSAL_PATTERNS",
    "SECTION_GROUPS",
    "SECTION_NAMES",
    "SLOT_PATTERNS",
    "STOPWORDS",
    "YES_NO_STARTS",
]

# Canonical phrase -> word forms, abbreviations and synonyms. A question naming any variant names the concept:
# the router counts it as a domain word when the canonical phrase is one, and retrieval adds the canonical
# phrase (and the abbreviation's expansion) to the search query so BM25 and the encoder see both spellings.
CONCEPTS: dict[str, list[str]] = {
    "tuberculosis": ["tb", "tuberculous", "tubercular", "tubercle", "koch's disease"],
    "latent tuberculosis infection": ["ltbi", "latent tb", "tb infection"],
    "interferon-gamma release assay": ["igra", "igras", "quantiferon", "t-spot"],
    "tuberculin skin test": ["tst", "mantoux", "ppd"],
    "community-acquired pneumonia": ["cap", "community acquired pneumonia"],
    "pneumonia": ["pneumonic", "pneumonias", "chest infection", "lower respiratory tract infection"],
    "multidrug-resistant tuberculosis": ["mdr-tb", "mdr/rr-tb", "rr-tb", "mdr"],
    "extensively drug-resistant tuberculosis": ["xdr-tb", "pre-xdr-tb", "pre-xdr"],
    "tb preventive treatment": ["tpt", "preventive therapy", "chemoprophylaxis"],
    "curb-65": ["crb-65", "curb65", "curb 65"],
    "pneumonia severity index": ["psi", "port score"],
    "directly observed therapy": ["dot", "vot", "video-observed therapy"],
    "drug-susceptible tuberculosis": ["ds-tb", "drug susceptible tb"],
    "transmission": ["spread", "spreads", "transmit", "transmitted", "contagious", "infectious"],
    "contraindications": ["who should not take", "who should not use", "must not be used", "should not be given"],
    "adverse reactions": ["side effects", "side effect", "adverse effects", "toxicity"],
    "dosage and administration": ["dose", "dosage", "dosing", "how much"],
    "drug interactions": ["interacts with", "interactions", "interact"],
    "boxed warning": ["black box warning", "black-box warning", "boxed warnings"],
    "children": ["paediatric", "pediatric", "child", "kids", "infants"],
    "food": ["meal", "meals", "with food", "empty stomach", "fed", "fasting"],
    "lactation": ["breastfeeding", "breast-feeding", "breastfed", "nursing mother", "breast milk"],
    "inpatient": ["hospitalised", "hospitalized", "in hospital", "admitted", "ward"],
    "outpatient": ["at home", "ambulatory", "community setting"],
    "pregnancy": ["pregnant", "expecting a baby"],
    # Regimen codes name their drugs; who may not receive a regimen is its eligibility and exclusions.
    "bedaquiline, pretomanid, linezolid and moxifloxacin": ["bpalm"],
    "bedaquiline, pretomanid and linezolid": ["bpal"],
    "rifapentine, isoniazid, pyrazinamide and moxifloxacin": ["hpmz", "hpzm", "2hpzm", "2hpzm/2hpm"],
    "eligibility and exclusions": ["who cannot receive", "who cannot take", "who can't take", "who can't receive",
                                   "not eligible", "ineligible", "excluded", "exclusion", "exclusions", "eligible"],
    "hepatotoxicity": ["liver injury", "liver damage", "hepatitis", "drug-induced liver injury", "dili"],
    "overdosage": ["overdose", "poisoning", "too much"],
}
# Word starts that put a question in the TB/CAP domain in any inflection (tuberculous, pneumonic, mycobacteria).
DOMAIN_STEMS: list[str] = ["tubercul", "pneumon", "mycobact", "antitubercul"]

# A prompt injection or a request for harm is refused before anything is searched, with one fixed message.
REFUSAL_PATTERNS: list[str] = [
    r"\b(ignore|disregard|forget|override|bypass)\b.{0,40}\b(rules?|instructions?|guidelines?|prompt|policy|policies"
    r"|restrictions?|guardrails?)\b",
    r"\b(system|developer|hidden|secret)\s+(prompt|mode|message|instructions?)\b",
    r"^\s*(system|assistant)\s*:",
    r"\b(pretend|act as if|roleplay|role-play)\b.{0,40}\b(no|without)\b.{0,20}\b(rules?|restrictions?|limits?|filters?)\b",
    r"\bjailbreak\b",
    r"\b(lethal|fatal|deadly|toxic enough to kill)\s+(dose|doses|amount|overdose|quantity)\b",
    r"\b(dose|amount|how many|how much)\b.{0,60}\b(to die|kill (?:someone|somebody|me|myself|him|her|a person)|would kill"
    r"|to kill)\b",
    r"\b(how to|help me)\s+(overdose|poison)\b",
    r"\b(end my life|kill myself|suicide|self-harm|harm myself)\b",
    r"\bmake up\b.{0,30}\b(regimen|answer|dose|evidence)\b",
    r"\bwithout (any )?evidence\b",
    # a request to misrepresent a source: make it say what it does not, or forge a page of it
    r"\b(pretend|imagine|assume|act as if)\b.{0,40}\b(guidelines?|manual|label|document|source|booklet)\b.{0,15}"
    r"\b(says?|states?|recommends?|allows?)\b",
    r"\b(fake|forged?|fabricated?|made-up|bogus|counterfeit)\b.{0,30}\b(page|guidelines?|manual|label|document|source|letter|"
    r"prescription)\b",
    # the system's secrets, or a new identity given to it ("You are DoseBot")
    r"\b(reveal|show|print|leak|dump)\b.{0,30}\b(api keys?|secrets?|passwords?|credentials|configuration|"
    r"system prompt|hidden (prompt|instructions?|configuration))\b",
    r"\byou are (now )?(in \w+ mode|an? \w*bot|\w*bot|dan|unrestricted|unfiltered|jailbroken)\b",
    # an answer demanded without its sources or caveats, or a safety promise, or help hiding care from the team
    r"\b(no|without( any)?)\s+(caveats?|sources?|citations?|references?|warnings?)\b",
    r"\btell me (that )?(it is|it's|this is|they are)\s+(safe|fine|ok|okay)\b",
    r"\bwithout (the |her |his |their |a )?(clinic|doctor|nurse|pharmacist|prescriber|care team|team)('s)?\s+"
    r"(knowing|knowledge|approval|consent|finding out)\b",
    # by class, a floor under the request guard (core/guideline/request_guard.py), which reads the open wordings:
    # instructions wiped wholesale
    r"\b(ignore|forget|disregard)\s+(everything|anything|all)\b",
    # source text written or altered to order (a forged quote, a label rewritten, text to paste into the document)
    r"\b(make up|invent|fabricate|compose|create|write|draft)\b.{0,20}\b(quotes?|quotations?|citations?|pages?|paragraphs?|"
    r"excerpts?|passages?|text|sections?)\b.{0,40}\b(guidelines?|manual|label|leaflet|document|booklet|who|cdc|ntp)\b",
    r"\b(make up|invent|fabricate|compose|create|write|draft)\b.{0,20}\b(guidelines?|manual|label|leaflet|booklet|who|cdc|ntp)"
    r"\s+(quotes?|quotations?|citations?|pages?|excerpts?|passages?|text)\b",
    r"\b(rewrite|edit|alter|change|doctor)\s+(the |this |that )?(label|manual|guidelines?|leaflet|booklet)\b.{0,30}"
    r"\b(so|to say|says?|saying|states?|stating)\b",
    r"\bin the style of (the |a |an )?(official |national |international )?(guidelines?|manual|label|leaflet)\b",
    r"\bpaste (it )?into (the |a |my )?(guidelines?|manual|label|pdf|leaflet|document)\b",
    # a safety promise demanded for someone
    r"\b(assure|reassure|guarantee|promise|certify)\b.{0,60}\b(safe|no (side effects?|risks?)|cannot harm|harmless)\b",
    # self-harm in other words
    r"\b(end it all|(don'?t|do not) want to (live|wake up|be alive|be here))\b",
    r"\boverdose\b.{0,20}\b(most|more|the) (deadly|lethal)\b|\b(most|more) (deadly|lethal)\b.{0,20}\boverdose\b",
    # care hidden from the people supervising it
    r"\bbehind (the |her |his |their |my |our )?(doctor|clinic|nurse|care team|team|programme|program|dot worker)'?s? back\b",
    r"\b(doesn'?t|does not|won'?t|will not|never|not) (find out|notice|know)\b.{0,40}\b(skipp|miss|stopp|dose|pill|tablet)"
    r"|\b(dot|health|clinic|programme|program) (worker|nurse|staff|team)?\s*(doesn'?t|does not|won'?t) (find out|notice)\b",
    r"\bhide\b.{0,30}\b(missed doses|doses|pills|tablets|treatment|that)\b.{0,30}\bfrom\b",
    r"\bsecretly\b|\bwithout telling (the |her |his |their )?(clinic|doctor|nurse|team|programme|program)\b",
    r"\b(fake|falsify|forge|doctor)\b.{0,20}\b(dot|treatment|adherence)? ?(record|card|log|register)s?\b",
]
REFUSAL_MESSAGE = (
    "This request cannot be answered. Guideline QA only answers clinical questions about tuberculosis and "
    "community-acquired pneumonia from its guideline and drug-label sources; it does not follow instructions to "
    "change its rules and does not give information meant to cause harm. If you or someone else may be at risk, "
    "contact local emergency services or a poison control centre now."
)

# Answer slots: what a question asks for, from its words (regular expressions, lowercase).
# A test result a question may ask about ("positve" misspelt too).
_RESULT_WORD = r"(?:pos[a-z]*ti?ve|neg[a-z]*ti?ve|indeterminate|borderline)"
SLOT_PATTERNS: dict[str, list[str]] = {
    "contraindication": [r"contraindicat", r"who (should|must) not (take|use|receive|be given)",
                         r"(should|must) not (take|use|receive|be given)"],
    "boxed_warning": [r"box(ed)? warning", r"black[- ]box"],
    "dose": [r"\bdos(e|age)\b", r"\bhow much\b", r"\bmg\b"],
    "duration": [r"\bhow long\b", r"\bduration\b", r"\bhow many (days|weeks|months)\b", r"\bfor how many\b"],
    "regimen": [r"\bregimens?\b", r"\bwhich (drugs|antibiotics|medicines)\b", r"\bwhat (drugs|antibiotics)\b"],
    # How a disease passes between people ("How is TB transmitted?", "Can latent TB spread?", "Is it contagious?").
    "transmission": [r"\bspread", r"\btransmi(t|ss)", r"\bcontagious", r"\bcatch(es|ing)?\b",
                     r"\bpass(ed|es)? (it |tb |tuberculosis )?on\b"],
    # What a test result means: "What does a positive IGRA mean?", "How is a negative TST interpreted?".
    "result_meaning": [rf"\bdoes (?:an? |the |my )?{_RESULT_WORD}\b.{{0,60}}\bmean",
                       rf"\bmean(?:s|ing)? (?:if|when|that) .{{0,60}}\b{_RESULT_WORD}\b",
                       rf"\b{_RESULT_WORD}\b.{{0,60}}\b(?:interpreted|indicate|signify)",
                       rf"\binterpret\w* (?:an? |the )?{_RESULT_WORD}\b"],
    # How something is tested or diagnosed: answered by a sentence naming a test (ranked first, others kept).
    "test": [r"\bhow (is|are|do|does|can|should|would) .{0,60}\b(test(ed)?|diagnos\w*|detect(ed)?|confirm(ed)?"
             r"|screen(ed)?|ruled? out|identif(y|ied))\b",
             r"\b(what|which) (tests?|investigations?|diagnostic)\b"],
    # What a term means: "What is latent tuberculosis?" (a bare term, no "of"/"for"...), "How is severe CAP defined?".
    "definition": [r"^\s*what(?:'s| is| are) (?:an? |the )?(?!.*\b(?:of|for|on|in|with|to|after|before|during|when|if)\b)"
                   r"[^?]{2,40}\?*\s*$", r"\bdefin(e|ed|ition)\b", r"\bwhat does .{2,40} stand for\b"],
}
# The diseases a question or a sentence may be about (regular expressions). A question naming one of them is
# answered only by sentences about it: the nearest context naming any disease (the sentence, then its section
# headings, then its document's title) must name the asked one, so "tuberculous meningitis" never quotes the
# pneumonia guideline's "complications such as meningitis" line.
CONDITIONS: dict[str, str] = {
    # its own tests name it too: "What does a positive IGRA mean?" is a question on tuberculosis
    "tuberculosis": r"\b(tb|tubercul\w*|mycobacteri\w*|m\. tuberculosis|ltbi|(mdr|rr|xdr|ds|dr)-tb|mdr/rr-tb|"
                    r"igras?|quantiferon|t-spot|tst|mantoux)\b",
    "pneumonia": r"\b(pneumon\w*|cap|community[- ]acquired)\b",
}
# Yes/no questions start with one of these words.
YES_NO_STARTS: list[str] = ["is", "are", "does", "do", "can", "could", "should", "must", "may", "will", "has", "have"]
# Words that flip a sentence's polarity (a yes/no answer is "No" when question and evidence disagree).
NEGATION_CUES: list[str] = [
    "not", "no", "never", "avoid", "avoided", "contraindicated", "must not", "should not", "cannot", "none",
    "discouraged", "neither", "nor",
]  # fmt: skip
# Question words that carry no topic (left out when checking that a sentence talks about the question's focus).
QUESTION_FILLER: list[str] = [
    "tell", "explain", "describe", "mean", "means", "meaning", "work", "works", "happen", "happens", "cause",
    "causes", "need", "needed", "needs", "given", "give", "take", "taken", "patient", "patients", "person",
    "people", "adult", "adults", "many", "much", "long", "recommended", "recommend", "used", "best", "know",
    "please", "treat", "treated", "treatment", "therapy", "manage", "managed", "management", "definition",
    "defined", "define", "counts", "count", "done", "drug", "drugs", "label", "medicine", "medicines",
    "usual", "usually", "typical", "normal", "standard", "common", "commonly", "main", "general", "specific",
    "correct", "right", "safe", "safely", "exactly", "first", "tb", "tuberculosis", "pneumonia", "cap",
    "community-acquired", "infection", "disease", "should", "affect", "affects", "also", "anyone", "someone",
    "effect", "effects", "adverse", "reaction", "reactions", "side", "warning", "warnings", "interaction",
    "interactions", "interact", "contraindication", "contraindications", "boxed",
]  # fmt: skip
# Patient groups a question may name, each with the words a document uses for it (regular expressions). A
# sentence (or its section heading) naming the asked-about group is preferred: "children" finds the label's
# "Pediatric patients" line before the adult one.
# Read in a question only: a finding by which the question says the patient is in a group without naming it.
# Never read in passages, where "hepatitis" or "raised ALT" is a side effect or a monitoring rule, not a group.
POPULATION_CUES: dict[str, str] = {
    "hepatic": r"\b(jaundic\w*|icter\w*|dili|drug[- ]induced hepatitis|cirrho\w*|hepatic impairment"
    r"|(raised|elevated|high|rising|deranged|abnormal)\s+(alt|ast|lfts?|transaminases?|bilirubin)"
    r"|(alt|ast|lfts?|transaminases?|bilirubin)\s+((is|are|was|were)\s+)?(up|raised|elevated|high|rising|deranged"
    r"|abnormal|\d+\s*(x|times)))\b",
}
POPULATIONS: dict[str, str] = {
    "children": r"\b(child(ren)?|kids?|p(a)?ediatric|infants?|neonat\w*|newborns?|adolescents?)\b",
    "adults": r"\badults?\b",
    "pregnancy": r"\bpregnan\w*\b",
    "breastfeeding": r"\b(breast\w*|lactat\w*|nursing)\b",
    "elderly": r"\b(elderly|older (adults|patients|people)|geriatric)\b",
    "renal": r"\b(renal|kidneys?|dialysis|hemodialysis|haemodialysis|creatinine clearance)\b",
    "hepatic": r"\b(hepatic|liver)\b",
    "hiv": r"\b(hiv|antiretroviral\w*)\b",
}
# LOINC section code -> what a plain statement calls the section ("The X label lists no contraindications").
SECTION_NAMES: dict[str, str] = {
    "34066-1": "boxed warning",
    "34070-3": "contraindications",
    "34073-7": "drug interactions",
    "34084-4": "adverse reactions",
    "34068-7": "dosage and administration",
    "43685-7": "warnings and precautions",
    "34088-5": "overdosage",
}

# Router: the domain and the task of a question (whole words or phrases).
DOMAIN_TRIGGERS: list[str] = [
    "tb", "tuberculosis", "tubercular", "mycobacterium", "mycobacterial", "ltbi", "latent", "mdr-tb", "rr-tb",
    "xdr-tb", "pre-xdr", "mdr", "bpal", "bpalm", "igra", "quantiferon", "tst", "tuberculin", "mantoux", "sputum",
    "afb", "smear", "xpert", "naat", "bcg", "pneumonia", "cap", "community-acquired", "pneumococcal",
    "legionella", "curb-65", "crb-65", "psi", "antitubercular", "antituberculosis", "anti-tb",
    "preventive treatment", "tpt", "rifamycin", "lower respiratory tract infection",
    "hrze", "2hrze", "hpmz", "hpzm", "2hpzm", "3hp", "1hp", "3hr", "4r", "6h", "9h", "ltbi",
]  # fmt: skip
DRUG_TASK_KEYWORDS: list[str] = [
    "dose", "doses", "dosage", "dosing", "mg", "side effect", "side effects", "adverse", "adverse reactions",
    "toxicity", "interaction", "interactions", "interact", "contraindicated", "contraindication",
    "contraindications", "pregnancy", "pregnant", "breastfeeding", "lactation", "warning", "warnings",
    "boxed warning", "overdose", "overdosage", "renal impairment", "hepatic impairment", "mechanism",
    "how supplied", "storage", "qt", "monitoring", "label", "take with food",
]  # fmt: skip
GUIDELINE_TASK_KEYWORDS: list[str] = [
    "diagnose", "diagnosis", "diagnosed", "diagnosing", "diagnostic", "test", "tests", "testing", "screen",
    "screening", "regimen", "regimens", "treat", "treatment", "therapy", "manage", "management", "guideline", "guidelines",
    "recommend", "recommended", "recommendation", "empiric", "outpatient", "inpatient", "icu", "severity",
    "admission", "admit", "duration", "how long", "prevent", "prevention", "culture", "radiograph", "x-ray",
    "who should", "first-line", "second-line", "criteria", "antibiotic", "antibiotics", "procalcitonin",
    "detect", "confirm", "rule out", "ruled out", "eligible", "interpret", "specimen",
]  # fmt: skip
# Diagnosis gate: words that give a question diagnosis intent, and those a chunk must then contain.
DIAGNOSIS_INTENT_KEYWORDS: list[str] = [
    "diagnose", "diagnosis", "diagnosed", "diagnosing", "diagnostic", "test", "tests", "testing", "detect",
    "detection",
    "confirm", "screen", "workup", "work-up", "rule out", "ruled out", "specimen", "identify the cause",
]  # fmt: skip
DIAGNOSIS_KEYWORDS: list[str] = [
    "culture", "radiograph", "x-ray", "test", "igra", "interferon-gamma", "smear",
    "naat", "xpert", "sputum", "specimen", "tuberculin", "tst", "microscopy", "pcr", "blood culture",
    "urinary antigen", "procalcitonin", "computed tomography", "imaging", "diagnos", "assay", "lf-lam",
    "line probe", "dst", "susceptibility testing", "genotypic", "phenotypic", "aspirate", "stool", "lumbar",
    "screen",  # a screening question is answered by a passage about screening ("staff are screened every six months")
]  # fmt: skip
# Question keyword (prefix) -> the label sections (LOINC codes) and heading words its answer lives under.
SECTION_GROUPS: dict[str, list[str]] = {
    "side effect": ["34084-4", "adverse reactions", "side effects"],
    "adverse": ["34084-4", "adverse reactions", "side effects"],
    "toxicity": ["34084-4", "43685-7", "34071-1", "adverse reactions", "warnings"],
    "dose": ["34068-7", "dosage and administration", "dosing"],
    "dosage": ["34068-7", "dosage and administration", "dosing"],
    "dosing": ["34068-7", "dosage and administration", "dosing"],
    "pregnan": ["43684-0", "42228-7", "specific populations", "pregnancy"],
    "breastfeed": ["43684-0", "specific populations", "lactation"],
    "lactation": ["43684-0", "specific populations", "lactation"],
    "interact": ["34073-7", "drug interactions"],
    "contraindicat": ["34070-3", "contraindications"],
    "warning": ["34066-1", "43685-7", "34071-1", "boxed warning", "warnings"],
    "boxed warning": ["34066-1", "boxed warning"],
    "overdos": ["34088-5", "overdosage"],
    "mechanism": ["34090-1", "clinical pharmacology", "mechanism"],
    "indicat": ["34067-9", "indications"],
    "food": ["34068-7", "dosage and administration"],
    "meal": ["34068-7", "dosage and administration"],
    # Guideline heading words (matched against a chunk's section title and path).
    "how long": ["duration"],
    "duration": ["duration"],
    "regimen": ["regimen"],
    "outpatient": ["outpatient"],
    "inpatient": ["inpatient"],
    "child": ["children", "paediatric", "pediatric"],
    "paediatric": ["children", "paediatric", "pediatric"],
    "pediatric": ["children", "paediatric", "pediatric"],
    "monitor": ["monitoring"],
    "interrupt": ["interruption"],
    "diagnos": ["diagnos"],
    "eligib": ["eligib", "exclusion"],
    "exclu": ["exclusion", "eligib"],
}
# Gates: high-risk words a bullet may not add to its evidence, and the entities the patient-summary guard checks.
HIGH_RISK_TERMS: list[str] = [
    "hiv", "aids", "carbapenem", "carbapenems", "meropenem", "imipenem", "vancomycin", "pregnancy", "pregnant",
    "death", "mortality", "fatal", "contraindicated", "boxed warning", "hepatotoxicity", "hepatitis",
    "qt prolongation", "torsades", "lactic acidosis", "seizures", "optic neuritis", "blindness", "children",
    "pediatric", "corticosteroids", "steroids", "icu", "intubation", "surgery", "chemotherapy", "transplant",
]  # fmt: skip
MEDICAL_TERMS: list[str] = [
    "tuberculosis", "pneumonia", "hiv", "aids", "hepatitis", "hepatotoxicity", "neuropathy", "optic neuritis",
    "qt prolongation", "arrhythmia", "torsades", "diabetes", "cancer", "sepsis", "meningitis", "seizures",
    "lactic acidosis", "myelosuppression", "thrombocytopenia", "anemia", "anaemia", "gout", "hyperuricemia",
    "pancreatitis", "rash", "jaundice", "carbapenem", "vancomycin", "corticosteroids", "insulin", "warfarin",
    "pregnancy", "ventilation", "intubation", "dialysis", "transplant", "chemotherapy", "surgery", "radiograph",
    "culture", "sputum", "biopsy", "igra", "tst", "naat",
]  # fmt: skip
# Extractive patient summary: clinical phrase -> plain language.
PATIENT_GLOSSARY: dict[str, str] = {
    "hepatotoxicity": "liver injury", "hepatotoxic": "harmful to the liver", "hepatic impairment":
    "reduced liver function", "renal impairment": "reduced kidney function", "peripheral neuropathy":
    "nerve damage in the hands and feet", "is contraindicated": "must not be used",
    "are contraindicated": "must not be used", "contraindicated": "not to be used", "administered": "given",
    "concomitant": "combined", "concomitantly": "together", "adverse reactions": "side effects",
    "adverse reaction": "side effect", "orally": "by mouth", "intravenously": "through a drip into a vein",
    "discontinue": "stop", "discontinued": "stopped", "discontinuation": "stopping", "initiate": "start",
    "initiated": "started", "initiation": "start", "prophylaxis": "prevention", "efficacy": "benefit",
    "prior to": "before", "approximately": "about", "elevated": "raised", "bacteriostatic":
    "stops bacteria from growing", "bactericidal": "kills bacteria", "pulmonary": "lung", "empiric": "first",
    "regimen": "treatment plan", "regimens": "treatment plans", "induration": "hard swelling", "pediatric":
    "child", "paediatric": "child", "hypersensitivity": "allergy", "teratogenic": "harmful to an unborn baby",
}  # fmt: skip
# The shared English function words (core.text) and the words a guideline sentence carries no claim in.
STOPWORDS: list[str] = sorted(TEXT_STOPWORDS | {
    "am", "because", "doing", "e.g", "etc", "having", "hers", "however", "i.e", "itself", "may", "might", "must",
    "now", "shall", "should", "therefore", "use", "used", "using",
})  # fmt: skip
