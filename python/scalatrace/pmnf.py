"""Multi-parameter PMNF fits (Extra-P's multi-parameter modeling, on :func:`fit_scaling`'s
machinery).

A multi-parameter hypothesis is ``c0 + sum_k c_k * prod_{l in S_k} x_l**i_l * log2(x_l)**j_l``.
As Extra-P does it: for every parameter the best single-parameter terms are found first (on the
lines of measurements where the other parameters stay fixed, scored by leave-one-out SMAPE with
:mod:`scalatrace.extrapolate`'s batched least squares), then every sum of up to ``max_terms``
products of those terms is scored by leave-one-out cross-validation on all points.

Unlike Extra-P (which keeps the lowest SMAPE), both steps prefer the simplest hypothesis that
fits within the noise: among the hypotheses whose leave-one-out SMAPE is at most
``_NOISE_FACTOR`` (1.5) times the lowest, the one of least :func:`complexity` is taken (fewer
terms, then fewer logarithms, then fewer fractional exponents, then fewer parameter factors),
the lower SMAPE breaking ties; the plain powers ``x``, ``x^2`` and ``x^-1`` of every parameter
always reach the second step. From a few noisy points, ``N^(2/3)*log2(N)*K^(3/4)*log2(K)^2``
often fits the training points a little better than the true ``N*K`` and extrapolates far
worse. The least squares are weighted by ``1 / |y|`` (relative residuals, as SMAPE scores them
and as timing noise is): unweighted, the largest values set the constant and the small ones,
where a per-message cost shows, are fitted badly.
"""

from __future__ import annotations

import html
import itertools
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import UsageError
from .extrapolate import (
    _NEGATIVE_I,
    _PMNF_I,
    _PMNF_J,
    Term,
    _formula_of_terms,
    _loo_fit,
    _smape_terms,
    _sum_of_terms,
    smape,
)

if TYPE_CHECKING:
    import sympy

__all__ = ["MultiModel", "MultiTerm", "complexity", "fit_pmnf", "term_complexity"]

# Terms per parameter carried into the combination step (besides _ALWAYS).
_PER_PARAMETER = 3
# Carried into the combination step for every parameter whatever their scores on its lines.
_ALWAYS = (Term(Fraction(1), 0), Term(Fraction(2), 0), Term(Fraction(-1), 0))
# Hypotheses whose leave-one-out SMAPE is within this factor of the best one's fit "within the
# noise"; the simplest of them is chosen (see complexity()).
_NOISE_FACTOR = 1.5


def term_complexity(term: Term) -> tuple[int, int]:
    """How complex a single-parameter term is: (logarithm power ``j``, 1 if the exponent is
    fractional). Integer powers without a logarithm (``x``, ``x^2``, ``x^-1``) are (0, 0)."""
    return (term.j, int(term.i.denominator > 1))


def complexity(terms: Sequence[MultiTerm]) -> tuple[int, int, int, int]:
    """How complex a hypothesis ``c0 + sum c_k * terms[k]`` is, compared lexicographically:
    (number of terms, logarithm powers, fractional exponents, parameter factors), all summed
    over the terms."""
    logs = sum(term_complexity(t)[0] for m in terms for _, t in m.factors)
    fractions = sum(term_complexity(t)[1] for m in terms for _, t in m.factors)
    factors = sum(len(m.factors) for m in terms)
    return (len(terms), logs, fractions, factors)


def _within_noise(scores: np.ndarray, simplicity: Callable[[int], tuple]) -> list[int]:
    """Indices of the hypotheses whose score is at most ``_NOISE_FACTOR`` times the best
    (finite) score, simplest first (``simplicity(index)``), the lower score breaking ties."""
    finite = np.isfinite(scores)
    if not finite.any():
        return []
    limit = _NOISE_FACTOR * float(scores[finite].min())
    within = [int(i) for i in np.flatnonzero(finite & (scores <= limit))]
    return sorted(within, key=lambda i: (simplicity(i), float(scores[i])))


