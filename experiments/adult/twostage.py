"""SenSR as its authors ran it on Adult, in PyTorch, many networks trained together.

The algorithm of ``train_fair_nn`` in the authors' ``train_clp_adult.py`` (the trainer of the
seed paper's EXPLORE + SenSR script), written anew; each of ``R`` networks (one per run, each
with its own training data, sensitive directions and Sigma) takes every step in lockstep, as
one batched computation (``(R, n, ·)`` tensors), with hand-written gradients of its two-layer
ReLU network (checked against autograd in the tests):

1. a class-balanced batch (half of each class, drawn with replacement, fixed in advance);
2. **subspace attack**: ``x + a D`` (``D`` the k orthonormal sensitive directions), ``a`` free —
   Adam (``subspace_lr``, ``subspace_steps``) ascends the cross-entropy; undone for a network
   whose loss fell;
3. **full attack**: ``x + a D + e``; Adam (``full_lr``, ``full_steps``) ascends
   ``CE − λ · mean eᵀ Σ e``; a network whose objective fell skips this step's update and
   multiplies its ``full_lr`` by 0.999;
4. λ's rule: ``λ ← clip(λ + max(m, ρ)/min(m, ρ) · (m − ρ), 1e-5, 10)``, ``m`` the batch's mean
   ``eᵀ Σ e``, started at ``lamb_init``;
5. an Adam step (``lr``) of the network on the cross-entropy of the attacked batch.

The first step trains on the clean batch (their ``fair_start=0``: the attack starts at step 1)
and the network's Adam state is reset when the attacks start. ``Σ`` is the metric of the full
attack (EXPLORE's, or ``I − P`` for SenSR's own); without attacks (``fair=False``) this is the
authors' baseline ``train_nn``. Initialisation as theirs: weights uniform in
``±sqrt(6 / (fan_in + fan_out))``, biases 0.1. PyTorch is imported inside the functions (an
optional extra); the device is CUDA when present unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

ADAM_B1, ADAM_B2, ADAM_EPS = 0.9, 0.999, 1e-8
LAMBDA_MIN, LAMBDA_MAX = 1e-5, 10.0


@dataclass(frozen=True)
class Schedule:
    """One row's training: the authors' values are the presets in :data:`AUTHORS`."""

    steps: int
    lr: float
    batch_size: int = 1_000
    hidden: int = 100
    fair: bool = True
    subspace_steps: int = 50
    subspace_lr: float = 10.0
    full_steps: int = 10
    full_lr: float = 0.1
    rho: float = 0.01
    lamb_init: float = 2.0

    def as_dict(self) -> dict:
        return asdict(self)

    def scaled(self, factor: float) -> Schedule:
        """``steps / factor`` at ``lr × factor`` (the budget form of a schedule)."""
        if factor == 1:
            return self
        steps = max(1, round(self.steps / factor))
        return Schedule(**{**self.as_dict(), "steps": steps, "lr": self.lr * factor})


# The authors' settings: the baseline of SenSR's adult.py (train_nn), SenSR with its own metric
# and SenSR with EXPLORE's metric as the seed paper's EXPLORE + SenSR script calls them.
AUTHORS = {
    "baseline": Schedule(steps=60_000, lr=1e-5, fair=False),
    "sensr": Schedule(steps=12_000, lr=1e-4, full_steps=40, full_lr=1e-4, rho=0.001),
    "explore": Schedule(steps=30_000, lr=1e-4),
}


def _device(torch, name: str):
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


class _Adam:
    """TensorFlow 1's Adam on one tensor; ``active`` (R,) masks the networks that step."""

    def __init__(self, torch, like):
        self.torch = torch
        self.m = torch.zeros_like(like)
        self.v = torch.zeros_like(like)
        shape = (like.shape[0],) + (1,) * (like.dim() - 1)
        self.t = torch.zeros(shape, dtype=like.dtype, device=like.device)

    def step(self, value, grad, lr, *, ascend: bool = False, active=None):
        torch = self.torch
        if active is not None:
            mask = active.reshape(self.t.shape).to(grad.dtype)
            grad = grad * mask
            self.t += mask
        else:
            mask = None
            self.t += 1
        m = ADAM_B1 * self.m + (1 - ADAM_B1) * grad
        v = ADAM_B2 * self.v + (1 - ADAM_B2) * grad * grad
        if mask is not None:  # a network that skips keeps its moments
            m = torch.lerp(self.m, m, mask)
            v = torch.lerp(self.v, v, mask)
        self.m, self.v = m, v
        t = self.t.clamp_min(1)
        rate = lr * torch.sqrt(1 - ADAM_B2**t) / (1 - ADAM_B1**t)
        delta = rate * m / (torch.sqrt(v) + ADAM_EPS)
        if mask is not None:
            delta = delta * mask
        return value + delta if ascend else value - delta


