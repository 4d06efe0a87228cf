"""The warning every fitter of `bayeskern.fit` gives when a fit finished but its answer needs a second look."""

__all__ = ["FitWarning"]


class FitWarning(UserWarning):
    """A fit finished, but its answer needs a second look (not converged, at a bound, several optima, jitter)."""
