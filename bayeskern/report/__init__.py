"""Reports: turn analysis results into files (JSON summary, Markdown, CSV), written atomically."""

from bayeskern.report.gp_fit import gp_fit_files
from bayeskern.report.writer import write_atomically

__all__ = ["gp_fit_files", "write_atomically"]
