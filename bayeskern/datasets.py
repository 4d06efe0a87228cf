"""Data for analyses: the bundled synthetic generators, CSV files, and data sets that ship with installed packages."""

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bayeskern._validation import check_integer, check_number, check_seed

__all__ = ["MAX_CSV_ROWS", "PACKAGE_DATASETS", "SOURCE_KEYS", "Data", "Standardisation", "load", "sinusoid"]


@dataclass(frozen=True)
class Standardisation:
    """The z-scores z = (v − mean) / sd a data set's columns were put into: X's per column, y's."""

    x_mean: np.ndarray
    x_sd: np.ndarray
    y_mean: float
    y_sd: float

    def inputs(self, X: np.ndarray) -> np.ndarray:
        """Inputs in the data's own units (rows like X's) as the model sees them: (x − mean) / sd per column."""
        return (X - self.x_mean) / self.x_sd

    def targets(self, y: np.ndarray) -> np.ndarray:
        """Targets in the data's own units as the model sees them: (y − mean) / sd."""
        return (y - self.y_mean) / self.y_sd

    def as_dict(self) -> dict:
        return {"x_mean": self.x_mean.tolist(), "x_sd": self.x_sd.tolist(), "y_mean": self.y_mean, "y_sd": self.y_sd}


@dataclass(frozen=True)
class Data:
    """Inputs X (n, d), targets y (n,), their column names, a sentence saying where they came from, and the
    standardisation they were put into (None: the data's own units)."""

    X: np.ndarray
    y: np.ndarray
    x_names: tuple
    y_name: str
    description: str
    standardisation: Standardisation | None = None

    def label(self, name: str) -> str:
        """A column's name as an axis shows it: with "(standardised)" where the model sees z-scores."""
        return name if self.standardisation is None else f"{name} (standardised)"


def sinusoid(n: int = 10, noise: float = 0.3, seed=0) -> tuple[np.ndarray, np.ndarray]:
    """PRML's running example (figure 1.2): t = sin(2πx) + ε, ε ~ N(0, noise²), x evenly spaced in [0, 1].

    Returns X (n, 1) and t (n,); the same seed gives the same data.
    """
    n, seed = check_integer(n, "n", 1), check_seed(seed)
    noise = float(check_number(noise, "noise", nonnegative=True, scalar=True))
    x = np.linspace(0.0, 1.0, n)
    t = np.sin(2 * np.pi * x) + noise * np.random.default_rng(seed).standard_normal(n)
    return x[:, None], t


def _sklearn_diabetes():
    """Efron et al. (2004): disease progression one year after baseline, 442 patients, 10 baseline variables."""
    try:
        from sklearn.datasets import load_diabetes
    except ImportError:
        raise ImportError("the 'sklearn.diabetes' data ship with scikit-learn: pip install scikit-learn") from None
    d = load_diabetes(scaled=True)  # the columns as distributed: mean-centred, scaled to unit sum of squares
    return d.data, d.target, tuple(d.feature_names), "target"


#: data sets that ship inside installed packages: name → loader returning (X, y, column names, target name)
PACKAGE_DATASETS = {"sklearn.diabetes": _sklearn_diabetes}

#: the keys each data source accepts in a spec's [data] table
SOURCE_KEYS = {
    "sinusoid": {"n", "noise", "seed"},
    "csv": {"path", "x", "y", "n", "seed", "standardize"},
    **{name: {"x", "n", "seed", "standardize"} for name in PACKAGE_DATASETS},
}


#: the most rows a CSV file may have (a spec then takes a subset of data.n rows)
MAX_CSV_ROWS = 1_000_000


def _read_csv(path: Path, columns: list, what: list) -> list[np.ndarray]:
    """The named columns of a CSV file with a header row, as float arrays (one list of names per entry of `columns`;
    `what` names them in messages: "data.x", "data.y"). Only those columns must hold numbers; messages give the file's
    line numbers."""
    rows, lines = [], []
    with path.open(newline="", encoding="utf-8-sig") as f:  # -sig: a byte-order mark is not part of the first name
        reader = csv.reader(f)
        try:
            for row in reader:
                if any(cell.strip() for cell in row):  # blank lines skipped
                    rows.append(row)
                    lines.append(reader.line_num)  # the line the row ends on (a quoted field may span lines)
                if len(rows) > MAX_CSV_ROWS + 1:
                    raise ValueError(f"{path} has more than {MAX_CSV_ROWS:,} rows")
        except csv.Error as err:  # e.g. a field larger than the csv module's limit
            raise ValueError(f"{path} is not a readable CSV file: {err}") from None
    if len(rows) < 2:
        raise ValueError(f"{path} has no data rows under its header")
    header, body = rows[0], rows[1:]
    ragged = next((k for k, row in enumerate(body) if len(row) != len(header)), None)
    if ragged is not None:
        raise ValueError(f"{path}: every row must have {len(header)} values, like the header; line {lines[ragged + 1]} has {len(body[ragged])}")
    out = []
    for names, where in zip(columns, what, strict=True):
        index = _column_indices(header, names, f"{where} of {path}")
        values = np.empty((len(body), len(index)))
        for k, row in enumerate(body):
            for j, i in enumerate(index):
                try:
                    values[k, j] = float(row[i])
                except ValueError:
                    raise ValueError(f"{path}: column {header[i]!r} ({where}) must hold numbers; line {lines[k + 1]} has "
                                     f"{row[i][:40]!r}") from None
                if not np.isfinite(values[k, j]):  # "nan", "inf" parse as floats; the models need finite data
                    raise ValueError(f"{path}: column {header[i]!r} ({where}) must hold finite numbers; line {lines[k + 1]} has "
                                     f"{row[i].strip()[:40]!r}")
        out.append(values)
    return out


