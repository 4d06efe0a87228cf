"""Bundled synthetic data sets, shared by the demo, the model specs and the tests."""

import numpy as np

from bayeskern._validation import check_integer

__all__ = ["sinusoid"]


def sinusoid(n: int = 10, noise: float = 0.3, seed=0) -> tuple[np.ndarray, np.ndarray]:
    """PRML's running example (figure 1.2): t = sin(2πx) + ε, ε ~ N(0, noise²), x evenly spaced in [0, 1].

    Returns X (n, 1) and t (n,); the same seed gives the same data.
    """
    n = check_integer(n, "n", 1)
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be a non-negative number, got {noise!r}")
    x = np.linspace(0.0, 1.0, n)
    t = np.sin(2 * np.pi * x) + noise * np.random.default_rng(seed).standard_normal(n)
    return x[:, None], t