@dataclass(frozen=True)
class MultiTerm:
    """A product of single-parameter terms: ((parameter name, Term), ...)."""

    factors: tuple[tuple[str, Term], ...]

    def values(self, points: Mapping[str, np.ndarray]) -> np.ndarray:
        """The term at the points (``points[name]`` arrays of one length)."""
        out: np.ndarray | None = None
        for name, t in self.factors:
            v = t.values(np.asarray(points[name], dtype=float))
            out = v if out is None else out * v
        assert out is not None
        return out

    def text(self) -> str:
        """E.g. ``N*K^(-1)``."""
        return "*".join(t.text().replace("p", name) for name, t in self.factors)

    def sympy(self, symbols: Mapping[str, sympy.Symbol]) -> sympy.Expr:
        import sympy

        expr = sympy.Integer(1)
        for name, t in self.factors:
            x = symbols[name]
            expr *= x ** sympy.Rational(t.i.numerator, t.i.denominator) * sympy.log(x, 2) ** t.j
        return expr


@dataclass
class MultiModel:
    """A fitted multi-parameter PMNF model.

    Attributes
    ----------
    parameters : tuple of str
        Parameter names.
    terms : tuple of MultiTerm
        The selected terms (empty: constant).
    coefficients : numpy.ndarray
        ``c0, c1, ...``.
    points : dict of str to numpy.ndarray
        The measurement coordinates; ``ys`` the measurements.
    cv_smape, smape : float
        Leave-one-out SMAPE of the hypothesis and SMAPE of the fit on all points (percent).
    """

    parameters: tuple[str, ...]
    terms: tuple[MultiTerm, ...]
    coefficients: np.ndarray
    points: dict[str, np.ndarray]
    ys: np.ndarray
    cv_smape: float
    smape: float
    candidates: int = field(default=0, repr=False)

    def predict(self, **values: Any) -> Any:
        """Model value(s) at the given parameter values (scalars or arrays that broadcast)."""
        missing = [p for p in self.parameters if p not in values]
        if missing:
            raise UsageError(f"predict needs values for {', '.join(missing)}")
        arrays = np.broadcast_arrays(*[np.asarray(values[p], dtype=float) for p in self.parameters])
        pts = dict(zip(self.parameters, arrays))
        return _sum_of_terms(
            self.coefficients, [t.values(pts) for t in self.terms], arrays[0].shape
        )

    @property
    def formula(self) -> str:
        """Readable formula, e.g. ``0.5 + 2e-06*N*K^(-1)``."""
        return _formula_of_terms(self.coefficients, [t.text() for t in self.terms])

    def expression(self, symbols: Mapping[str, sympy.Symbol] | None = None) -> sympy.Expr:
        """The model as a SymPy expression (symbols named after the parameters, positive)."""
        import sympy

        syms = symbols or {p: sympy.Symbol(p, positive=True) for p in self.parameters}
        # Full precision: predictions of a PerformanceModel are evaluated from the expression.
        expr = sympy.Float(float(self.coefficients[0]))
        for c, t in zip(self.coefficients[1:], self.terms):
            expr += sympy.Float(float(c)) * t.sympy(syms)
        return expr

    def __repr__(self) -> str:
        return f"MultiModel({self.formula!r}, cv_smape={self.cv_smape:.3g}%)"

    def _repr_html_(self) -> str:
        return (
            f"<b>MultiModel</b> <code>{html.escape(self.formula)}</code> "
            f"(leave-one-out SMAPE {self.cv_smape:.3g} %)"
        )


def _single_terms(negative: bool) -> list[Term]:
    exps = list(_PMNF_I) + (list(_NEGATIVE_I) if negative else [])
    return [Term(i, j) for i in exps for j in _PMNF_J if not (i == 0 and j == 0)]


def _relative_weights(y: np.ndarray) -> np.ndarray:
    """Least-squares weights ``1 / |y|`` (values below 1e-9 of the largest count as that): the
    fit minimises relative residuals, as SMAPE scores them and as timing noise is (a fixed
    fraction of the time), instead of letting the largest values set the constant."""
    mag = np.abs(y)
    top = float(mag.max()) if mag.size else 0.0
    if top == 0.0:
        return np.ones_like(y)
    return 1.0 / np.maximum(mag, 1e-9 * top)


