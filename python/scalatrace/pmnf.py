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
import re
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

__all__ = [
    "MultiModel",
    "MultiTerm",
    "RegimeModel",
    "complexity",
    "fit_pmnf",
    "fit_pmnf_regimes",
    "term_complexity",
    "with_nonnegative_constant",
]

# Terms per parameter carried into the combination step (besides _ALWAYS).
_PER_PARAMETER = 3
# Carried into the combination step for every parameter whatever their scores on its lines.
_ALWAYS = (Term(Fraction(1), 0), Term(Fraction(2), 0), Term(Fraction(-1), 0))
# Hypotheses whose leave-one-out SMAPE is within this factor of the best one's fit "within the
# noise"; the simplest of them is chosen (see complexity()).
_NOISE_FACTOR = 1.5
# Leave-one-out SMAPEs (per cent) below this are exact fits whose differences are rounding: a
# law within it of every point needs no more terms (structural counts such as a message size of
# 8 K bytes scored 2e-14 % with the term K and 7e-15 % with two curved terms).
_EXACT = 1e-9


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


def _broadcast(
    parameters: Sequence[str], values: Mapping[str, Any]
) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """The ``values`` of every parameter as arrays broadcast to one shape, in order and by name."""
    missing = [p for p in parameters if p not in values]
    if missing:
        raise UsageError(f"predict needs values for {', '.join(missing)}")
    arrays = np.broadcast_arrays(*[np.asarray(values[p], dtype=float) for p in parameters])
    return list(arrays), dict(zip(parameters, arrays))


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
        arrays, pts = _broadcast(self.parameters, values)
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


