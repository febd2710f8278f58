"""Prompt texts, in one place: the Self-RAG format, the judge questions, multiple-choice questions.

Self-RAG / Self-BioRAG positions (where the native critic reads each token):

* retrieval need: the next token after ``### Instruction:\\n{q}\\n\\n### Response:\\n``;
* relevance: the next token after ``... ### Response:\\n[Retrieval]<paragraph>{doc}</paragraph>``;
* support: the next token after the relevance token and the answer segment
  (``...</paragraph>[Relevant]{answer}``); the batched critic, which has no
  answer yet, reads it right after ``[Relevant]`` (see docs/SELFRAG.md);
* utility: the next token after the support token (reranking) or after the whole
  answer (self-reflection).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.selfrag.tokens import PARAGRAPH_CLOSE, PARAGRAPH_OPEN, RETRIEVAL

__all__ = [
    "JUDGE_COMBINED",
    "JUDGE_RELEVANCE",
    "JUDGE_RETRIEVAL",
    "JUDGE_SUPPORT",
    "JUDGE_SYSTEM",
    "JUDGE_UTILITY",
    "MCQ_INSTRUCTION",
    "format_mcq",
    "generation_prompt",
    "instruction_prompt",
    "paragraph_block",
]

# No example letter: with "for example 'B. Rifampicin'" the default 1.5B model answered B on 4 of 5 demo
# MedQA questions (0 correct), once copying "B. Rifampicin" itself; without it 2 of 5 were right.
MCQ_INSTRUCTION = (
    "Given the answer candidates, choose the best answer choice. Start your reply with the letter of your "
    "choice and its option text, then give one or two sentences of explanation."
)

JUDGE_SYSTEM = "You are a strict medical evidence judge. Answer with a single word or digit."
# Asked as confidence, answered No -> [Retrieval]. Measured on the 30 bundled questions with the default
# 1.5B judge: "Would looking up a reference help?" gave P(retrieve) 0.81-0.92 for every question (always
# retrieve); this wording spreads it over 0.04-0.56 (docs/SELFRAG.md, "Retrieval decision").
JUDGE_RETRIEVAL = (
    "Question:\n{question}\n\nCan you answer this question confidently and correctly from your own medical "
    "knowledge, without looking anything up? Answer Yes or No only."
)
JUDGE_RELEVANCE = (
    "Question:\n{question}\n\nDocument:\n{document}\n\nDoes the document contain information that helps "
    "answer this specific question? Answer Yes or No only."
)
JUDGE_SUPPORT = (
    "Question:\n{question}\n\nDocument:\n{document}\n\nHow well does the document support answering the "
    "question? Answer with one digit: 1 = fully supports, 2 = partially supports, 3 = no support or contradicts."
)
# The relevance question is asked first and alone (it is what the relevance floor reads); with three numbered
# questions and an example answer the 1.5B judge said "No" to every document (measured, docs/SELFRAG.md).
JUDGE_COMBINED = (
    "Question:\n{question}\n\nDocument:\n{document}\n\nDoes the document contain information that helps answer "
    "this specific question? Answer Yes or No, then on the same line rate its support for an answer (1 = fully, "
    "2 = partially, 3 = none) and its usefulness (1 useless to 5 complete), as three answers separated by spaces."
)
JUDGE_UTILITY = (
    "Question:\n{question}\n\n{subject}\n\nRate how useful this is for answering the question, from 1 "
    "(useless) to 5 (complete and correct). Answer with one digit only."
)


def format_mcq(question: str, options: Mapping[str, str], *, instruction: bool) -> str:
    """The question with its options as ``A. text`` lines (the question alone when there are none).

    ``instruction`` puts :data:`MCQ_INSTRUCTION` first (for the generator; the
    critic's questions would clash with "reply with the letter").
    """
    if not options:
        return question.strip()
    lines = "\n".join(f"{letter}. {text}" for letter, text in options.items())
    body = f"{question.strip()}\n{lines}"
    return f"{MCQ_INSTRUCTION}\n\nQUESTION: {body}" if instruction else body


def instruction_prompt(query: str) -> str:
    """The Self-RAG instruction prompt that ends where the model emits its first reflection token."""
    return f"### Instruction:\n{query}\n\n### Response:\n"


def paragraph_block(documents: Sequence[str]) -> str:
    """``[Retrieval]<paragraph>d1</paragraph>\\n\\n<paragraph>d2</paragraph>`` (empty for no documents)."""
    if not documents:
        return ""
    body = "\n\n".join(f"{PARAGRAPH_OPEN}{d}{PARAGRAPH_CLOSE}" for d in documents)
    return RETRIEVAL + body


def generation_prompt(query: str, documents: Sequence[str]) -> str:
    """Stage 5 prompt: the instruction, then the retrieved paragraphs when there are any."""
    if not documents:
        return instruction_prompt(query)
    return f"### Instruction:\n{query}\n\n{paragraph_block(documents)}\n\n### Response:\n"