def _init_weights(torch, r: int, d: int, hidden: int, generator, device):
    def uniform(shape):
        bound = float(np.sqrt(6.0 / (shape[-1] + shape[-2])))
        return (torch.rand(shape, generator=generator) * 2 - 1) * bound

    weights = [
        uniform((r, d, hidden)),
        torch.full((r, 1, hidden), 0.1),
        uniform((r, hidden, 2)),
        torch.full((r, 1, 2), 0.1),
    ]
    return [w.to(device) for w in weights]


def forward(torch, pre, w2, b2, y):
    """``(∂CE/∂z, ReLU mask, CE)`` per example of the logits ``relu(pre) W2 + b2``.

    Two classes: only ``z = logit₁ − logit₀`` matters, ``CE = softplus(z) − y z``, so
    ``∂CE/∂pre = (σ(z) − y) · mask ⊙ (W2[:, 1] − W2[:, 0])`` — the callers fold the last
    factor into a constant matrix (one matrix product per attack step, no (n, h) product).
    """
    hid = pre.clamp_min(0)
    # a product and a sum: bmm with a one-column right side is ~5x slower on a CPU
    z = (hid * _diff(w2).transpose(1, 2)).sum(dim=2) + (b2[:, :, 1] - b2[:, :, 0])
    return torch.sigmoid(z) - y, hid.sign(), torch.nn.functional.softplus(z) - y * z


def _diff(w2):
    return w2[:, :, 1:] - w2[:, :, :1]  # (R, h, 1)


def _train_grads(torch, x, y, weights):
    """Mean cross-entropy per network and its gradients (hand-written backpropagation)."""
    w1, b1, w2, b2 = weights
    n = x.shape[1]
    pre = torch.baddbmm(b1, x, w1)
    dz, mask, loss = forward(torch, pre, w2, b2, y)
    dz = dz / n
    diff_t = _diff(w2).transpose(1, 2)  # (R, 1, h)
    g_diff = torch.bmm(pre.clamp_min(0).transpose(1, 2), dz.unsqueeze(-1))  # (R, h, 1)
    g_w2 = torch.cat([-g_diff, g_diff], dim=2)
    s = dz.sum(dim=1).reshape(-1, 1, 1)
    g_b2 = torch.cat([-s, s], dim=2)
    # ∂/∂W1[j, h] = Σ_i x_ij dz_i mask_ih diff_h: the (n, h) product folded into the matmul
    g_w1 = torch.bmm((x * dz.unsqueeze(-1)).transpose(1, 2), mask) * diff_t
    g_b1 = torch.bmm(dz.unsqueeze(1), mask) * diff_t
    return loss.mean(dim=1), [g_w1, g_b1, g_w2, g_b2]


