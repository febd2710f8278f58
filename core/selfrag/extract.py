"""Answer extraction: the option letter a free-text answer states, or ``None``.

Unlike MIRAGE's ``locate_answer`` (which falls back to "A"), nothing matching
is its own outcome: ``None``, counted as "no letter" by the harness.

Evidence is read strongest first; the first kind that decides wins:

1. a JSON (or Python-dict) answer key, the last one in the text: ``"B"``, ``"B."``,
   ``"B. Fallopian tube"``, ``"(B) text"``, ``"Option B"`` or an option's text;
2. the last *final* statement ("Final answer: C");
3. the last explicit statement ("the answer is (B)", "Answer: D", "the correct option
   is C", "C is the correct answer", "I would choose B");
4. the last hypothetical ("the answer would be A"), only when nothing above exists;
5. a line that starts with a letter ("D. Nitrofurantoin", "(B)", "C)") or is one,
   unless other lines start with other letters (a walk through the options);
6. the text of exactly one option, first in the first line, then in the whole text.

A statement that names two letters ("B or C"), a letter that is not an option,
a letter followed by another option's text ("A. Amoxicillin" where A is
Vancomycin: small models mislabel), or an option text shared by two letters
(duplicate options) is ambiguous:
``None``, without falling back to weaker evidence. Option text is matched on
whole normalised tokens, so ">5 mm" never matches inside ">15 mm" and
"vitamin B1" never inside "vitamin B12". Agreement with a human reader on
``tests/data/mcq_outputs.json`` is reported in docs/SELFRAG.md.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

__all__ = ["extract_letter", "option_tokens"]

_MISSING = object()  # "this evidence does not decide": try the next kind

_JSON_RE = re.compile(
    r"""(?<!\\)["']\s*(?:answer_choice|final_answer|correct_answer|answer|choice)\s*["']\s*:\s*"""
    r"""(?:"((?:[^"\\]|\\.)*)"|'([^'\\\n]*)')""",
    re.IGNORECASE,
)
_FINAL_RE = re.compile(r"\bfinal\s+(?:answer|choice)\b[*_]*\s*(?:is\b|:|=|-(?=\s))?", re.IGNORECASE)
_STATED_RE = re.compile(
    r"\b(?:answer|option|choice|pick|response|conclusion)\b[*_]*\s*(?:here\s+)?(?:(?:is|was)\b(?:\s+actually)?|:|=|-(?=\s))"
    r"|\b(?:choose|chose|pick|select|go\s+with|opt\s+for)\b",
    re.IGNORECASE,
)
_HEAD_RE = re.compile(
    r"([^.;:\n]*?)\s+is\s+(?:the\s+)?(?:correct|best|right|most\s+likely|most\s+appropriate|preferred)\b",
    re.IGNORECASE,
)
_WOULD_RE = re.compile(r"\banswer\s+(?:would|could|might|should|may)\s+be\b", re.IGNORECASE)
# A letter at the start of a statement's tail. Upper case: followed by anything but a word character; lower
# case ("answer: c") only bracketed or followed by punctuation or the end, so "is a bacterial" is no letter.
_TAIL_LETTER = re.compile(
    r"^(?:(?i:option|choice|letter)\s+)?(?:[\(\[]([A-Ja-j])[\)\]]|([A-J])(?![\w'])|([a-j])(?=\s*(?:[.):,;]|$)))"
)
_SECOND_LETTER = re.compile(r"^[\)\]]?\s*(?:or|and|/|,|&)\s*[\(\[]?(?:option\s+)?[A-J](?![\w'])")
_LEADING = re.compile(r"^[\s*#>\"'`-]*(?:[\(\[]([A-Ja-j])[\)\]]|([A-J])(?:[.:)](?!\d)|\s+-\s|\**\s*$)|([a-j])\))")
_HEAD_LETTER = re.compile(r"^[\s*]*[\(\[]?([A-J])[\)\]]?[\s*]*$")
_SENTENCE_END = re.compile(r"(?<!\d)\.(?!\d)|[;!?\n]")
_TOKEN_RE = re.compile(r"\d+(?:\.\d+)?|[^\W\d_]+|[<>≤≥%+]")
_SHORT_WORD = 4  # outside a statement, one-word options shorter than this ("no", "yes") are ordinary prose


