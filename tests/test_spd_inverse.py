"""C⁻¹ from its Cholesky factor by halving (`_spd_inverse`): against numpy's inverse, LAPACK's potri, and itself on Numba."""

import numpy as np
import pytest
import scipy.linalg
from threadpoolctl import threadpool_limits

from bayeskern._spd_inverse import LEAF, inverse_diagonal, potri

EPS = np.finfo(np.float64).eps


def spd(n: int, condition: float, seed: int) -> np.ndarray:
    """A random symmetric positive definite n × n matrix with eigenvalues spread log-evenly over [1, condition]."""
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    return (Q * np.geomspace(1.0, condition, n)) @ Q.T


def factor(C: np.ndarray) -> np.ndarray:
    """C = UᵀU's U in a Fortran-ordered array, zeros below the diagonal (what the likelihood Op hands to potri)."""
    return np.asfortranarray(scipy.linalg.cholesky(C, lower=False))


SIZES = [1, 2, LEAF, LEAF + 1, 2 * LEAF + 1, 200, 501]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("condition", [10.0, 1e8])
def test_the_inverse_is_numpys_to_round_off_and_below_the_diagonal_is_untouched(n, condition):
    C = spd(n, condition, seed=n)
    U = factor(C)
    below = np.tril_indices(n, -1)
    U[below] = sentinel = np.random.default_rng(n).standard_normal(len(below[0]))  # finite: any product with it shows
    got = potri(U)
    assert got is U
    np.testing.assert_array_equal(U[below], sentinel)  # not read (the inverse is right) and not written
    inverse = np.triu(U) + np.triu(U, 1).T
    want = np.linalg.inv(C)
    # an inverse from a backward-stable Cholesky is accurate to about n·ε·cond(C) relative to ‖C⁻¹‖ (Higham, Accuracy and
    # Stability, ch. 14), numpy's own error included; measured here: at most 0.14 of that bound (n = 2, cond 1e8)
    assert np.abs(inverse - want).max() <= n * EPS * condition * np.abs(want).max()


