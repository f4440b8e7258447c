"""Training the Adult table's classifiers with PyTorch: the baseline and SenSR with a given Sigma.

PyTorch and inFairness are an optional extra (``requirements-adult.txt`` and
``requirements-adult-nodeps.txt``, ``make extras``); nothing else in the app imports this
module. Both classifiers are the SenSR paper's network — one hidden layer of 100 ReLU units, two
logits — trained with Adam on class-balanced minibatches (SenSR's ``balance_batch``):

* **baseline**: cross-entropy on the data;
* **SenSR**: inFairness 0.2.3's :class:`~inFairness.fairalgo.SenSR` with
  ``d_x(x, x') = (x − x')ᵀ Σ (x − x')`` (:class:`~inFairness.distances.MahalanobisDistances`
  fitted with the downloaded Sigma): each step trains on the auditor's worst-case
  perturbations of the batch, whose cost under ``d_x`` is held near ``eps`` by the dual
  variable λ.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np


class TorchMissing(RuntimeError):
    """PyTorch or inFairness is not installed."""


def require_torch():
    """The ``torch`` module and inFairness, or :class:`TorchMissing` with the install line."""
    try:
        import torch

        with warnings.catch_warnings():  # inFairness 0.2.3 uses functorch.vmap (deprecated)
            warnings.simplefilter("ignore", FutureWarning)
            import inFairness.distances
            import inFairness.fairalgo  # noqa: F401
    except ImportError:
        raise TorchMissing(
            "PyTorch and inFairness are not installed: make extras (or pip install -r "
            "requirements-adult.txt && pip install --no-deps -r requirements-adult-nodeps.txt)"
        ) from None
    return torch


@dataclass(frozen=True)
class TrainSettings:
    """Steps and rates; the defaults are what docs/adult.md reports."""

    hidden: int = 100
    steps: int = 1_000
    batch_size: int = 1_000
    lr: float = 1e-3
    # SenSR (inFairness's names); eps as the EXPLORE + SenSR script of the seed paper's authors
    eps: float = 0.01
    lr_lamb: float = 1.0
    lr_param: float = 1.0
    auditor_nsteps: int = 20
    auditor_lr: float = 0.01
    threads: int = 1  # small network: one thread is fastest, and fair to a shared machine

    def as_dict(self) -> dict:
        return asdict(self)


def _network(torch, dimension: int, hidden: int):
    return torch.nn.Sequential(
        torch.nn.Linear(dimension, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 2)
    )


def _balanced_batches(y: np.ndarray, steps: int, size: int, rng) -> list[np.ndarray]:
    """Row indices of each step: half from each class, drawn with replacement."""
    positive, negative = np.flatnonzero(y), np.flatnonzero(~y)
    half = size // 2
    return [
        np.r_[rng.choice(positive, half), rng.choice(negative, size - half)] for _ in range(steps)
    ]


def _predictor(torch, network) -> Callable[[np.ndarray], np.ndarray]:
    network.eval()

    def predict(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            logits = network(torch.as_tensor(np.asarray(x), dtype=torch.float32))
        return logits.argmax(dim=1).numpy().astype(bool)

    return predict


def train_classifier(
    x: np.ndarray,
    y: np.ndarray,
    *,
    seed: int,
    settings: TrainSettings,
    sigma: np.ndarray | None = None,
) -> Callable[[np.ndarray], np.ndarray]:
    """Train the baseline (``sigma=None``) or SenSR with ``sigma``; returns ``predict(x) -> bool``."""
    torch = require_torch()
    torch.set_num_threads(settings.threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    y = np.asarray(y, dtype=bool)
    features = torch.as_tensor(np.asarray(x), dtype=torch.float32)
    labels = torch.as_tensor(y.astype(np.int64))
    network = _network(torch, features.shape[1], settings.hidden)
    loss_fn = torch.nn.CrossEntropyLoss()
    if sigma is None:
        model = network
    else:
        from inFairness.distances import MahalanobisDistances
        from inFairness.fairalgo import SenSR

        distance = MahalanobisDistances()
        distance.fit(torch.as_tensor(np.asarray(sigma), dtype=torch.float32))
        model = SenSR(
            network,
            distance,
            loss_fn,
            eps=settings.eps,
            lr_lamb=settings.lr_lamb,
            lr_param=settings.lr_param,
            auditor_nsteps=settings.auditor_nsteps,
            auditor_lr=settings.auditor_lr,
        )
    optimizer = torch.optim.Adam(network.parameters(), lr=settings.lr)
    model.train()
    for rows in _balanced_batches(y, settings.steps, settings.batch_size, rng):
        xb, yb = features[rows], labels[rows]
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb) if sigma is None else model(xb, yb).loss
        loss.backward()
        optimizer.step()
    return _predictor(torch, network)