def _column_indices(header, names, what: str) -> list[int]:
    """The positions of `names` in `header`: a ValueError naming a column that is missing, or that the header has twice."""
    header = list(header)
    for c in names:
        if header.count(c) != 1:
            problem = f"no column {c!r}" if c not in header else f"the header has the column {c!r} {header.count(c)} times"
            raise ValueError(f"{what}: {problem}; columns: {', '.join(header)}")
    return [header.index(c) for c in names]


def _columns(table: np.ndarray, header, names, what: str) -> np.ndarray:
    return table[:, _column_indices(header, names, what)]


def load(source: str, base=".", n=None, seed=0, noise=0.3, path=None, x=None, y=None, standardize=False) -> Data:
    """The data a spec's [data] table describes.

    `source`: "sinusoid" (n, noise, seed), "csv" (path relative to `base`, x column names, y column
    name), or a name in PACKAGE_DATASETS (x: which of its columns; default all). For "csv" and the
    package data sets, `n` takes a random subset of n rows (by `seed`) and `standardize` centres and
    scales every column of X and y to mean 0, sd 1 — a zero-mean GP needs centred targets.
    """
    if not isinstance(source, str):
        raise ValueError(f"source must be a string naming the data source, got {type(source).__name__}")
    n, seed = None if n is None else check_integer(n, "n", 1), check_seed(seed)
    if source == "sinusoid":
        X, t = sinusoid(10 if n is None else n, noise, seed)  # sinusoid()'s own defaults
        return Data(X, t, ("x",), "t", f"PRML's sinusoid t = sin(2πx) + ε, n = {len(t)}, noise sd {noise}, seed {seed}")
    if source == "csv":
        if path is None or x is None or y is None:
            raise ValueError("a csv source needs path, x (column names) and y (a column name)")
        if y in x:
            raise ValueError(f"the target column {y!r} is also an input (data.x)")
        file = Path(base) / path
        X, t = _read_csv(file, [list(x), [y]], ["data.x", "data.y"])
        t, x_names, y_name = t[:, 0], tuple(x), y
        origin = f"{path}"
    elif source in PACKAGE_DATASETS:
        X, t, x_names, y_name = PACKAGE_DATASETS[source]()
        if x is not None:
            X, x_names = _columns(X, x_names, x, "data.x"), tuple(x)
        origin = f"{source} ({PACKAGE_DATASETS[source].__doc__.split(':')[0]})"
    else:
        raise ValueError(f"unknown source {source!r}; available: sinusoid, csv, {', '.join(PACKAGE_DATASETS)}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(t))):
        raise ValueError(f"{origin}: the data hold NaN or infinite values")
    if n is not None:
        if n > len(t):
            raise ValueError(f"n = {n} but {origin} has only {len(t)} rows")
        rows = np.sort(np.random.default_rng(seed).choice(len(t), size=n, replace=False))
        X, t = X[rows], t[rows]
    scaled = None
    if standardize:  # z = (v − mean) / sd per column
        scaled = Standardisation(X.mean(axis=0), X.std(axis=0), float(t.mean()), float(t.std()))
        if np.any(scaled.x_sd == 0) or scaled.y_sd == 0:
            raise ValueError(f"{origin}: a constant column cannot be standardised")
        X, t = scaled.inputs(X), scaled.targets(t)
    how = ", standardised (every column of X and y to mean 0, sd 1)" if standardize else ""
    return Data(np.asarray(X, float), np.asarray(t, float), tuple(x_names), y_name,
                f"{origin}: {len(t)} rows, inputs {', '.join(x_names)}, target column {y_name!r}{how}", scaled)