def _attack(torch, xb, yb, weights, directions, sigma, lamb, full_lr, s: Schedule):
    """The two stages on one batch: ``(x + aD + e, objective fell in full attack, mean eᵀΣe)``.

    Both attacks keep their variables transposed, ``aᵀ`` (R, k, n) and ``eᵀ`` (R, d, n): the
    gradients are then ``Uᵀ maskᵀ`` products with a wide right side, which a CPU's matrix
    product runs ~5x faster than ``mask U`` with a k- or d-column result (same sums).
    The subspace attack works in the span's coordinates: ``W1ᵀ(x + Dᵀa) = W1ᵀx + (D W1)ᵀ a``,
    ``W1ᵀx`` once per batch, so each of its steps costs n·h·k, not n·h·d.
    """
    w1, b1, w2, b2 = weights
    n = xb.shape[1]
    diff_t = _diff(w2).transpose(1, 2)  # (R, 1, h)
    p0 = torch.baddbmm(b1, xb, w1)
    m_dir = torch.bmm(directions, w1)  # (R, k, h): a moves pre by a @ m_dir
    u_dir_t = m_dir * diff_t  # (R, k, h): ∂z/∂a = mask @ u_dir_tᵀ
    a_t = torch.zeros(xb.shape[0], directions.shape[1], n, dtype=xb.dtype, device=xb.device)
    before = forward(torch, p0, w2, b2, yb)[2].mean(dim=1)
    adam = _Adam(torch, a_t)
    for _ in range(s.subspace_steps):
        dz, mask, _ = forward(torch, torch.baddbmm(p0, a_t.transpose(1, 2), m_dir), w2, b2, yb)
        grad = torch.bmm(u_dir_t, mask.transpose(1, 2)) * (dz / n).unsqueeze(1)
        a_t = adam.step(a_t, grad, s.subspace_lr, ascend=True)
    p1 = torch.baddbmm(p0, a_t.transpose(1, 2), m_dir)
    after = forward(torch, p1, w2, b2, yb)[2].mean(dim=1)
    failed = (after < before).reshape(-1, 1, 1)
    a_t = torch.where(failed, 0.0, a_t)
    p1 = torch.where(failed, p0, p1)
    start = torch.where(failed.flatten(), before, after)  # e = 0: no distance yet
    e_t = torch.zeros_like(xb.transpose(1, 2))
    lam = lamb.reshape(-1, 1, 1)
    sigma_t = sigma.transpose(1, 2).contiguous()  # (e Σ)ᵀ = Σᵀ eᵀ
    if s.full_steps:
        v_full_t = w1 * diff_t  # (R, d, h): ∂z/∂e = mask @ v_full_tᵀ
        adam = _Adam(torch, e_t)
        rate = full_lr.reshape(-1, 1, 1)
        for _ in range(s.full_steps):
            dz, mask, _ = forward(torch, torch.baddbmm(p1, e_t.transpose(1, 2), w1), w2, b2, yb)
            grad = torch.bmm(v_full_t, mask.transpose(1, 2)) * dz.unsqueeze(1)
            grad = grad - lam * 2 * torch.bmm(sigma_t, e_t)
            e_t = adam.step(e_t, grad / n, rate, ascend=True)
    loss_e = forward(torch, torch.baddbmm(p1, e_t.transpose(1, 2), w1), w2, b2, yb)[2]
    dist = (torch.bmm(sigma, e_t) * e_t).sum(dim=1).mean(dim=1)  # eᵀ Σ e per record
    fell = loss_e.mean(dim=1) - lamb * dist < start
    return xb + torch.bmm(a_t.transpose(1, 2), directions) + e_t.transpose(1, 2), fell, dist


