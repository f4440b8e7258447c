"""The authors' two-stage SenSR (experiments/adult/twostage.py) against independent computations.

The hand-written gradients against autograd, the optimiser against torch's Adam, λ's rule by
hand, and on simulated data: a label that leaks through a sensitive direction is used by the
baseline and not by SenSR, whose subspace attack moves freely along that direction.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from experiments.adult.twostage import (
    AUTHORS,
    Schedule,
    _Adam,
    _attack,
    _lambda_rule,
    _train_grads,
    forward,
    train_networks,
)
from tests.celery_support import require

HAVE_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture
def torch():
    require(HAVE_TORCH, "PyTorch is not installed (make extras)")
    import torch

    torch.manual_seed(0)
    return torch


def _net(torch, r=2, n=7, d=5, h=6):
    x = torch.randn(r, n, d, dtype=torch.float64)
    y = torch.randint(0, 2, (r, n)).double()
    weights = [
        torch.randn(r, d, h, dtype=torch.float64),
        torch.randn(r, 1, h, dtype=torch.float64),
        torch.randn(r, h, 2, dtype=torch.float64),
        torch.randn(r, 1, 2, dtype=torch.float64),
    ]
    return x, y, weights


def _ce(torch, x, y, weights):
    w1, b1, w2, b2 = weights
    logits = torch.baddbmm(b2, torch.baddbmm(b1, x, w1).clamp_min(0), w2)
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, 2), y.reshape(-1).long(), reduction="none"
    ).reshape(y.shape)


def test_the_hand_written_gradients_are_autograds(torch):
    x, y, weights = _net(torch)
    loss, grads = _train_grads(torch, x, y, weights)
    params = [w.clone().requires_grad_() for w in weights]
    expected = _ce(torch, x, y, params).mean(dim=1)
    torch.testing.assert_close(loss, expected.detach())
    auto = torch.autograd.grad(expected.sum(), params)
    for got, want in zip(grads, auto, strict=True):
        torch.testing.assert_close(got, want)
    # the attacks' gradient in the input: dz · mask @ (W1ᵀ ⊙ (W2[:,1] − W2[:,0]))
    w1, b1, w2, b2 = weights
    xr = x.clone().requires_grad_()
    (grad_x,) = torch.autograd.grad(_ce(torch, xr, y, weights).sum(), xr)
    dz, mask, ce = forward(torch, torch.baddbmm(b1, x, w1), w2, b2, y)
    torch.testing.assert_close(ce, _ce(torch, x, y, weights))
    v_full = w1.transpose(1, 2) * (w2[:, :, 1:] - w2[:, :, :1])
    torch.testing.assert_close(torch.bmm(mask, v_full) * dz.unsqueeze(-1), grad_x)


def test_the_optimiser_is_adam(torch):
    value = torch.randn(3, 4, 2, dtype=torch.float64)
    ours, adam = value.clone(), _Adam(torch, value)
    reference = value.clone().requires_grad_()
    optimiser = torch.optim.Adam([reference], lr=0.01, eps=1e-8)
    for _ in range(5):
        grad = torch.randn_like(value)
        ours = adam.step(ours, grad, 0.01)
        reference.grad = grad.clone()
        optimiser.step()
    torch.testing.assert_close(ours, reference.detach(), rtol=1e-6, atol=1e-8)


def test_a_network_that_skips_keeps_its_weights_and_moments(torch):
    value = torch.ones(2, 3, 3, dtype=torch.float64)
    adam = _Adam(torch, value)
    new = adam.step(value, torch.ones_like(value), 0.1, active=torch.tensor([True, False]))
    assert (new[0] < 1).all()
    torch.testing.assert_close(new[1], value[1])
    assert adam.m[1].abs().sum() == 0
    assert adam.t.flatten().tolist() == [1, 0]


def test_lambdas_rule_by_hand(torch):
    lamb = torch.tensor([2.0, 2.0, 9.9, 1e-5, 2.0])
    dist = torch.tensor([0.02, 0.005, 1.0, 0.0, 0.01])
    got = _lambda_rule(torch, lamb, dist, 0.01)
    # 2 + (0.02/0.01)·0.01; 2 + (0.01/0.005)·(−0.005); capped at 10; floored at 1e-5; unchanged
    torch.testing.assert_close(got, torch.tensor([2.02, 1.99, 10.0, 1e-5, 2.0]))


def test_the_schedules_are_the_authors():
    assert AUTHORS["explore"] == Schedule(steps=30_000, lr=1e-4)  # 50 × 10, then 10 × 0.1, ρ 0.01
    assert (AUTHORS["explore"].subspace_steps, AUTHORS["explore"].subspace_lr) == (50, 10.0)
    assert (AUTHORS["explore"].full_steps, AUTHORS["explore"].full_lr) == (10, 0.1)
    assert AUTHORS["sensr"].steps == 12_000
    assert AUTHORS["sensr"].full_lr == 1e-4
    assert AUTHORS["baseline"].fair is False
    assert AUTHORS["baseline"].steps == 60_000
    budget = AUTHORS["explore"].scaled(100)
    assert (budget.steps, budget.lr) == (300, pytest.approx(1e-2))


def test_sensr_stops_using_a_sensitive_direction_the_baseline_uses(torch):
    rng = np.random.default_rng(0)
    n, d = 1_000, 3
    x = rng.normal(size=(n, d)).astype(np.float32)
    x[:, 0] = rng.integers(0, 2, n)  # the sensitive attribute, binary
    y = (x[:, 1] + 1.5 * x[:, 0] + 0.3 * rng.normal(size=n)) > 0.75
    direction = np.eye(d)[:1]
    common = {"steps": 300, "lr": 1e-2, "batch_size": 100, "hidden": 16}
    fair = Schedule(**common, subspace_steps=5, full_steps=1, rho=0.01)
    runs = {"seeds": [1, 2], "device": "cpu", "threads": 1}
    base = train_networks([x, x], [y, y], schedule=Schedule(**common, fair=False), **runs)
    sensr = train_networks(
        [x, x], [y, y], schedule=fair, directions=[direction] * 2, sigmas=[np.eye(d)] * 2, **runs
    )
    flipped = x.copy()
    flipped[:, 0] = 1 - flipped[:, 0]
    for b, f in zip(base, sensr, strict=True):
        alike_base, alike_fair = (b(x) == b(flipped)).mean(), (f(x) == f(flipped)).mean()
        assert (b(x) == y).mean() > 0.85  # the baseline learns the label …
        assert alike_base < 0.6  # … through the attribute
        assert alike_fair > 0.9  # SenSR's predictions hardly move when it flips


def _reference_attack(torch, xb, yb, weights, directions, sigma, lamb, full_lr, s):
    """The two stages as written in the paper's trainer: x + aD, then + e, autograd's gradients."""
    n = xb.shape[1]
    a = torch.zeros(xb.shape[0], n, directions.shape[1], dtype=xb.dtype)

    def ce(x):
        return _ce(torch, x, yb, weights)

    before = ce(xb).mean(dim=1)
    adam = _Adam(torch, a)
    for _ in range(s.subspace_steps):
        a_ = a.clone().requires_grad_()
        (grad,) = torch.autograd.grad(ce(xb + torch.bmm(a_, directions)).mean(dim=1).sum(), a_)
        a = adam.step(a, grad, s.subspace_lr, ascend=True)
    after = ce(xb + torch.bmm(a, directions)).mean(dim=1)
    failed = after < before
    a = torch.where(failed.reshape(-1, 1, 1), 0.0, a)
    x1 = xb + torch.bmm(a, directions)
    start = torch.where(failed, before, after)
    e = torch.zeros_like(xb)
    adam = _Adam(torch, e)
    lam = lamb.reshape(-1, 1, 1)
    for _ in range(s.full_steps):
        e_ = e.clone().requires_grad_()
        penalty = (torch.bmm(e_, sigma) * e_).sum(dim=2)
        objective = (ce(x1 + e_) - lam[:, :, 0] * penalty).mean(dim=1).sum()
        (grad,) = torch.autograd.grad(objective, e_)
        e = adam.step(e, grad, full_lr.reshape(-1, 1, 1), ascend=True)
    dist = (torch.bmm(e, sigma) * e).sum(dim=2).mean(dim=1)
    fell = ce(x1 + e).mean(dim=1) - lamb * dist < start
    return x1 + e, fell, dist


def test_the_attack_finds_the_adversarial_points_autograd_finds(torch):
    """The fast attack (the span's coordinates, transposed products) against the plain one."""
    r, n, d, h, k = 3, 40, 9, 12, 3
    x, y, weights = _net(torch, r=r, n=n, d=d, h=h)
    weights = [w * 0.3 for w in weights]
    directions = torch.linalg.qr(torch.randn(r, d, k, dtype=torch.float64))[0].transpose(1, 2)
    a = torch.randn(r, d, d, dtype=torch.float64)
    sigma = a @ a.transpose(1, 2) / d
    lamb = torch.tensor([0.5, 2.0, 5.0], dtype=torch.float64)
    full_lr = torch.tensor([0.1, 0.05, 0.1], dtype=torch.float64)
    schedule = Schedule(steps=1, lr=1e-3, subspace_steps=7, subspace_lr=0.5, full_steps=4)
    got = _attack(torch, x, y, weights, directions, sigma, lamb, full_lr, schedule)
    want = _reference_attack(torch, x, y, weights, directions, sigma, lamb, full_lr, schedule)
    assert (got[0] - x).abs().max() > 0.1  # the attack moved the points
    torch.testing.assert_close(got[0], want[0], rtol=1e-9, atol=1e-9)
    assert got[1].tolist() == want[1].tolist()
    torch.testing.assert_close(got[2], want[2], rtol=1e-9, atol=1e-12)
