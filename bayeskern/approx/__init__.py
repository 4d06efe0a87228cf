"""Approximate GPs for large n: the Hilbert-space basis (HSGP) and inducing points, as solvers behind the exact GP's interface."""

from bayeskern.approx.hsgp import HSGP
from bayeskern.approx.vfe import VFE

__all__ = ["HSGP", "VFE", "check_approx"]

#: what `approx=` accepts
APPROXIMATIONS = (HSGP, VFE)


def check_approx(approx, name: str = "approx"):
    """An approximation object of this module (`HSGP(...)`), else a ValueError naming what was given."""
    if not isinstance(approx, APPROXIMATIONS):
        raise ValueError(f"{name} must be None (the exact GP) bayeskern.approx.HSGP(...) or bayeskern.approx.VFE(...), got {approx!r}")
    return approx
