"""The reflection critic protocol and its two implementations over the :class:`~core.llm.base.LLM` protocol.

A :class:`Critic` returns ``{label: logprob}`` maps keyed by reflection tokens;
:mod:`core.selfrag.scoring` turns them into probabilities. Implementations:

* :class:`JudgeCritic`: any instruct model asked single-token questions (Yes/No,
  one digit). Reflection labels are several tokens in ordinary tokenizers
  (``[``, ``Re``, ``levant``, ``]``), so comparing their first tokens says
  nothing; Yes/No and digits are one token each.
* :class:`LLMReflectionCritic`: a model trained with reflection tokens behind an
  OpenAI-compatible server (or any backend) that returns top log-probabilities:
  one-token completions at the positions listed in :mod:`core.selfrag.prompts`.
* :class:`core.selfrag.native.NativeCritic`: the same model through transformers,
  in batched forward passes (the fast path).

Every call runs through :mod:`core.llm.call` under the token the pipeline's stage made active,
so it returns when the stage's time is up, in wall time, even while the backend is still
reading a long prompt (:class:`~core.errors.BackendTimeoutError`, which the stage handles).
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from core.llm.call import chat_call, complete_call
from core.selfrag import prompts
from core.selfrag.scoring import log_add_exp
from core.selfrag.tokens import (
    FULLY_SUPPORTED,
    IRRELEVANT,
    NO_RETRIEVAL,
    NO_SUPPORT,
    PARTIALLY_SUPPORTED,
    RELEVANT,
    RETRIEVAL,
    UTILITY_TOKENS,
)
from core.selfrag.types import CriticReading, Passage

if TYPE_CHECKING:
    from core.config.selfrag import SelfRagSettings
    from core.llm.base import LLM, Completion, Message

__all__ = ["Critic", "JudgeCritic", "LLMReflectionCritic", "first_token_labels", "labels_in_order", "map_concurrently"]

_CONFIDENT_RETRIEVAL = {"yes": NO_RETRIEVAL, "no": RETRIEVAL}  # "can you answer without looking up?"
_YES_NO_RELEVANCE = {"yes": RELEVANT, "no": IRRELEVANT}
_SUPPORT_DIGITS = {"1": FULLY_SUPPORTED, "2": PARTIALLY_SUPPORTED, "3": NO_SUPPORT}
_UTILITY_DIGITS = {str(i): tok for i, tok in enumerate(UTILITY_TOKENS, start=1)}


@runtime_checkable
class Critic(Protocol):
    """Reads reflection-token log-probabilities for the three critic questions."""

    name: str

    def retrieval(self, query: str) -> dict[str, float]:
        """``{[Retrieval]: lp, [No Retrieval]: lp}`` for answering ``query`` (labels it did not see are absent)."""
        ...

    def documents(self, query: str, documents: Sequence[Passage]) -> list[CriticReading]:
        """Relevance, support and utility maps for each document, in order."""
        ...

    def utility(self, query: str, answer: str) -> dict[str, float]:
        """``{[Utility:i]: lp}`` for ``answer`` to ``query``."""
        ...


def first_token_labels(top: Mapping[str, float], mapping: Mapping[str, str]) -> dict[str, float]:
    """Map one step's top log-probabilities onto labels.

    Token texts are compared stripped and case-folded (``"Yes"``, ``" yes"``
    and ``"YES"`` are one answer, their probabilities added); tokens outside
    ``mapping`` are ignored.
    """
    out: dict[str, float] = {}
    for token, lp in top.items():
        label = mapping.get(token.strip().casefold())
        if label is not None:
            out[label] = lp if label not in out else log_add_exp(out[label], lp)
    return out


def labels_in_order(
    completion: Completion, mappings: Sequence[Mapping[str, str]]
) -> list[dict[str, float]]:
    """Read several single-token answers from one generation, in order.

    Walks the generated tokens; the first token whose text (stripped,
    case-folded) is a key of ``mappings[0]`` is read with
    :func:`first_token_labels` over its top alternatives, then the next token
    matching ``mappings[1]``, and so on ("Yes 2 4" -> three readings).
    Separators (spaces, commas) are skipped; an answer never generated reads
    as an empty map (unscored, not guessed).
    """
    out: list[dict[str, float]] = []
    tokens = completion.tokens
    at = 0
    for mapping in mappings:
        reading: dict[str, float] = {}
        for i in range(at, len(tokens)):
            tok = tokens[i]
            if tok.token.strip().casefold() in mapping:
                top = dict(tok.top)
                top.setdefault(tok.token, tok.logprob)
                reading, at = first_token_labels(top, mapping), i + 1
                break
        out.append(reading)  # not generated: unscored, and the next answer is looked for from the same place
    return out


def map_concurrently(
    func: Callable[[Passage], CriticReading], docs: Sequence[Passage], workers: int
) -> list[CriticReading]:
    """``[func(d) for d in docs]``, with up to ``workers`` calls in flight (a server backend serves them at once)."""
    if workers <= 1 or len(docs) <= 1:
        return [func(d) for d in docs]
    # each call runs in a copy of the caller's context: the stage's CancelToken reaches the backend
    contexts = [contextvars.copy_context() for _ in docs]
    with ThreadPoolExecutor(max_workers=min(workers, len(docs))) as pool:
        return list(pool.map(lambda ctx, doc: ctx.run(func, doc), contexts, docs))


def _first_top(completion: Completion) -> dict[str, float]:
    if not completion.tokens:
        return {}
    first = completion.tokens[0]
    top = dict(first.top)
    top.setdefault(first.token, first.logprob)
    return top


class JudgeCritic:
    """A general instruct model as critic: one single-token question per reflection group."""

    name = "judge"

    def __init__(self, llm: LLM, settings: SelfRagSettings) -> None:
        self.llm = llm
        self.settings = settings

    def _ask(self, prompt: str, mapping: Mapping[str, str]) -> dict[str, float]:
        messages: list[Message] = [
            {"role": "system", "content": prompts.JUDGE_SYSTEM},  # measured: separates relevant from off-topic
            {"role": "user", "content": prompt},
        ]
        reply = chat_call(self.llm, messages, max_tokens=1, temperature=0.0, logprobs=self.settings.logprobs_top_k)
        return first_token_labels(_first_top(reply), mapping)

    def _doc(self, document: Passage) -> str:
        return document.prompt_text(self.settings.judge_max_chars)

    def retrieval(self, query: str) -> dict[str, float]:
        """Yes/No: can the model answer confidently without a reference? (No -> [Retrieval])."""
        return self._ask(prompts.JUDGE_RETRIEVAL.format(question=query), _CONFIDENT_RETRIEVAL)

    def documents(self, query: str, documents: Sequence[Passage]) -> list[CriticReading]:
        """Relevance, support and utility per document (``judge_batch``), ``concurrency`` requests at a time."""
        read = self._combined if self.settings.judge_batch == "combined" else self._separate
        return map_concurrently(lambda doc: read(query, doc), documents, self.settings.concurrency)

    def _combined(self, query: str, doc: Passage) -> CriticReading:
        """One request: "Yes 2 4", each answer read from the log-probabilities where it was generated."""
        messages: list[Message] = [
            {"role": "system", "content": prompts.JUDGE_SYSTEM},
            {"role": "user", "content": prompts.JUDGE_COMBINED.format(question=query, document=self._doc(doc))},
        ]
        reply = chat_call(self.llm, messages, max_tokens=8, temperature=0.0, logprobs=self.settings.logprobs_top_k)
        rel, sup, use = labels_in_order(reply, (_YES_NO_RELEVANCE, _SUPPORT_DIGITS, _UTILITY_DIGITS))
        return CriticReading(relevance=rel, support=sup, utility=use)

    def _separate(self, query: str, doc: Passage) -> CriticReading:
        """Three single-token questions; the question and document come first so llama.cpp reuses its cache."""
        text = self._doc(doc)
        return CriticReading(
            relevance=self._ask(prompts.JUDGE_RELEVANCE.format(question=query, document=text), _YES_NO_RELEVANCE),
            support=self._ask(prompts.JUDGE_SUPPORT.format(question=query, document=text), _SUPPORT_DIGITS),
            utility=self._ask(
                prompts.JUDGE_UTILITY.format(question=query, subject=f"Document:\n{text}"), _UTILITY_DIGITS
            ),
        )

    def utility(self, query: str, answer: str) -> dict[str, float]:
        """A digit 1-5 for the answer (-> [Utility:i])."""
        subject = f"Answer:\n{answer[: self.settings.judge_max_chars]}"
        return self._ask(prompts.JUDGE_UTILITY.format(question=query, subject=subject), _UTILITY_DIGITS)


class LLMReflectionCritic:
    """A reflection-token model behind the LLM protocol: one-token completions, reflection tokens read from top-k.

    Labels outside the backend's top-k are missing (probability 0 in the
    normalisation); a backend that returns no log-probabilities yields empty
    maps, so every score is unscored rather than guessed.
    """

    name = "native-llm"

    def __init__(self, llm: LLM, settings: SelfRagSettings) -> None:
        self.llm = llm
        self.settings = settings

    def _next(self, prompt: str) -> dict[str, float]:
        reply = complete_call(self.llm, prompt, max_tokens=1, temperature=0.0, logprobs=self.settings.logprobs_top_k)
        top = _first_top(reply)
        return {t.strip(): lp for t, lp in top.items() if not math.isnan(lp)}

    def retrieval(self, query: str) -> dict[str, float]:
        """Next-token reading after the instruction prompt."""
        return self._next(prompts.instruction_prompt(query))

    def documents(self, query: str, documents: Sequence[Passage]) -> list[CriticReading]:
        """Relevance after ``</paragraph>``, support after ``[Relevant]``, utility after ``[Fully supported]``.

        ``concurrency`` documents are read at a time (a server backend batches them).
        """

        def read(doc: Passage) -> CriticReading:
            base = prompts.instruction_prompt(query) + prompts.paragraph_block([self._doc(doc)])
            return CriticReading(
                relevance=self._next(base),
                support=self._next(base + RELEVANT),
                utility=self._next(base + RELEVANT + FULLY_SUPPORTED),
            )

        return map_concurrently(read, documents, self.settings.concurrency)

    def _doc(self, document: Passage) -> str:
        return document.prompt_text(self.settings.judge_max_chars)

    def utility(self, query: str, answer: str) -> dict[str, float]:
        """Next-token reading after the instruction prompt and the answer."""
        return self._next(prompts.instruction_prompt(query) + answer[: self.settings.judge_max_chars])