def train_networks(
    xs: list[np.ndarray],
    ys: list[np.ndarray],
    *,
    schedule: Schedule,
    seeds: list[int],
    directions: list[np.ndarray] | None = None,
    sigmas: list[np.ndarray] | None = None,
    device: str = "auto",
    threads: int = 0,
    log: Callable[[str], None] = lambda _: None,
) -> list[Callable[[np.ndarray], np.ndarray]]:
    """Train one network per run (all runs share d); returns ``predict(x) -> bool`` for each.

    ``directions[r]`` (k × d, orthonormal rows) and ``sigmas[r]`` (d × d) are run r's
    sensitive directions and full-attack metric; both are needed when ``schedule.fair``.
    """
    torch = _torch()
    if threads:
        torch.set_num_threads(threads)
    dev = _device(torch, device)
    r, d = len(xs), xs[0].shape[1]
    if schedule.fair and (directions is None or sigmas is None):
        raise ValueError("SenSR needs the sensitive directions and Sigma of each run")
    generator = torch.Generator().manual_seed(int(seeds[0]))
    rngs = [np.random.default_rng(int(seed)) for seed in seeds]
    n_rows = min(x.shape[0] for x in xs)
    # the runs' training sets have the same size up to a row: trim to the smallest
    x_all = torch.as_tensor(np.stack([x[:n_rows] for x in xs]), dtype=torch.float32).to(dev)
    y_all = torch.as_tensor(np.stack([y[:n_rows] for y in ys]).astype(np.float32)).to(dev)
    weights = _init_weights(torch, r, d, schedule.hidden, generator, dev)
    if schedule.fair:
        dirs = torch.as_tensor(np.stack(directions), dtype=torch.float32).to(dev)
        sig = torch.as_tensor(np.stack(sigmas), dtype=torch.float32).to(dev)
    lamb = torch.full((r,), schedule.lamb_init, device=dev)
    full_lr = torch.full((r,), schedule.full_lr, device=dev)
    half = schedule.batch_size // 2
    pos = [np.flatnonzero(y[:n_rows]) for y in ys]
    neg = [np.flatnonzero(~np.asarray(y[:n_rows], bool)) for y in ys]
    adams = [_Adam(torch, w) for w in weights]
    skipped = 0
    for step in range(schedule.steps):
        rows = np.stack(
            [
                np.r_[rng.choice(neg[i], half), rng.choice(pos[i], schedule.batch_size - half)]
                for i, rng in enumerate(rngs)
            ]
        )
        idx = torch.as_tensor(rows, device=dev)
        xb = torch.gather(x_all, 1, idx.unsqueeze(-1).expand(-1, -1, d))
        yb = torch.gather(y_all, 1, idx)
        active = None
        clean = xb
        if schedule.fair and step > 0:
            if step == 1:  # the attacks start: a fresh optimiser, as theirs
                adams = [_Adam(torch, w) for w in weights]
            xb, fell, mean_dist = _attack(
                torch, xb, yb, weights, dirs, sig, lamb, full_lr, schedule
            )
            bad = torch.isnan(xb).flatten(1).any(dim=1)
            active = ~(fell | bad)
            full_lr = torch.where(fell, full_lr * 0.999, full_lr)
            xb = torch.where(bad.reshape(-1, 1, 1), clean, xb)
            new = _lambda_rule(torch, lamb, mean_dist, schedule.rho)
            lamb = torch.where(active, new, lamb)
            skipped += int((~active).sum())
        _, grads = _train_grads(torch, xb, yb, weights)
        weights = [
            adam.step(w, g, schedule.lr, active=active)
            for adam, w, g in zip(adams, weights, grads, strict=True)
        ]
        if (step + 1) % max(1, schedule.steps // 10) == 0:
            log(f"step {step + 1}/{schedule.steps}: λ {lamb.mean():.4f}, skipped {skipped}")
    return [_predictor(torch, [w[i : i + 1] for w in weights], dev) for i in range(r)]


def _lambda_rule(torch, lamb, mean_dist, rho: float):
    """Their update: ``λ + max(m, ρ)/min(m, ρ) · (m − ρ)``, clipped to [1e-5, 10]."""
    ratio = torch.clamp(mean_dist, min=rho) / torch.clamp(mean_dist, max=rho).clamp_min(1e-30)
    return (lamb + ratio * (mean_dist - rho)).clamp(LAMBDA_MIN, LAMBDA_MAX)


def _predictor(torch, weights, dev):
    w1, b1, w2, b2 = weights

    def predict(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            xt = torch.as_tensor(np.asarray(x), dtype=torch.float32).to(dev).unsqueeze(0)
            logits = torch.baddbmm(b2, torch.baddbmm(b1, xt, w1).clamp_min(0), w2)
        return logits[0].argmax(dim=1).cpu().numpy().astype(bool)

    return predict


def _torch():
    try:
        import torch
    except ImportError:
        raise RuntimeError("PyTorch is not installed: make extras") from None
    return torch