@pytest.mark.parametrize("n", [0, *SIZES])
@pytest.mark.parametrize("condition", [10.0, 1e8])
def test_the_inverses_diagonal_from_the_lower_factor_is_numpys_and_above_the_diagonal_is_not_read(n, condition):
    """[C⁻¹]ᵢᵢ = Σₖ [L⁻¹]ₖᵢ² (the leave-one-out predictive's and kernel ridge's need) against numpy's inverse."""
    C = spd(n, condition, seed=n + 1)
    L = np.linalg.cholesky(C)
    above = np.triu_indices(n, 1)
    L[above] = np.random.default_rng(n).standard_normal(len(above[0]))  # finite: any product with it shows
    kept = L.copy()
    got = inverse_diagonal(L)
    np.testing.assert_array_equal(L, kept)  # left as it was
    want = np.diagonal(np.linalg.inv(C))
    # each [C⁻¹]ᵢᵢ is a sum of squares of L⁻¹'s entries (no cancellation), and L⁻¹ from a backward-stable factor is
    # accurate to ~n·ε·cond(C) relative (Higham ch. 8 and 14), numpy's inverse included: that bound entry by entry;
    # measured at most 0.05 of it
    assert got.shape == (n,) and np.all(np.abs(got - want) <= n * EPS * condition * want)
    with pytest.raises(ValueError, match="square"):
        inverse_diagonal(np.ones((3, 2)))
    if n:
        L[n // 2, n // 2] = 0.0
        with pytest.raises(ValueError, match="singular"):
            inverse_diagonal(L)


@pytest.mark.parametrize("n", [LEAF + 1, 200, 501])
def test_the_inverse_is_lapacks_potri_to_round_off(n):
    """The same quantity as potri (trtri then lauum), by another order of operations: round-off apart only."""
    C = spd(n, 1e4, seed=7)
    ours = np.triu(potri(factor(C)))
    lapack, info = scipy.linalg.lapack.dpotri(factor(C), lower=0)
    assert info == 0
    # measured: 2.9e-16 (n = 33) to 9.3e-16 (n = 501) relative to max |C⁻¹|, at cond(C) = 1e4; 1e-14 allows 10× that
    # and stays 1e14 below what a wrong block or sign would give
    assert np.abs(ours - np.triu(lapack)).max() <= 1e-14 * np.abs(lapack).max()


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("threads", [1, 2])
def test_the_numba_implementation_makes_the_same_calls_to_the_bit(n, threads):
    pytest.importorskip("numba")
    from pytensor.link.numba.dispatch import basic as numba_basic  # (first: it registers bayeskern's Numba modules)

    from bayeskern._spd_inverse_numba import potri as potri_numba

    call = numba_basic.numba_njit(final_function=True)(lambda A: potri_numba(A))
    U = factor(spd(n, 1e6, seed=3 * n))
    above = np.triu_indices(n, 1)
    numba_in = np.array(U.T, order="C")  # a copy in C order: the factor's transpose, as the Numba Op holds it
    numba_in[above] = sentinel = np.random.default_rng(n).standard_normal(len(above[0]))  # finite: any product with it shows
    with threadpool_limits(threads):
        scipy_out = potri(U.copy(order="F"))
        call(numba_in)
    np.testing.assert_array_equal(np.triu(scipy_out), np.triu(numba_in.T))
    np.testing.assert_array_equal(numba_in[above], sentinel)  # above the diagonal (C order): neither read nor written


def test_an_array_potri_cannot_write_in_place_is_refused():
    U = factor(spd(4, 10.0, seed=0))
    for bad in (np.ascontiguousarray(U), U.astype(np.float32), U[:3, :3]):
        with pytest.raises(ValueError, match="aligned, Fortran-ordered float64"):
            potri(bad)
    read_only = U.copy(order="F")
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        potri(read_only)
    assert potri(np.zeros((0, 0), order="F")).shape == (0, 0)


def test_the_leave_one_out_predictive_over_the_halved_inverse_is_the_explicit_inverses():
    """`_linalg.loo_gaussian` (C⁻¹'s diagonal by this potri) against R&W 5.12 written with numpy's inverse, at an n
    halved three times; a zero on the factor's diagonal is refused as LAPACK's potri refused it."""
    import reference as ref

    from bayeskern._linalg import loo_gaussian

    n = 4 * LEAF + 5
    C = spd(n, 1e3, seed=11)
    t = np.random.default_rng(12).standard_normal(n)
    L = np.linalg.cholesky(C)
    ours = loo_gaussian(L, t, scipy.linalg.cho_solve((L, True), t))
    # cond(C) = 1e3: each side within ~n·ε·1e3 ≈ 3e-11 relative of the exact values; measured 3.2e-12 (the means), 1.5e-14
    for got, want in zip(ours, ref.gp_loo(C, t), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_array_equal(L, np.linalg.cholesky(C))  # the factor is left as it was
    L[5, 5] = 0.0
    with pytest.raises(ValueError, match="singular"):
        loo_gaussian(L, t, t)



def test_the_routines_keep_pythons_lock_through_each_call():
    """Each of the ~20–60 LAPACK/BLAS calls of one inverse holds Python's lock, as SciPy's wrappers do. Released and taken
    back at each call, an inverse beside a thread running Python waited up to the switch interval (5 ms) a call: at
    n = 200, 0.29 ms alone against 112–119 ms (session 43's review, `while not stop[0]: x += 1` in the other thread).
    The wait is a race of thread wake-ups, too irregular for a timing test here: the functions' kind is checked."""
    import ctypes

    import bayeskern._spd_inverse as spd_inverse

    for routine in (spd_inverse._trtri, spd_inverse._trmm, spd_inverse._lauum):
        assert routine._flags_ & ctypes._FUNCFLAG_PYTHONAPI  # ctypes.PYFUNCTYPE's: the lock is not released