def option_tokens(text: str) -> tuple[str, ...]:
    """Normalised tokens of ``text``: NFKC, lower case, words, numbers (``5.5`` is one token) and ``<>≤≥%+``."""
    return tuple(_TOKEN_RE.findall(unicodedata.normalize("NFKC", text).lower()))


def _letters(options: Mapping[str, str] | None) -> set[str]:
    return {k.upper() for k in options} if options else set("ABCDEFGHIJ")


def _is_short(text: str) -> bool:
    tokens = option_tokens(text)
    return len(tokens) == 1 and len(tokens[0]) < _SHORT_WORD


def _spans(hay: tuple[str, ...], needle: tuple[str, ...]) -> list[tuple[int, int]]:
    n = len(needle)
    return [(i, i + n) for i in range(len(hay) - n + 1) if hay[i : i + n] == needle]


def _by_text(scope: str, options: Mapping[str, str] | None, *, prose: bool) -> object:
    """The one option whose text occurs in ``scope``; ``None`` when ambiguous; ``_MISSING`` when none occurs.

    An occurrence inside a longer matched option's occurrence ("aspirin" inside "aspirin and clopidogrel")
    does not count. ``prose``: a one-word option shorter than ``_SHORT_WORD`` characters ("no") found alone
    decides nothing (ordinary prose), though with another option it still makes the text ambiguous.
    """
    if not options:
        return _MISSING
    hay = option_tokens(scope)
    found: dict[str, list[tuple[int, int]]] = {}
    for letter, text in options.items():
        needle = option_tokens(text)
        if not needle:
            continue
        if spans := _spans(hay, needle):
            found[letter.upper()] = spans
    chosen = {
        letter
        for letter, spans in found.items()
        if any(
            not any(o != letter and a <= s and e <= b and (b - a) > (e - s) for o in found for a, b in found[o])
            for s, e in spans
        )
    }
    if not chosen:
        return _MISSING
    if prose and len(chosen) == 1 and _is_short(options[next(iter(chosen))]):
        return _MISSING  # "No conclusion can be drawn" names no option; "yes or maybe" above is still ambiguous
    texts = {option_tokens(options[k]) for k in chosen}
    if len(chosen) > 1 or any(option_tokens(v) in texts and k.upper() not in chosen for k, v in options.items()):
        return None  # two options named, or the named text belongs to two letters
    return next(iter(chosen))


def _contradicts(letter: str, rest: str, options: Mapping[str, str] | None) -> bool:
    """``letter`` is followed by another option's text, not its own ("A. Amoxicillin" where A is Vancomycin)."""
    if not options:
        return False
    after = option_tokens(rest[:200])
    texts = {k.upper(): option_tokens(v) for k, v in options.items()}
    own = texts.get(letter, ())
    if own and after[: len(own)] == own:
        return False
    return any(k != letter and t and after[: len(t)] == t for k, t in texts.items())


def _from_tail(tail: str, valid: set[str], options: Mapping[str, str] | None) -> object:
    """What a statement's tail ("(B) because ...", "ceftriaxone.") states."""
    tail = tail.lstrip(" \t*_\"'`:")
    if match := _TAIL_LETTER.match(tail):
        letter = next(g for g in match.groups() if g).upper()
        if _SECOND_LETTER.match(tail[match.end() :]) or letter not in valid:
            return None  # "B or C", "A/B", or a letter that is not an option
        if _contradicts(letter, tail[match.end() :], options):
            return None  # the letter names one option and the text another: no honest reading
        return letter
    end = _SENTENCE_END.search(tail)
    return _by_text(tail[: end.start()] if end else tail, options, prose=False)


