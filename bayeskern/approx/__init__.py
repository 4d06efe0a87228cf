"""Approximate GPs for large n: the Hilbert-space basis (HSGP) and inducing points, as solvers behind the exact GP's interface."""

from bayeskern.approx.hsgp import HSGP
from bayeskern.approx.vfe import VFE

__all__ = ["HSGP", "VFE", "check_approx"]

#: what `approx=` accepts
APPROXIMATIONS = (HSGP, VFE)


def check_approx(approx, name: str = "approx", exact_allowed: bool = False):
    """An approximation object of this module (`HSGP(...)`, `VFE(...)`), else a ValueError naming what was given (and
    None, the exact GP, among what may be, where the caller takes it: `exact_allowed`)."""
    if not isinstance(approx, APPROXIMATIONS):
        exact = "None (the exact GP), " if exact_allowed else ""
        raise ValueError(f"{name} must be {exact}bayeskern.approx.HSGP(...) or bayeskern.approx.VFE(...), got {approx!r}")
    return approx