def _cv_scores(columns: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Leave-one-out SMAPE of each hypothesis (columns: (H, n, m)); inf where undefined or a
    term coefficient is negative."""
    loo, coef, _ = _loo_fit(columns, y, _relative_weights(y))
    per_point = _smape_terms(loo, y)
    bad = np.any(coef[:, 1:] < 0, axis=1) | ~np.all(np.isfinite(coef), axis=1)
    per_point[bad] = np.inf
    return per_point.mean(axis=1)


def _best_single(
    name: str, pts: dict[str, np.ndarray], y: np.ndarray, terms: list[Term]
) -> list[Term]:
    """The parameter's best single terms: summed leave-one-out SMAPE over the lines where the
    other parameters are fixed (each line with 3 or more distinct values of this one)."""
    x = pts[name]
    others = [p for p in pts if p != name]
    keys = (
        np.stack([pts[p] for p in others], axis=1) if others else np.zeros((x.size, 1), dtype=float)
    )
    _, line = np.unique(keys, axis=0, return_inverse=True)
    total = np.zeros(len(terms))
    lines = 0
    for k in np.unique(line):
        sel = np.flatnonzero(line == k)
        if np.unique(x[sel]).size < 3:
            continue
        xs, ys = x[sel], y[sel]
        cols = np.stack([np.column_stack([np.ones_like(xs), t.values(xs)]) for t in terms])
        total += np.minimum(_cv_scores(cols, ys), 1e6)
        lines += 1
    if lines == 0:
        # No line varies this parameter alone: score the terms on all points.
        cols = np.stack([np.column_stack([np.ones_like(x), t.values(x)]) for t in terms])
        total = _cv_scores(cols, y)
    # The simplest terms within the noise of the best first, then the others by score; and
    # always the plain powers x, x^2, x^-1: lines of 3 or 4 noisy points often rank them low,
    # and the combination step, which scores on all points, decides.
    within = _within_noise(total, lambda i: term_complexity(terms[i]))
    taken = set(within)
    rest = [int(i) for i in np.argsort(total, kind="stable") if np.isfinite(total[i])]
    best = [terms[i] for i in [*within, *(i for i in rest if i not in taken)][:_PER_PARAMETER]]
    plain = [t for t in _ALWAYS if t in terms and t not in best]
    return best + plain


def fit_pmnf(
    points: Mapping[str, Sequence[float]],
    ys: Sequence[float],
    *,
    max_terms: int = 2,
    negative_exponents: bool = True,
    warn: bool = True,
) -> MultiModel:
    """Fits a multi-parameter PMNF model to measurements ``ys`` at ``points``.

    Parameters
    ----------
    points : mapping of str to sequence of float
        One sequence of positive values per parameter, all of the length of ``ys``.
    ys : sequence of float
        Measured values.
    max_terms : int
        Maximum number of (product) terms besides the constant, 1 to 3.
    negative_exponents : bool
        Also try ``x**-2``, ``x**-1`` and ``x**-1/2`` (strong scaling, block sizes).
    warn : bool
        Warn when the selected model misses the measurements by more than 10 % SMAPE.

    Returns
    -------
    MultiModel
        With ``formula``, ``expression()``, ``predict(**values)``.

    Raises
    ------
    UsageError
        Fewer than 3 points, lengths differ, non-positive or non-finite values.

    Notes
    -----
    The selected hypothesis is the simplest (:func:`complexity`: fewest terms, then
    logarithms, fractional exponents, parameter factors) among those whose leave-one-out SMAPE
    is at most 1.5 times the lowest; coefficients minimise relative residuals (weights
    ``1 / |y|``). See the module documentation and ``docs/models.md``.
    """
    if not isinstance(points, Mapping):
        raise UsageError(f"points must map parameter names to values, not {type(points).__name__}")
    names = tuple(points)
    if not names:
        raise UsageError("fit_pmnf needs at least one parameter")
    try:
        y = np.asarray(ys, dtype=float)
        pts = {p: np.asarray(points[p], dtype=float) for p in names}
    except (TypeError, ValueError) as e:
        raise UsageError(f"points and ys must be numbers ({e})") from None
    if y.ndim != 1 or any(v.shape != y.shape for v in pts.values()):
        raise UsageError("every parameter needs one value per measurement")
    if y.size < 3:
        raise UsageError(f"fit_pmnf needs at least 3 measurements, got {y.size}")
    if not np.all(np.isfinite(y)) or not all(np.all(np.isfinite(v)) for v in pts.values()):
        raise UsageError("points and ys must be finite")
    if any(np.any(v <= 0) for v in pts.values()):
        raise UsageError("parameter values must be positive")
    if isinstance(max_terms, bool) or max_terms not in (1, 2, 3):
        raise UsageError(f"max_terms must be 1, 2 or 3, got {max_terms}")
    singles = _single_terms(negative_exponents)
    varying = [p for p in names if np.unique(pts[p]).size > 1]
    per_param = {p: _best_single(p, pts, y, singles) for p in varying}
    products: list[MultiTerm] = []
    for size in range(1, len(varying) + 1):
        for subset in itertools.combinations(varying, size):
            for choice in itertools.product(*[per_param[p] for p in subset]):
                products.append(MultiTerm(tuple(zip(subset, choice))))
    # Leave-one-out needs more points than coefficients, with a margin (two per coefficient).
    usable = min(max_terms, max(0, y.size // 2 - 1))
    ones = np.ones_like(y)
    # Row 0 the constant, row i + 1 products[i]: a hypothesis' design matrix by fancy indexing.
    values = np.vstack([ones] + [t.values(pts) for t in products])
    constant_cv = float(_cv_scores(ones[None, :, None], y)[0])
    # Per number of terms: the hypotheses and their leave-one-out SMAPE.
    scored: list[tuple[list[tuple[int, ...]], np.ndarray]] = [([()], np.array([constant_cv]))]
    lowest = constant_cv
    considered = 1
    for k in range(1, usable + 1):
        combos = list(itertools.combinations(range(len(products)), k))
        if not combos or lowest == 0:
            break
        cv = np.full(len(combos), np.inf)
        chunk = 20000
        for start in range(0, len(combos), chunk):
            part = np.asarray(combos[start : start + chunk], dtype=np.intp) + 1
            rows = np.column_stack([np.zeros(len(part), dtype=np.intp), part])  # (H, k + 1)
            cv[start : start + len(part)] = _cv_scores(values[rows].transpose(0, 2, 1), y)
        considered += len(combos)
        scored.append((combos, cv))
        # More terms that do not fit better than the noise allows: larger sums will not either.
        if not float(cv.min()) * _NOISE_FACTOR < lowest:
            break
        lowest = float(cv.min())
    # The simplest hypothesis within the noise of the lowest CV SMAPE: the fewest terms first
    # (complexity() starts with the number of terms), then fewer logarithms, fractions, factors.
    best: tuple[MultiTerm, ...] = ()
    best_cv = constant_cv
    for combos, cv in scored:
        limit = _NOISE_FACTOR * lowest
        if np.any(cv <= limit):
            masked = np.where(cv <= limit, cv, np.inf)
            i = _within_noise(
                masked, lambda h, combos=combos: complexity([products[j] for j in combos[h]])
            )[0]
            best, best_cv = tuple(products[j] for j in combos[i]), float(cv[i])
            break
    a = np.column_stack([ones] + [t.values(pts) for t in best])
    w = _relative_weights(y)
    coef, *_ = np.linalg.lstsq(a * w[:, None], y * w, rcond=None)
    model = MultiModel(names, best, coef, pts, y, best_cv, 0.0, considered)
    model.smape = smape(y, model.predict(**pts))
    if warn and model.smape > 10.0:
        warnings.warn(
            f"fit_pmnf: the best model {model.formula} misses the measurements by "
            f"{model.smape:.3g}% SMAPE",
            UserWarning,
            stacklevel=2,
        )
    return model