def _from_json(text: str, valid: set[str], options: Mapping[str, str] | None) -> object:
    for match in reversed(list(_JSON_RE.finditer(text))):
        value = (match.group(1) if match.group(1) is not None else match.group(2) or "").strip()
        if options and option_tokens(value) and any(option_tokens(value) == option_tokens(v) for v in options.values()):
            return _by_text(value, options, prose=False)  # the value is an option's text (duplicates: None)
        if (got := _from_tail(value, valid, options)) is not _MISSING:
            return got
    return _MISSING


def _last_statement(matches: list[re.Match[str]], text: str, valid: set[str], opts: Mapping[str, str] | None) -> object:
    for match in reversed(matches):
        if (got := _from_tail(text[match.end() :], valid, opts)) is not _MISSING:
            return got
    return _MISSING


def _from_head(match: re.Match[str], valid: set[str], options: Mapping[str, str] | None) -> object:
    """"C is the correct answer", "So (B) is correct", "Graves disease is the most likely"."""
    head = re.split(r"[,:;]", match.group(1))[-1]
    head = re.sub(r"^\s*(?:so|thus|therefore|hence|here|then)\b", "", head, flags=re.IGNORECASE)
    if letter := _HEAD_LETTER.match(head):
        return letter.group(1) if letter.group(1) in valid else None
    return _by_text(head, options, prose=True)


def _from_statements(text: str, valid: set[str], options: Mapping[str, str] | None) -> object:
    if (got := _last_statement(list(_FINAL_RE.finditer(text)), text, valid, options)) is not _MISSING:
        return got
    stated: list[tuple[int, re.Match[str], bool]] = [(m.start(), m, False) for m in _STATED_RE.finditer(text)]
    stated += [(m.end(1), m, True) for m in _HEAD_RE.finditer(text)]
    for _, match, head in sorted(stated, key=lambda row: row[0], reverse=True):
        got = _from_head(match, valid, options) if head else _from_tail(text[match.end() :], valid, options)
        if got is not _MISSING:
            return got
    return _last_statement(list(_WOULD_RE.finditer(text)), text, valid, options)


def _from_lines(text: str, valid: set[str], options: Mapping[str, str] | None) -> object:
    found = []
    for line in text.splitlines():
        if match := _LEADING.match(line):
            found.append((next(g for g in match.groups() if g).upper(), line[match.end() :]))
    if not found or len({letter for letter, _ in found}) > 1:
        return _MISSING  # no leading letter, or a walk through several options
    letter, rest = found[0]
    return letter if letter in valid and not _contradicts(letter, rest, options) else None


def _leading_word(text: str, options: Mapping[str, str] | None) -> object:
    """A reply that opens with a one-word option and a stop ("Yes. The trial met ...", "No, because ...").

    "No conclusion can be drawn" opens with no answer: the word must be followed by punctuation.
    """
    opening = re.match(r"^[\W_]*([^\W_]+)\s*[.,;:!]", text)
    tokens = option_tokens(opening.group(1)) if opening else ()
    if not options or not tokens:
        return _MISSING
    hits = [k.upper() for k, v in options.items() if _is_short(v) and option_tokens(v) == tokens[:1]]
    return hits[0] if len(hits) == 1 else _MISSING


def extract_letter(text: str, options: Mapping[str, str] | None = None) -> str | None:
    """The option letter ``text`` states, or ``None`` (never a default letter).

    ``options`` (letter -> option text) restricts the valid letters and
    enables matching on an option's text; without it A-J are valid.
    """
    if not text or not text.strip():
        return None
    valid = _letters(options)
    for step in (
        lambda: _from_json(text, valid, options),
        lambda: _from_statements(text, valid, options),
        lambda: _from_lines(text, valid, options),
        lambda: _leading_word(text, options),
        lambda: _by_text(text.strip().splitlines()[0], options, prose=True),
        lambda: _by_text(text, options, prose=True),
    ):
        got = step()
        if got is not _MISSING:
            return got if isinstance(got, str) else None
    return None
