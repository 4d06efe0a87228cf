"""Fitting hyperparameters: empirical Bayes (type-II maximum likelihood) and Bishop's evidence approximation."""

from bayeskern.fit.empirical_bayes import EmpiricalBayesResult, FitWarning, Laplace, Optimum, empirical_bayes
from bayeskern.fit.evidence import EvidenceResult, evidence_approximation
from bayeskern.fit.plug_in import PlugIn

__all__ = [
    "EmpiricalBayesResult",
    "EvidenceResult",
    "FitWarning",
    "Laplace",
    "Optimum",
    "PlugIn",
    "empirical_bayes",
    "evidence_approximation",
]