def _products(pts: dict[str, np.ndarray], y: np.ndarray, negative: bool) -> list[MultiTerm]:
    """The candidate terms of the combination step: products of each varying parameter's best
    single terms (:func:`_best_single`)."""
    singles = _single_terms(negative)
    varying = [p for p in pts if np.unique(pts[p]).size > 1]
    per_param = {p: _best_single(p, pts, y, singles) for p in varying}
    products: list[MultiTerm] = []
    for size in range(1, len(varying) + 1):
        for subset in itertools.combinations(varying, size):
            for choice in itertools.product(*[per_param[p] for p in subset]):
                products.append(MultiTerm(tuple(zip(subset, choice))))
    return products


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
    products = _products(pts, y, negative_exponents)
    # Leave-one-out needs more points than coefficients, with a margin (two per coefficient).
    usable = min(max_terms, max(0, y.size // 2 - 1))
    ones = np.ones_like(y)
    # Row 0 the constant, row i + 1 products[i]: a hypothesis' design matrix by fancy indexing.
    values = np.vstack([ones] + [t.values(pts) for t in products])
    constant_cv = float(_cv_scores(ones[None, :, None], y)[0])
    # Per number of terms: the hypotheses and their leave-one-out SMAPE.
    scored: list[tuple[list[tuple[int, ...]], np.ndarray]] = [([()], np.array([constant_cv]))]
    lowest = max(constant_cv, _EXACT)
    considered = 1
    for k in range(1, usable + 1):
        combos = list(itertools.combinations(range(len(products)), k))
        if not combos or lowest <= _EXACT:
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
        if not max(float(cv.min()), _EXACT) * _NOISE_FACTOR < lowest:
            break
        lowest = max(float(cv.min()), _EXACT)
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


@dataclass
class RegimeModel:
    """A PMNF law whose coefficients change between regimes of one quantity (e.g. a strip's
    footprint leaving a cache level): ``regimes[i]`` holds where ``by <= cuts[i]`` (the first
    regime whose cut is not below it), the last regime beyond the last cut. Every regime has
    the terms of one PMNF hypothesis fitted on all points (:func:`fit_pmnf_regimes`) with its
    own coefficients, and the constant of all.

    Attributes
    ----------
    parameters : tuple of str
        Parameter names.
    by : str
        The quantity the regimes are cut in: a SymPy expression of the parameters (e.g.
        ``"N/P"``; a parameter name is the simplest).
    cuts : tuple of float
        Largest value of ``by`` in each regime but the last; empty for one regime.
    regimes : tuple of MultiModel
        One fitted law per regime.
    cv_smape : float
        Leave-one-out SMAPE (percent) of the chosen split (each point predicted by its regime's
        law fitted without it).
    """

    parameters: tuple[str, ...]
    by: str
    cuts: tuple[float, ...]
    regimes: tuple[MultiModel, ...]
    cv_smape: float

    def _by_values(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        return _by_function(self.by, self.parameters)(*[values[p] for p in self.parameters])

    def predict(self, **values: Any) -> Any:
        """Model value(s) at the given parameter values (scalars or arrays that broadcast)."""
        arrays, pts = _broadcast(self.parameters, values)
        which = np.searchsorted(
            np.asarray(self.cuts, dtype=float),
            np.asarray(self._by_values(pts), dtype=float) * np.ones(arrays[0].shape),
            side="left",
        )
        per = np.stack([np.asarray(r.predict(**pts), dtype=float) for r in self.regimes])
        out = np.take_along_axis(per, which[None, ...], axis=0)[0]
        return float(out) if out.ndim == 0 else out

    @property
    def formula(self) -> str:
        """E.g. ``1e-08 + 1.1e-09*N*K if N/P <= 96; 2e-08 + 1.3e-09*N*K otherwise``."""
        if not self.cuts:
            return self.regimes[0].formula
        parts = [f"{r.formula} if {self.by} <= {c:.6g}" for r, c in zip(self.regimes, self.cuts)]
        return "; ".join([*parts, f"{self.regimes[-1].formula} otherwise"])

    def expression(self, symbols: Mapping[str, sympy.Symbol] | None = None) -> sympy.Expr:
        """The law as a SymPy expression (a ``Piecewise`` in ``by`` for several regimes)."""
        import sympy

        syms = symbols or {p: sympy.Symbol(p, positive=True) for p in self.parameters}
        laws = [r.expression(syms) for r in self.regimes]
        if not self.cuts:
            return laws[0]
        z = sympy.sympify(self.by, locals=dict(syms))
        pieces = [(law, z <= c) for law, c in zip(laws, self.cuts)]
        return sympy.Piecewise(*pieces, (laws[-1], True))

    def __repr__(self) -> str:
        return f"RegimeModel({self.formula!r}, cv_smape={self.cv_smape:.3g}%)"


# Functions an expression of the parameters (fit_pmnf_regimes' ``by``) may use besides them.
_BY_FUNCTIONS = frozenset({"log", "sqrt", "exp", "Min", "Max", "floor", "ceiling"})


def _by_function(by: str, names: Sequence[str]) -> Callable[..., np.ndarray]:
    """``by`` (a SymPy expression of the parameters ``names``) as a NumPy function of them."""
    import sympy

    syms = {p: sympy.Symbol(p, positive=True) for p in names}
    unknown = sorted(set(re.findall(r"[A-Za-z_]\w*", by)) - set(syms) - _BY_FUNCTIONS)
    if unknown:
        raise UsageError(
            f"by ({by!r}) names {', '.join(unknown)}, not a parameter ({', '.join(names)})"
        )
    try:
        expr = sympy.sympify(by, locals=dict(syms))
    except (sympy.SympifyError, TypeError, SyntaxError) as e:
        raise UsageError(f"by must be an expression of the parameters, not {by!r} ({e})") from None
    return sympy.lambdify([syms[p] for p in names], expr, "numpy")


def fit_pmnf_regimes(
    points: Mapping[str, Sequence[float]],
    ys: Sequence[float],
    by: str,
    *,
    max_terms: int = 2,
    max_regimes: int = 3,
    negative_exponents: bool = True,
) -> RegimeModel:
    """A PMNF law with coefficients per regime of ``by`` (the fewest regimes that
    cross-validate).

    The hypotheses and the regimes are searched together: every sum of :func:`fit_pmnf`'s
    candidate terms (the products of each parameter's best single terms), with one coefficient
    per term, or with each term's coefficient per regime of ``by`` (the constant shared: a
    block's fixed cost, its calls and loop, does not change with its footprint; the cost per
    cell does), the regimes cut halfway between neighbouring values of ``by`` at the points.
    Terms times regimes is at most ``max_terms`` (a regime's coefficients count as terms: with
    the default 2, two terms in one regime or one term in two), each regime has more points
    than terms, and a regime whose points cannot tell a term from the constant (a term in ``N``
    alone where its points share one ``N``) rules the hypothesis out there; a term in ``N K``
    stays, so a regime's law still scales with ``N`` below its one training ``N``. The
    coefficients are one weighted least squares (relative residuals, as :func:`fit_pmnf`); each
    hypothesis is scored by leave-one-out SMAPE, one with a negative term coefficient is out. Of
    those within 1.5 times the lowest score (:func:`fit_pmnf`'s "within the noise") the simplest
    terms are kept (:func:`complexity`), then the fewest regimes, the lower score breaking
    ties: a step in the cost per cell is two regimes of ``N K``, not ``N^(3/4) log2(N)^2 K``
    (which a single law picks to bend through it, and which extrapolates the bend). One regime
    chosen: :func:`fit_pmnf`'s law.

    Parameters
    ----------
    points, ys, max_terms, negative_exponents
        As :func:`fit_pmnf`.
    by : str
        A SymPy expression of the parameters, e.g. ``"N/P"`` (the rows of a rank's strip).
    max_regimes : int
        1 to 4 (and at most ``max_terms``).

    Returns
    -------
    RegimeModel

    Raises
    ------
    UsageError
        As :func:`fit_pmnf`; ``by`` not an expression of the parameters.
    """
    if isinstance(max_regimes, bool) or max_regimes not in (1, 2, 3, 4):
        raise UsageError(f"max_regimes must be 1 to 4, got {max_regimes}")
    if not isinstance(by, str):
        raise UsageError(f"by must be a string (an expression of the parameters), not {by!r}")
    base = fit_pmnf(
        points, ys, max_terms=max_terms, negative_exponents=negative_exponents, warn=False
    )
    names = base.parameters
    pts, y = base.points, base.ys
    z = np.asarray(_by_function(by, names)(*[pts[p] for p in names]), dtype=float) * np.ones_like(y)
    if not np.all(np.isfinite(z)):
        raise UsageError(f"by ({by!r}) is not finite at every point")
    levels = np.unique(z)
    halfway = [0.5 * (float(a) + float(b)) for a, b in zip(levels[:-1], levels[1:])]
    products = _products(pts, y, negative_exponents)
    values = np.vstack([t.values(pts) for t in products]) if products else np.zeros((0, y.size))
    usable = min(max_terms, max(0, y.size // 2 - 1))
    # (score, complexity, regimes, cuts, terms, coefficients)
    scored: list[tuple[float, tuple, int, tuple[float, ...], tuple[int, ...], np.ndarray]] = []
    for n in range(max_regimes):
        for cuts in itertools.combinations(halfway, n):
            of = np.searchsorted(np.asarray(cuts, dtype=float), z, side="left")
            # terms times regimes at most max_terms: a regime's coefficients count as terms
            for k in range(0 if n == 0 else 1, usable // (n + 1) + 1):
                listed = list(itertools.combinations(range(len(products)), k))
                combos = np.asarray(listed, dtype=np.intp).reshape(len(listed), k)
                if combos.size == 0 and k > 0:
                    continue
                if np.any(np.bincount(of, minlength=n + 1) < k + 1):
                    continue
                terms_v = values[combos]  # (H, k, n_points)
                ok = np.ones(len(combos), dtype=bool)
                for r in range(n + 1):
                    sel = of == r
                    sub = np.concatenate(
                        [np.ones((len(combos), 1, int(sel.sum()))), terms_v[:, :, sel]], axis=1
                    )
                    sub = sub / np.maximum(np.abs(sub).max(axis=2, keepdims=True), 1e-300)
                    sv = np.linalg.svd(sub, compute_uv=False)
                    ok &= sv[:, -1] > 1e-9 * sv[:, 0]
                if not ok.any():
                    continue
                combos, terms_v = combos[ok], terms_v[ok]
                # columns: the constant, then term t in regime r at 1 + r * k + t
                cols = [np.ones((len(combos), y.size))] + [
                    terms_v[:, t, :] * (of == r) for r in range(n + 1) for t in range(k)
                ]
                design = np.stack(cols, axis=2)  # (H, n_points, 1 + (n + 1) k)
                loo, coef, _ = _loo_fit(design, y, _relative_weights(y))
                per_point = _smape_terms(loo, y)
                bad = np.any(coef[:, 1:] < 0, axis=1) | ~np.all(np.isfinite(coef), axis=1)
                score = per_point.mean(axis=1)
                score[bad] = np.inf
                for h in np.flatnonzero(np.isfinite(score)):
                    terms = [products[j] for j in combos[h]]
                    scored.append(
                        (float(score[h]), complexity(terms), n, cuts, tuple(combos[h]), coef[h])
                    )
    if not scored:
        return RegimeModel(names, by, (), (base,), base.cv_smape)
    lowest = max(min(x[0] for x in scored), _EXACT)
    # the simplest terms within the noise (fit_pmnf's complexity), then the fewest regimes
    score, _, n, cuts, combo, coef = min(
        (x for x in scored if x[0] <= _NOISE_FACTOR * lowest), key=lambda x: (x[1], x[2], x[0])
    )
    if n == 0:
        return RegimeModel(names, by, (), (base,), base.cv_smape)
    of = np.searchsorted(np.asarray(cuts, dtype=float), z, side="left")
    k = len(combo)
    laws = []
    for r in range(n + 1):
        sel = of == r
        law = MultiModel(
            names,
            tuple(products[j] for j in combo),
            np.array([coef[0], *coef[1 + r * k : 1 + (r + 1) * k]]),
            {p: v[sel] for p, v in pts.items()},
            y[sel],
            score,
            0.0,
        )
        law.smape = smape(y[sel], law.predict(**law.points))
        laws.append(law)
    return RegimeModel(names, by, cuts, tuple(laws), score)


def _through_zero(law: MultiModel) -> MultiModel:
    """``law``'s terms refitted with the constant fixed at 0 and every coefficient at or above 0
    (non-negative least squares, weighted as :func:`fit_pmnf`). An unconstrained refit could
    turn a term negative (``a K - b P / K``): a cost that is negative inside the measured
    range (a blocked pipeline's stage under load gave one, and a negative run time)."""
    from scipy.optimize import nnls

    if not law.terms:  # a negative constant alone: the law is 0
        coef = np.zeros(1)
    else:
        a = np.column_stack([t.values(law.points) for t in law.terms])
        w = _relative_weights(law.ys)
        scale = np.abs(a * w[:, None]).max(axis=0)
        scale[scale == 0] = 1.0
        fitted, _ = nnls(a * w[:, None] / scale, law.ys * w)
        coef = np.concatenate([[0.0], fitted / scale])
    out = MultiModel(
        law.parameters, law.terms, coef, law.points, law.ys, law.cv_smape, 0.0, law.candidates
    )
    out.smape = smape(law.ys, out.predict(**law.points))
    return out


def with_nonnegative_constant(law: MultiModel | RegimeModel) -> MultiModel | RegimeModel:
    """``law`` with its constant held at or above 0: a cost's fixed part cannot be negative.

    For a block's computation the constant is its fixed cost (the calls and the loop around
    the cells). Fitted from traces its least squares value can come out negative (a few tens of
    nanoseconds below 0, inside the noise of the smallest blocks), and a negative fixed cost per
    block acts as a negative per-message cost: the optimal block size of a model built on it
    falls to the smallest block. Where the selected law's constant is negative, the same terms
    (and regimes: their constant is shared) are refitted with the constant at 0, the least
    squares solution under the constraint (the terms' coefficients held at or above 0 as the
    selection holds them, so that the law is not negative where its terms are not); the
    selection and its ``cv_smape`` are unchanged. A law whose constant is not negative is
    returned as it is.
    """
    if isinstance(law, RegimeModel):
        if law.regimes[0].coefficients[0] >= 0:
            return law
        return RegimeModel(
            law.parameters,
            law.by,
            law.cuts,
            tuple(_through_zero(r) for r in law.regimes),
            law.cv_smape,
        )
    return law if law.coefficients[0] >= 0 else _through_zero(law)
