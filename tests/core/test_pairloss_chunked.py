"""EXPLORE's loss/gradient pass a chunk of pairs at a time (learning/core/_pairloss.py) equals
the whole-array pass the solver runs, over an in-memory array, a memory-mapped file and pair
differences built on the fly; and its gradient is the loss's (finite differences)."""

from __future__ import annotations

import numpy as np
import pytest

from learning.core._pairloss import (
    PairBlocks,
    PairDifferences,
    loglik_and_gradient,
    quad_forms,
    weighted_gram,
)


def _world(dtype, n=6000, d=7, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(300, d)).astype(dtype)
    a = rng.integers(0, 300, size=n)
    b = (a + rng.integers(1, 300, size=n)) % 300
    y = rng.choice([1.0, 0.0, 0.3, 0.8], size=n, p=[0.45, 0.45, 0.05, 0.05])
    w = rng.gamma(2.0, 0.5, size=n)
    w /= w.mean()
    q = rng.normal(size=(d, d))
    sigma = q @ q.T / d + 0.1 * np.eye(d)
    return x, a, b, y, w, sigma


def _whole_array(z, sigma, y, w):
    """The solver's pass (``_explore_solver``): sort into blocks, distances, slope, gram."""
    order = PairBlocks.order(y)
    z, y, w = z[order], y[order], w[order]
    blocks = PairBlocks.from_sorted(y, w)
    ll, slope = blocks.loglik_and_slope(quad_forms(z, sigma))
    return ll, weighted_gram(z, slope, blocks) / y.size


@pytest.mark.parametrize(("dtype", "rtol"), [(np.float64, 1e-10), (np.float32, 2e-5)])
def test_the_chunked_pass_equals_the_whole_array_pass(tmp_path, dtype, rtol):
    x, a, b, y, w, sigma = _world(dtype)
    z = x[a] - x[b]
    expected_ll, expected_grad = _whole_array(z, sigma, y, w)
    np.save(tmp_path / "z.npy", z)
    mapped = np.load(tmp_path / "z.npy", mmap_mode="r")
    for source in (z, mapped, PairDifferences(x, a, b)):
        for chunk in (777, 6000, 10_000):
            ll, grad = loglik_and_gradient(source, sigma, y, w, chunk=chunk)
            assert ll == pytest.approx(expected_ll, rel=rtol)
            np.testing.assert_allclose(grad, expected_grad, rtol=rtol, atol=rtol * 1e-2)
    ll, grad = loglik_and_gradient(z, sigma, y, chunk=1000)  # unweighted
    ones = np.ones_like(w)
    np.testing.assert_allclose(grad, _whole_array(z, sigma, y, ones)[1], rtol=rtol)


def test_the_gradient_is_the_derivative_of_the_mean_loglik():
    x, a, b, y, w, sigma = _world(np.float64, n=800)
    z = PairDifferences(x, a, b)
    _, grad = loglik_and_gradient(z, sigma, y, w, chunk=100)
    rng = np.random.default_rng(9)
    e = rng.normal(size=sigma.shape)
    e = (e + e.T) / 2
    step = 1e-6
    up = loglik_and_gradient(z, sigma + step * e, y, w)[0]
    down = loglik_and_gradient(z, sigma - step * e, y, w)[0]
    assert np.sum(grad * e) == pytest.approx((up - down) / (2 * step), rel=1e-6)


def test_weighted_gram_over_index_rows_of_a_mapped_array(tmp_path):
    x, a, b, y, w, _ = _world(np.float64)
    z = x[a] - x[b]
    np.save(tmp_path / "z.npy", z)
    mapped = np.load(tmp_path / "z.npy", mmap_mode="r")
    signed = w * np.where(y > 0.5, -1.0, 1.0)
    expected = (z * signed[:, None]).T @ z
    np.testing.assert_allclose(weighted_gram(mapped, signed), expected, rtol=1e-10)
    np.testing.assert_allclose(
        weighted_gram(PairDifferences(x, a, b), signed), expected, rtol=1e-10
    )
