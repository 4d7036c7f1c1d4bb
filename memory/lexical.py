"""Lexical recall: a CJK-aware tokenizer and an incremental BM25 index for one user.

Tokenizer
    * Text is NFKC-folded and case-folded, then split into runs of CJK characters and runs
      of letters/digits.
    * English (and any other space-separated script): word tokens, with possessive ``'s``
      and contractions dropped, a small stop list (function words and question words, so
      "What did Caroline research?" queries ``caroline research``), and a light suffix
      stemmer (plural ``-s``/``-es``/``-ies``, ``-ing``, ``-ed``, final ``-e``) that maps
      ``research``/``researching``/``researched`` and ``bake``/``baking``/``baked`` to one
      key. On LoCoMo (dev split) the stemmer alone adds about +0.04 R@5 over plain words.
    * Chinese / Japanese / Korean runs: every character bigram plus every character
      unigram that is not a function character (的, 了, 吗 ...). Bigrams carry most of the
      precision ("上海", "咖啡"), unigrams keep recall for one-character words ("猫", "辣").
      This needs no dictionary and no cache; jieba segmentation was not adopted because it
      adds a dependency, writes a cache file on first use, and misses the out-of-vocabulary
      names and slang that bigrams still match.

BM25 index
    `BM25Index` is an in-memory inverted index with incremental `add` / `remove` by id
    (re-adding an id replaces it), Lucene-style BM25 (k1=1.2, b=0.75, idf
    ``log(1 + (N - df + 0.5) / (df + 0.5))``, always positive) and `search(query, k)` →
    ``[(id, score), ...]`` best first. Statistics (N, df, average length) are kept
    incrementally, so a query costs only the postings of its terms: about 0.1 ms for
    700 documents and a few ms for 10k on one core. It holds one user's records; build it
    from the store on first use and keep it in step with every store write and delete.
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Hashable, Iterable

__all__ = ["BM25Index", "STOP_WORDS", "stem", "tokenize"]

# Function words, pronouns, auxiliaries and question words. Kept short on purpose: words
# that carry meaning in a memory ("like", "live", "work", "never") are not stop words.
STOP_WORDS = frozenset(
    """
    a an the and or but if then so of to in on at by for with from as into onto about over
    under up down out off than too very just also only even still yet again ever
    i me my mine myself you your yours yourself he him his himself she her hers herself it
    its itself we us our ours ourselves they them their theirs themselves
    this that these those there here
    is am are was were be been being do does did doing done have has had having
    will would shall should can could may might must
    what which who whom whose when where why how whats
    s t d ll m re ve
    """.split()
)

# Chinese function characters that are dropped as unigrams (they still appear in bigrams).
ZH_STOP_CHARS = frozenset("的了吗呢吧啊呀哦嘛么是在和与及也都就还又很把被给对于之其这那个些我你他她它们谁什哪怎")

_CJK_RANGES = (
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x20000, 0x2FA1F),  # Extensions B..F, compatibility supplement
)
_CJK_CLASS = (
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]"
)
_CJK_RUN_RE = re.compile(_CJK_CLASS + "+")
_RUN_RE = re.compile(_CJK_CLASS + "+" + r"|[^\W_]+(?:['’][^\W_]+)*")
_VOWELS = frozenset("aeiouy")


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def stem(word: str) -> str:
    """Return a light stem of an English word (lower case in, lower case out).

    Not a linguistic stemmer: a consistent key, so that inflected forms share it
    (``baking``/``baked``/``bakes``/``bake`` → ``bak``; ``stories``/``story`` → ``stori``).
    Words of three letters or fewer, and words with digits, are kept as they are.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    w = word
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "i"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("es") and w[-3] in "sxz" or w.endswith(("ches", "shes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            base = w[: -len(suffix)]
            if not any(c in _VOWELS for c in base):
                break
            # running → run, stopped → stop (but keep "ll"/"ss": falling → fall).
            if len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]
            w = base
            break
    if w.endswith("y") and len(w) > 3:
        w = w[:-1] + "i"
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def tokenize(text: str, *, stemming: bool = True, stop_words: frozenset[str] = STOP_WORDS) -> list[str]:
    """Split text into index terms (English words and CJK character n-grams).

    Args:
        text: Any text, mixed scripts allowed.
        stemming: Apply `stem` to non-CJK words.
        stop_words: Words to drop (compared before stemming).

    Returns:
        Terms in text order; repeated terms are kept (BM25 counts them).
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    # Space CJK runs off so that a word run never swallows them ("alice喜欢jazz").
    folded = _CJK_RUN_RE.sub(lambda m: f" {m.group(0)} ", folded)
    out: list[str] = []
    for m in _RUN_RE.finditer(folded):
        run = m.group(0)
        if _is_cjk(run[0]):
            for i, ch in enumerate(run):
                if ch not in ZH_STOP_CHARS:
                    out.append(ch)
                if i + 1 < len(run):
                    out.append(run[i : i + 2])
            continue
        # Possessives and contractions: "caroline's" → "caroline", "don't" → "don".
        word = re.split(r"['’]", run, maxsplit=1)[0]
        if not word or word in stop_words:
            continue
        out.append(stem(word) if stemming else word)
    return out


class BM25Index:
    """An incremental in-memory BM25 index over documents keyed by id.

    Thread-safe: one lock guards every read and write.
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75, stemming: bool = True) -> None:
        """Create an empty index.

        Args:
            k1: Term-frequency saturation.
            b: Length normalisation (0 = none, 1 = full).
            stemming: Passed to `tokenize` for documents and queries alike.
        """
        self.k1 = k1
        self.b = b
        self.stemming = stemming
        self._docs: dict[Hashable, dict[str, float]] = {}
        self._lens: dict[Hashable, float] = {}
        self._postings: dict[str, dict[Hashable, float]] = {}
        self._total_len = 0.0
        self._lock = threading.RLock()

    def tokenize(self, text: str) -> list[str]:
        """Tokenize with this index's settings."""
        return tokenize(text, stemming=self.stemming)

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    def ids(self) -> set[Hashable]:
        """Return the ids of every indexed document."""
        with self._lock:
            return set(self._docs)

    def add(self, doc_id: Hashable, text: str, *, extra: Iterable[tuple[str, float]] = ()) -> None:
        """Index a document, replacing any document with the same id.

        Args:
            doc_id: The record id.
            text: The text to index.
            extra: Further ``(text, weight)`` fields whose terms count `weight` times each,
                e.g. a record's subject, or the neighbouring turns of a raw dialogue turn.
        """
        tf: Counter[str] = Counter(self.tokenize(text))
        weighted: dict[str, float] = {t: float(c) for t, c in tf.items()}
        for field_text, weight in extra:
            for term in self.tokenize(field_text):
                weighted[term] = weighted.get(term, 0.0) + weight
        length = sum(weighted.values())
        with self._lock:
            self._remove_locked(doc_id)
            self._docs[doc_id] = weighted
            self._lens[doc_id] = length
            self._total_len += length
            for term, f in weighted.items():
                self._postings.setdefault(term, {})[doc_id] = f

    def add_many(self, docs: Iterable[tuple[Hashable, str]]) -> None:
        """Index many ``(id, text)`` documents."""
        for doc_id, text in docs:
            self.add(doc_id, text)

    def remove(self, doc_id: Hashable) -> bool:
        """Remove a document; return False if it was not indexed."""
        with self._lock:
            return self._remove_locked(doc_id)

    def clear(self) -> None:
        """Remove every document."""
        with self._lock:
            self._docs.clear()
            self._lens.clear()
            self._postings.clear()
            self._total_len = 0.0

    def _remove_locked(self, doc_id: Hashable) -> bool:
        terms = self._docs.pop(doc_id, None)
        if terms is None:
            return False
        self._total_len -= self._lens.pop(doc_id)
        for term in terms:
            posting = self._postings.get(term)
            if posting is not None:
                posting.pop(doc_id, None)
                if not posting:
                    del self._postings[term]
        return True

    def search(self, query: str, k: int = 50) -> list[tuple[Hashable, float]]:
        """Return up to `k` ``(id, score)`` pairs with a positive score, best first."""
        return self.search_terms(self.tokenize(query), k)

    def search_terms(
        self, terms: Iterable[str] | dict[str, float], k: int = 50
    ) -> list[tuple[Hashable, float]]:
        """Score already-tokenized query terms (a list, or a dict of term → weight)."""
        weights: dict[str, float]
        if isinstance(terms, dict):
            weights = dict(terms)
        else:
            weights = {}
            for t in terms:
                weights[t] = weights.get(t, 0.0) + 1.0
        if k <= 0 or not weights:
            return []
        with self._lock:
            n = len(self._docs)
            if n == 0:
                return []
            avgdl = self._total_len / n if self._total_len > 0 else 1.0
            k1, b = self.k1, self.b
            lens = self._lens
            scores: dict[Hashable, float] = {}
            for term, qw in weights.items():
                posting = self._postings.get(term)
                if not posting:
                    continue
                df = len(posting)
                idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5)) * qw
                norm_k = k1 * (1.0 - b)
                norm_b = k1 * b / avgdl
                for doc_id, f in posting.items():
                    denom = f + norm_k + norm_b * lens[doc_id]
                    scores[doc_id] = scores.get(doc_id, 0.0) + idf * f * (k1 + 1.0) / denom
        if len(scores) > k:
            import heapq

            return heapq.nlargest(k, scores.items(), key=lambda kv: kv[1])
        return sorted(scores.items(), key=lambda kv: kv[1], reverse=True)
