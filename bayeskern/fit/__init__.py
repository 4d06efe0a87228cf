"""Fitting hyperparameters: empirical Bayes (type-II maximum likelihood) and, in time, MCMC."""

from bayeskern.fit.empirical_bayes import EmpiricalBayesResult, FitWarning, Laplace, Optimum, empirical_bayes
from bayeskern.fit.plug_in import PlugIn

__all__ = ["EmpiricalBayesResult", "FitWarning", "Laplace", "Optimum", "PlugIn", "empirical_bayes"]
