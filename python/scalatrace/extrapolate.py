"""Extrapolation to larger rank counts (ScalaExtrap) and scaling-model fits (PMNF).

* :func:`extrapolate` builds the trace of a large run from traces of a few small runs of the
  same program (thesis ch. 3): topology identification, roles aligned across the inputs,
  every parameter as a linear law in the grid sizes, timing from per-node :func:`fit_scaling`
  models. The result is an ordinary :class:`~scalatrace.Trace`.
* :func:`fit_scaling` searches the Performance Model Normal Form
  ``c0 + sum_k c_k * p**i_k * log2(p)**j_k`` (Extra-P's search space, one and two terms) and
  selects the hypothesis by leave-one-out cross-validation with SMAPE.

See ``docs/extrapolation.md``.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from . import _core
from ._base import check_bool, check_int, one_line
from ._model import TraceModel, wrap
from .errors import ScalatraceError, UsageError

if TYPE_CHECKING:
    import matplotlib.axes
    import pandas
    import sympy

__all__ = [
    "Candidate",
    "ExtrapolationError",
    "Model",
    "extrapolate",
    "extrapolation_laws",
    "fit_scaling",
    "smape",
    "snippet_filter",
    "common_events_filter",
    "common_events_trace",
]


class ExtrapolationError(ScalatraceError, ValueError):
    """The input traces cannot be extrapolated (different programs, a repeated size, too few
    sizes, parameters without a linear law); the message says which."""


# Extra-P's PMNF exponents: i in {0, 1/4, 1/3, 1/2, 2/3, 3/4, 1, ..., 3}, j in {0, 1, 2}.
_PMNF_I = sorted({Fraction(a, 4) for a in range(13)} | {Fraction(a, 3) for a in range(10)})
_PMNF_J = (0, 1, 2)
# Extension (not in Extra-P): strong-scaling terms p^-2, p^-1, p^-1/2 (thesis §3.2.5 "inverse
# proportional" and "inverse proportional + constant"; p^-2: NPB FT's Alltoall blocks, a
# global array split over P ranks and then again over P partners).
_NEGATIVE_I = (Fraction(-2), Fraction(-1), Fraction(-1, 2))
# A selected model whose fit on all points is worse than this (SMAPE, percent) is reported
# with a warning: no hypothesis of the search space describes the measurements.
_POOR_FIT_SMAPE = 10.0


def smape(actual: Any, predicted: Any) -> float:
    """Symmetric mean absolute percentage error in percent (0 when both are 0).

    Parameters
    ----------
    actual, predicted : array_like
        Values of the same shape.

    Returns
    -------
    float
        ``100 * mean(2 |p - a| / (|a| + |p|))``.
    """
    a = np.asarray(actual, dtype=float)
    p = np.asarray(predicted, dtype=float)
    den = np.abs(a) + np.abs(p)
    ratio = np.divide(2 * np.abs(p - a), den, out=np.zeros_like(den), where=den > 0)
    return float(100 * ratio.mean())


@dataclass(frozen=True)
class Term:
    """One PMNF term ``p**i * log2(p)**j``."""

    i: Fraction
    j: int

    def values(self, p: np.ndarray) -> np.ndarray:
        """The term at the points ``p``."""
        return np.power(p, float(self.i)) * np.power(np.log2(p), self.j)

    def text(self) -> str:
        """Readable form, e.g. ``p^(3/2)*log2(p)^2``."""
        parts = []
        if self.i != 0:
            parts.append(
                "p"
                if self.i == 1
                else f"p^({self.i})"
                if self.i.denominator > 1 or self.i < 0
                else f"p^{self.i}"
            )
        if self.j:
            parts.append("log2(p)" if self.j == 1 else f"log2(p)^{self.j}")
        return "*".join(parts) or "1"


def _sum_of_terms(coefficients: np.ndarray, term_values: Sequence[np.ndarray], shape: tuple) -> Any:
    """``c0 + sum_k c_k * term_values[k]`` (an array of ``shape``; a float when 0-dimensional)."""
    out = np.full(shape, coefficients[0], dtype=float)
    for c, v in zip(coefficients[1:], term_values):
        out = out + c * v
    return float(out) if out.ndim == 0 else out


def _formula_of_terms(coefficients: np.ndarray, texts: Sequence[str]) -> str:
    """``c0 + c1*text1 - c2*text2 ...`` with the coefficients to 6 significant digits."""
    text = f"{coefficients[0]:.6g}"
    for c, t in zip(coefficients[1:], texts):
        text += f" {'-' if c < 0 else '+'} {abs(c):.6g}*{t}"
    return text


@dataclass(frozen=True)
class Candidate:
    """One hypothesis of the search with its leave-one-out SMAPE (percent)."""

    terms: tuple[Term, ...]
    cv_smape: float

    @property
    def hypothesis(self) -> str:
        """``c0 + c1*p + c2*log2(p)`` style."""
        return " + ".join(["c0"] + [f"c{k + 1}*{t.text()}" for k, t in enumerate(self.terms)])


@dataclass
class Model:
    """A fitted PMNF model ``c0 + sum_k c_k * term_k(p)``.

    Attributes
    ----------
    terms : tuple of Term
        The selected terms (empty: constant).
    coefficients : numpy.ndarray
        ``c0, c1, ...``.
    xs, ys : numpy.ndarray
        The measurements it was fitted to.
    cv_smape : float
        Leave-one-out SMAPE of the selected hypothesis (percent).
    smape : float
        SMAPE of the fit on all points (percent).
    candidates : list of Candidate
        Every hypothesis tried, best first.
    """

    terms: tuple[Term, ...]
    coefficients: np.ndarray
    xs: np.ndarray
    ys: np.ndarray
    cv_smape: float
    smape: float
    candidates: list[Candidate] = field(default_factory=list, repr=False)

    def predict(self, p: Any) -> Any:
        """Model value(s) at ``p`` (scalar in, float out; array in, array out)."""
        arr = np.asarray(p, dtype=float)
        return _sum_of_terms(self.coefficients, [t.values(arr) for t in self.terms], arr.shape)

    @property
    def formula(self) -> str:
        """Readable formula, e.g. ``3.2 + 0.0125*p*log2(p)``."""
        return _formula_of_terms(self.coefficients, [t.text() for t in self.terms])

    @property
    def expression(self) -> sympy.Expr:
        """The model as a SymPy expression in the symbol ``p``."""
        import sympy

        p = sympy.Symbol("p", positive=True)
        expr = sympy.Float(self.coefficients[0], 6)
        for c, t in zip(self.coefficients[1:], self.terms):
            expr += (
                sympy.Float(c, 6)
                * p ** sympy.Rational(t.i.numerator, t.i.denominator)
                * sympy.log(p, 2) ** t.j
            )
        return expr

    def candidate_table(self, n: int = 5, at: float | None = None) -> pandas.DataFrame:
        """The ``n`` best hypotheses of the search, each refitted on all points.

        Measurements over a narrow range of ``p`` with some noise often fit several hypotheses
        about equally well (``p*log2(p)`` and ``p^(4/3)`` on 4..64), and they part ways when
        extrapolated: look at them before trusting one.

        Parameters
        ----------
        n : int
            How many candidates (best leave-one-out SMAPE first).
        at : float, optional
            Also predict every candidate at this process count (column ``at_<p>``).

        Returns
        -------
        pandas.DataFrame
            ``hypothesis``, ``formula`` (fitted on all points), ``cv_smape`` (percent),
            ``selected`` (the one :func:`fit_scaling` chose) [, ``at_<p>``].
        """
        import pandas as pd

        n = check_int("n", n, lo=1)
        rows = []
        for cand in [c for c in self.candidates if np.isfinite(c.cv_smape)][:n]:
            fitted = _fit_terms(cand.terms, self.xs, self.ys)
            row: dict[str, Any] = {
                "hypothesis": cand.hypothesis,
                "formula": fitted.formula,
                "cv_smape": cand.cv_smape,
                "selected": cand.terms == self.terms,
            }
            if at is not None:
                row[f"at_{at:g}"] = fitted.predict(float(at))
            rows.append(row)
        return pd.DataFrame(rows)

    def plot(
        self,
        ax: matplotlib.axes.Axes | None = None,
        extend_to: float | None = None,
        label: str | None = None,
    ) -> matplotlib.axes.Axes:
        """Measurements and the model curve (log-scaled p axis); returns the axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        hi = max(float(self.xs.max()), extend_to or 0.0)
        grid = np.geomspace(float(self.xs.min()), hi, 200)
        ax.plot(self.xs, self.ys, "o", label="measurements")
        ax.plot(grid, self.predict(grid), "-", label=label or self.formula)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("processes p")
        ax.legend()
        return ax

    def __repr__(self) -> str:
        return f"Model({self.formula!r}, cv_smape={self.cv_smape:.3g}%)"

    def _repr_html_(self) -> str:
        """Jupyter: the formula, its errors and the closest candidates of the search."""
        import html

        head = (
            f"<b>Model</b> <code>{html.escape(self.formula)}</code>: leave-one-out SMAPE "
            f"{self.cv_smape:.3g} %, fit SMAPE {self.smape:.3g} % over p = "
            f"{html.escape(', '.join(f'{v:g}' for v in self.xs))}"
        )
        if not self.candidates:
            return head
        return head + self.candidate_table(n=4).to_html(index=False, float_format="{:.4g}".format)


def _fit_terms(terms: tuple[Term, ...], x: np.ndarray, y: np.ndarray) -> Model:
    """Least-squares fit of ``c0 + sum c_k * term_k`` on all points (no selection)."""
    a = np.column_stack([np.ones_like(x)] + [t.values(x) for t in terms])
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    return Model(terms=tuple(terms), coefficients=coef, xs=x, ys=y, cv_smape=np.nan, smape=0.0)


def _hypotheses(max_terms: int, negative_exponents: bool) -> list[tuple[Term, ...]]:
    exps = list(_PMNF_I) + (list(_NEGATIVE_I) if negative_exponents else [])
    terms = [Term(i, j) for i in exps for j in _PMNF_J if not (i == 0 and j == 0)]
    out: list[tuple[Term, ...]] = [()]
    for k in range(1, max_terms + 1):
        out.extend(itertools.combinations(terms, k))
    return out


def _loo_fit(
    columns: np.ndarray, ys: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leave-one-out predictions and coefficients of many hypotheses at once.

    columns: (H, n, m) design matrices (first column ones), n > m. Uses the exact identity of
    least squares ``y_i - pred_(-i) = e_i / (1 - h_ii)`` (e: residuals of the fit on all
    points, h: diagonal of the hat matrix), from one batched QR of the column-scaled matrices.
    ``weights`` (n,): weighted least squares, minimising ``sum (w_i (y_i - pred_i))**2`` (the
    identity holds for the weighted system; the predictions are returned unweighted).
    Returns ((H, n) predictions, NaN where a point alone determines a coefficient;
    (H, m) coefficients and (H,) residual sum of squares of the fit on all points, weighted).
    """
    w = np.ones_like(ys) if weights is None else weights
    columns = columns * w[None, :, None]
    yw = ys * w
    scale = np.abs(columns).max(axis=1)  # (H, m)
    scale[scale == 0] = 1
    q, r = np.linalg.qr(columns / scale[:, None, :])  # (H, n, m), (H, m, m)
    qty = np.einsum("hnm,n->hm", q, yw)
    fitted = np.einsum("hnm,hm->hn", q, qty)
    resid = yw[None, :] - fitted
    lever = np.einsum("hnm,hnm->hn", q, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        loo = ys[None, :] - resid / (1 - lever) / w[None, :]
        coef = _solve_each(r, qty) / scale
    loo[lever > 1 - 1e-9] = np.nan
    loo[~np.all(np.isfinite(coef), axis=1)] = np.nan
    return loo, coef, (resid**2).sum(axis=1)


def _solve_each(r: np.ndarray, qty: np.ndarray) -> np.ndarray:
    """``r x = qty`` for each hypothesis's triangular factor (r: (H, m, m), qty: (H, m)); NaN
    rows for the hypotheses whose design is singular (a column of zeros, columns that coincide
    at the measured points), which then score as undefined instead of failing the whole batch
    with numpy's LinAlgError. The others are solved exactly as one batched call solves them."""
    try:
        return np.linalg.solve(r, qty[..., None])[..., 0]
    except np.linalg.LinAlgError:
        out = np.full(qty.shape, np.nan)
        for h in range(r.shape[0]):
            try:
                out[h] = np.linalg.solve(r[h], qty[h])
            except np.linalg.LinAlgError:
                pass
        return out


def _smape_terms(preds: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Per-point SMAPE terms in percent, (H, n); inf where a prediction is undefined."""
    den = np.abs(preds) + np.abs(ys)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(den > 0, 2 * np.abs(preds - ys[None, :]) / den, 0.0)
    ratio[np.isnan(ratio)] = np.inf
    return 100 * ratio


def fit_scaling(
    xs: Sequence[float], ys: Sequence[float], *, max_terms: int = 2, negative_exponents: bool = True
) -> Model:
    """Fits a PMNF scaling model to measurements ``ys`` at process counts ``xs``.

    The search space is Extra-P's: ``c0 + sum_k c_k * p**i_k * log2(p)**j_k`` with
    ``i`` in {0, 1/4, 1/3, 1/2, 2/3, 3/4, 1, ..., 3} and ``j`` in {0, 1, 2}, one or two terms
    (and the constant). With ``negative_exponents`` the strong-scaling terms ``p**-1`` and
    ``p**-1/2`` and ``p**-2`` are added (thesis §3.2.5; ``p**-2``: a global array split over
    the ranks and again over their partners, as NPB FT's Alltoall). Two-term hypotheses are tried from 6 points on
    (twice their coefficients), one-term ones from 3. Each hypothesis is scored by leave-one-out
    cross-validation (fit on all points but one with NumPy least squares, predict the one
    left out) with SMAPE; the best one (ties: fewer terms) is refitted on all points.

    Parameters
    ----------
    xs : sequence of float
        Process counts (> 0, distinct; at least 3 points).
    ys : sequence of float
        Measured values (e.g. seconds).
    max_terms : int
        Maximum number of non-constant terms (1 or 2).
    negative_exponents : bool
        Also try ``p**-2``, ``p**-1`` and ``p**-1/2`` terms.

    Returns
    -------
    Model
        With ``formula``, ``expression`` (SymPy), ``predict``, ``candidates`` and ``plot``.

    Raises
    ------
    UsageError
        Fewer than 3 points, lengths differ, non-positive or repeated ``xs``, non-finite values.

    Warns
    -----
    UserWarning
        When the selected model misses the measurements by more than 10 % SMAPE (no
        hypothesis of the search space describes them).
    """
    try:
        x = np.asarray(xs, dtype=float)
        y = np.asarray(ys, dtype=float)
    except (TypeError, ValueError) as e:
        raise UsageError(f"xs and ys must be sequences of numbers ({one_line(e)})") from None
    if x.ndim != 1 or x.shape != y.shape:
        raise UsageError(f"xs and ys must be 1-D of the same length, got {x.shape} and {y.shape}")
    if len(x) < 3:
        raise UsageError(f"fit_scaling needs at least 3 measurements, got {len(x)}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise UsageError("xs and ys must be finite")
    if np.any(x <= 0):
        raise UsageError("process counts xs must be positive")
    if len(np.unique(x)) != len(x):
        raise UsageError("process counts xs must be distinct")
    if isinstance(max_terms, bool) or max_terms not in (1, 2):
        raise UsageError(f"max_terms must be 1 or 2, got {max_terms}")
    # Leave-one-out needs more remaining points than coefficients, and a hypothesis is only
    # tried with two terms from 6 points on (twice its coefficients): with
    # fewer, some two-term hypothesis always fits the noise and extrapolates wildly.
    usable = min(max_terms, 2 if len(x) >= 6 else 1)
    hyps = _hypotheses(usable, negative_exponents)
    cv = np.full(len(hyps), np.inf)
    by_size: dict[int, list[int]] = {}
    for idx, h in enumerate(hyps):
        by_size.setdefault(len(h), []).append(idx)
    terms = sorted({t for h in hyps for t in h}, key=lambda t: (t.i, t.j))
    term_index = {t: k for k, t in enumerate(terms)}
    values = np.vstack([np.ones_like(x)] + [t.values(x) for t in terms])  # row 0: constant
    for idxs in by_size.values():
        rows = np.array([[0] + [term_index[t] + 1 for t in hyps[i]] for i in idxs])  # (H, m)
        cols = values[rows].transpose(0, 2, 1)  # (H, n, m)
        loo, coef, _ = _loo_fit(cols, y)
        per_point = _smape_terms(loo, y)
        # Like Extra-P, terms must add, not cancel: hypotheses whose fitted term coefficients
        # are negative are not considered (the constant may be negative).
        bad = np.any(coef[:, 1:] < 0, axis=1) | ~np.all(np.isfinite(coef), axis=1)
        per_point[bad] = np.inf
        cv[idxs] = per_point.mean(axis=1)
    # Per number of terms the hypothesis with the lowest leave-one-out SMAPE; a hypothesis with
    # more terms replaces a simpler one only if it cuts the CV SMAPE to a quarter: among ~2000 two-term
    # hypotheses one always fits the noise a little better, which is not a better model.
    best_idx = by_size[0][0]
    for size in range(1, usable + 1):
        idxs = by_size.get(size, [])
        if not idxs:
            continue
        cand = idxs[int(np.argmin(cv[idxs]))]
        if np.isfinite(cv[cand]) and cv[cand] < 0.25 * cv[best_idx]:
            best_idx = cand
    order = sorted(range(len(hyps)), key=lambda i: (cv[i], len(hyps[i])))
    best = hyps[best_idx]
    coef = _fit_terms(best, x, y).coefficients
    model = Model(
        terms=tuple(best),
        coefficients=coef,
        xs=x,
        ys=y,
        cv_smape=float(cv[best_idx]),
        smape=0.0,
        candidates=[Candidate(tuple(hyps[i]), float(cv[i])) for i in order],
    )
    model.smape = smape(y, model.predict(x))
    if model.smape > _POOR_FIT_SMAPE:
        warnings.warn(
            f"fit_scaling: the best model {model.formula} misses the measurements by "
            f"{model.smape:.3g}% SMAPE; no hypothesis of the search space describes them",
            UserWarning,
            stacklevel=2,
        )
    return model


def _timing_model(cache: dict) -> Callable[[list[float], list[float], float], float]:
    def predict(sizes: list[float], means: list[float], target: float) -> float:
        key = (tuple(sizes), tuple(means), target)
        if key not in cache:
            if len(sizes) < 3:
                cache[key] = means[-1]
            else:
                # Per-node timing is noisy; a poor fit there is expected, not news to report.
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    cache[key] = max(fit_scaling(sizes, means).predict(target), 0.0)
        return cache[key]

    return predict


def extrapolate(
    traces: Sequence[TraceModel],
    ranks: int | None = None,
    dims: Sequence[int] | None = None,
    *,
    input_dims: Sequence[Sequence[int]] | None = None,
    timing: bool = True,
    max_ranks: int = 4_194_304,
    lossy: bool = False,
    strict: bool = False,
    snippet: Sequence[str] | None = None,
    periodic: bool = False,
    even_counts: bool = False,
    common_events: bool = False,
    assume_constant: bool = False,
) -> TraceModel:
    """The trace of the same program at a larger size, from traces of several small sizes.

    Parameters
    ----------
    traces : sequence of Trace
        Merged traces of one program at 3 or more different rank counts.
    ranks : int, optional
        Target rank count; its grid follows the inputs' rule (balanced factorization).
    dims : sequence of int, optional
        Target grid, fastest-varying dimension first (``(X, Y)`` = X columns of Y rows);
        overrides ``ranks``.
    input_dims : sequence of sequence of int, optional
        The inputs' grids (same order as ``traces``) when topology identification should be
        skipped.
    timing : bool
        Timing histograms from per-node :func:`fit_scaling` models (True) or copied from the
        largest input (False).
    max_ranks : int
        Largest target accepted (time and memory grow with the rank count: 1,048,576 ranks
        take minutes); a larger target is refused at once. The trace format's own limit,
        2^32 - 1 ranks, cannot be lifted.
    lossy : bool
        Lossy extrapolation (thesis §3.2.4): drop the local calls (``Other`` events such as
        ``MPI_Comm_rank``) of every input before extrapolating. The result has no ``Other``
        events; ``trace.metadata["extrapolation_dropped"]`` gives the share dropped.
    strict : bool
        Refuse (``ExtrapolationError`` naming the laws) where the inputs do not decide between
        laws that give different values at the target, instead of taking the simplest with a
        warning: for a trace that must be right or absent.
    snippet : sequence of str, optional
        Lossy extrapolation with the thesis' snippet filter (§3.2.4, Fig. 3.7): the calls of
        the code's dominating pattern in order, each ``"Op"`` or ``"Op@site"`` (``"Irecv@18"``,
        ``"Send"``, ``"Wait"``; sites of the largest input's call-site table, as its events
        show them). Every rank of every input keeps only the snippet's complete call sequences
        and, outside them, the collectives (and Init, Finalize, communicator calls); the rest
        is dropped before extrapolating, and ``trace.metadata["extrapolation_dropped"]`` gives
        the share dropped and its operations. :func:`snippet_filter` applies the same filter
        to a trace's events (to compare with a real run's).
    periodic : bool
        Periodic neighbour laws for codes on a torus (NPB MG): the relative rank of the
        neighbour one step up or down a dimension with wrap-around, ``((x+1)%X-x)``,
        ``X*((y+Y-1)%Y-y)``, ..., is one law for every rank, also where a dimension of size 2
        makes both neighbours one rank; one role for every rank (boundary depth 0) is tried
        first.
    even_counts : bool
        Lossy extrapolation of all-to-all counts that follow the program's data (NPB IS: each
        rank sends each other rank the keys of its buckets, a random share of one total): every
        input's ``Alltoallv`` / ``Ialltoallv`` count arrays are first made even
        (:func:`even_alltoall_counts`: each call's mean total over the ranks split evenly, in
        whole elements), so that they follow a law of the size. Everything else stays exact;
        ``trace.metadata["extrapolation_even_counts"]`` says how many calls changed and by how
        much. Compare the result with a real trace passed through :func:`even_alltoall_counts`.
    common_events : bool
        Lossy extrapolation (thesis §3.2.4, LCS across ranks): after ``lossy`` and ``snippet``,
        every input keeps only the events every one of its ranks has: the longest call sequence
        (operation and call site) common to all its ranks, aligned with each rank so that the
        kept events' parameters agree most with those of the rank with the fewest events. For
        codes where some ranks do more at some sizes (NPB MG: on its coarse levels only some
        ranks hold points and exchange). ``trace.metadata["extrapolation_dropped"]`` gives the
        share dropped per input; compare the result with a real trace's
        :func:`common_events_filter`.
    assume_constant : bool
        Take a value that is the same at every input of its role as that constant also where a
        grid size that is the same at every input changes at the target (NPB MG's process grids
        2x2x4, 2x4x4, 4x4x4 -> 4x4x8: Z is 4 at every input), instead of refusing it as
        ambiguous (the constant, or a multiple of that size). For weak scaling, where per-rank
        sizes do not grow; each such choice is a warning (and refused with ``strict=True``).

    Warns
    -----
    UserWarning
        When a law of the grid sizes was preferred to one with ``log2(P)`` or ``sqrt(P)`` that
        also reproduces every input value but differs at the target (the simplest law is
        taken; ``trace.metadata["extrapolation_warnings"]`` lists them).

    Returns
    -------
    Trace
        A normal trace at the target size; ``trace.metadata["extrapolation_laws"]`` lists the
        formula of every parameter that changes with the size or the rank, and
        :func:`extrapolation_laws` returns them as a table.

    Raises
    ------
    ExtrapolationError
        Different programs, the same size twice, too few sizes, parameters without a linear
        law (each named).
    UsageError
        Bad arguments (no target, target dims of the wrong dimensionality or type).
    """
    if isinstance(traces, TraceModel):
        raise UsageError("extrapolate needs a list of traces at several sizes, got one Trace")
    traces = list(traces)
    for t in traces:
        if not isinstance(t, TraceModel):
            raise UsageError(
                f"extrapolate expects scalatrace.Trace objects, got {type(t).__name__}"
            )
    if ranks is None and dims is None:
        raise UsageError("give the target size: ranks=N or dims=(X, Y, ...)")
    # The core refuses targets beyond the format's 2^32 - 1 ranks; numbers it cannot even take
    # (beyond 64 bits) are refused here in the same words.
    beyond = "exceeds the trace format's limit of 4294967295 ranks"
    if ranks is not None:
        ranks = check_int("ranks", ranks, lo=1)
        if ranks >= 1 << 63:
            raise UsageError(f"target of {ranks} ranks {beyond}")
    if dims is not None:
        if isinstance(dims, (str, bytes)) or not isinstance(dims, Sequence) or len(dims) == 0:
            raise UsageError(
                f"dims must be a sequence of positive integers such as (16, 16), not {dims!r}"
            )
        dims = [check_int("dims", d, lo=1) for d in dims]
        if any(d >= 1 << 63 for d in dims):
            shown = "x".join(str(d) for d in dims)
            raise UsageError(f"target of dims {shown} (more than 4294967295 ranks) {beyond}")
    if input_dims is not None:
        if isinstance(input_dims, (str, bytes)) or not isinstance(input_dims, Sequence):
            raise UsageError(
                f"input_dims must be one sequence of integers per trace, not {input_dims!r}"
            )
        input_dims = [
            [check_int("input_dims", d, lo=1) for d in g]
            if isinstance(g, Sequence) and not isinstance(g, (str, bytes))
            else _bad_input_dims(g)
            for g in input_dims
        ]
    timing = check_bool("timing", timing)
    lossy = check_bool("lossy", lossy)
    strict = check_bool("strict", strict)
    periodic = check_bool("periodic", periodic)
    calls = _snippet_calls(snippet)
    even_counts = check_bool("even_counts", even_counts)
    max_ranks = check_int("max_ranks", max_ranks, lo=1)
    cache: dict = {}
    core = _core.extrapolate(
        [t._core for t in traces],
        int(ranks or 0),
        [int(d) for d in dims or []],
        [[int(d) for d in g] for g in input_dims or []],
        _timing_model(cache) if timing else None,
        int(max_ranks),
        lossy,
        strict,
        calls,
        periodic,
        even_counts,
        check_bool("common_events", common_events),
        check_bool("assume_constant", assume_constant),
    )
    big = wrap(core)
    chosen = big.metadata.get("extrapolation_warnings", "").strip()
    if chosen:
        warnings.warn(
            "extrapolate: the inputs did not decide these laws, the simplest was taken "
            f"(add an input size to decide):\n{chosen}",
            UserWarning,
            stacklevel=2,
        )
    return big


def even_alltoall_counts(trace: TraceModel) -> tuple[TraceModel, dict[str, float]]:
    """A copy of ``trace`` whose ``Alltoallv`` / ``Ialltoallv`` count arrays are even.

    Each call's count arrays (send and receive side) become the even split of the call's mean
    total over the ranks that make it, rounded to whole datatype elements; its ``bytes`` totals
    follow. Every other event and parameter is unchanged. This is what ``extrapolate(...,
    even_counts=True)`` does to its inputs, and the form to compare its result with.

    Returns
    -------
    (Trace, dict)
        The lossy copy, and a report: ``nodes`` and ``calls`` rewritten, ``changed_arrays``
        (send or receive arrays that were not even already), ``max_element_deviation`` and
        ``max_total_deviation`` (largest relative distance of an original count, and of a
        call's original total, from its even value).

    Raises
    ------
    UsageError
        A clustered trace (its members' counts were not recorded).
    """
    if not isinstance(trace, TraceModel):
        raise UsageError(
            f"even_alltoall_counts expects a scalatrace.Trace, not {type(trace).__name__}"
        )
    core, report = _core.even_alltoall_counts(trace._core)
    return wrap(core), dict(report)


def _snippet_calls(snippet: Sequence[str] | None) -> list[tuple[str, int]]:
    """``["Irecv@18", "Send"]`` as (operation, site or -1) pairs; UsageError if malformed."""
    if snippet is None:
        return []
    if isinstance(snippet, (str, bytes)) or not isinstance(snippet, Sequence) or not snippet:
        raise UsageError(
            f"snippet must be a non-empty sequence of calls such as ['Irecv@18', 'Send'], not {snippet!r}"
        )
    calls = []
    for entry in snippet:
        if not isinstance(entry, str) or not entry.strip():
            raise UsageError(f"snippet: each call is a string 'Op' or 'Op@site', not {entry!r}")
        op, _, site = entry.strip().partition("@")
        if site and not site.isdigit():
            raise UsageError(f"snippet: the site of {entry!r} must be a non-negative integer")
        calls.append((op, int(site) if site else -1))
    return calls


def _site_keys(trace: TraceModel) -> list[tuple]:
    """Each call site of a trace as its frames, (module path, offset) innermost first."""
    table = trace._core.sites
    return [tuple((table.modules[f.module], f.offset) for f in s.frames) for s in table.sites]


def snippet_filter(
    trace: TraceModel, rank: int, snippet: Sequence[str], reference: TraceModel | None = None
) -> list[Any]:
    """The events of one rank that the snippet filter of :func:`extrapolate` keeps.

    Parameters
    ----------
    trace : Trace
        Any trace (a real run at the target size, to compare with an extrapolated one).
    rank : int
        The rank whose events are filtered.
    snippet : sequence of str
        As for :func:`extrapolate`.
    reference : Trace, optional
        The trace whose call-site numbers the snippet uses (the largest input of the
        extrapolation); ``trace``'s sites are matched to it by their frames. Default: ``trace``.

    Returns
    -------
    list of Event
        The kept events in order (timing ``"none"``; their sites are ``trace``'s own).
    """
    if not isinstance(trace, TraceModel):
        raise UsageError(f"snippet_filter expects a scalatrace.Trace, not {type(trace).__name__}")
    events = list(trace.events(check_int("rank", rank, lo=0), timing="none"))
    sites = [int(e.site) for e in events]
    if reference is not None and reference is not trace:
        if not isinstance(reference, TraceModel):
            raise UsageError(
                f"snippet_filter: reference must be a scalatrace.Trace, not {type(reference).__name__}"
            )
        known = {key: i for i, key in enumerate(_site_keys(reference))}
        mapped = [known.get(key, -1) for key in _site_keys(trace)]
        # A site the reference does not have matches no site-specific call of the snippet.
        unmatched = 2**32 - 1
        sites = [mapped[s] if 0 <= s < len(mapped) and mapped[s] >= 0 else unmatched for s in sites]
    keep = _core.snippet_keep(_snippet_calls(snippet), [e.op for e in events], sites)
    return [e for e, k in zip(events, keep) if k]


def common_events_filter(trace: TraceModel, lossy: bool = False) -> list[list[Any]]:
    """Every rank's events that ``extrapolate(..., common_events=True)`` keeps of a trace.

    Parameters
    ----------
    trace : Trace
        Any trace (a real run at the target size, to compare with an extrapolated one).
    lossy : bool
        Leave the local calls (``Other``) out first, as ``extrapolate(..., lossy=True)`` does.

    Returns
    -------
    list of list of Event
        Per rank, the kept events in order (timing ``"none"``): the same call sequence on every
        rank, the longest one common to all ranks.
    """
    if not isinstance(trace, TraceModel):
        raise UsageError(
            f"common_events_filter expects a scalatrace.Trace, not {type(trace).__name__}"
        )
    keep = _core.common_keep(trace._core, check_bool("lossy", lossy))
    return [
        [e for e, k in zip(trace.events(r, timing="none"), keep[r]) if k]
        for r in range(trace.nranks)
    ]


def common_events_trace(trace: TraceModel, lossy: bool = False) -> tuple[TraceModel, int]:
    """A trace of the events :func:`common_events_filter` keeps, and how many were left out.

    The kept events of every rank, compressed and merged as the collector does (mean timing):
    the form of a real trace at the target to compare with, or simulate beside, the result of
    ``extrapolate(..., common_events=True)``.
    """
    if not isinstance(trace, TraceModel):
        raise UsageError(
            f"common_events_trace expects a scalatrace.Trace, not {type(trace).__name__}"
        )
    core, dropped = _core.common_events_trace(trace._core, check_bool("lossy", lossy))
    return wrap(core), int(dropped)


def _bad_input_dims(g: object) -> list[int]:
    raise UsageError(f"input_dims: each entry must be a sequence of integers, not {g!r}")


def extrapolation_laws(trace: TraceModel) -> Any:
    """The extrapolated parameters' formulas of an extrapolated trace as a pandas DataFrame.

    Columns: ``role``, ``where`` (``Isend@site 3``, ``communicator 2``), ``parameter``,
    ``formula`` (the distinct laws over its occurrences, e.g. ``X``, ``8*floor(1000/P)``,
    ``8*floor(4096/P^2)``, ``4*log2(P) + 4``) and ``status`` (``exact on N points``: reproduces every
    input value; ``..., shared from role R``: the role's own values did not determine it and
    the law of the same parameter at the same call site in role R reproduces them). Empty if
    the trace was not extrapolated; traces extrapolated before the status column existed get
    an empty status.
    """
    import pandas as pd

    if not isinstance(trace, TraceModel):
        raise UsageError(
            f"extrapolation_laws expects a scalatrace.Trace, not {type(trace).__name__}"
        )

    columns = ["role", "where", "parameter", "formula", "status"]
    rows = [
        (line.split("\t") + [""] * len(columns))[: len(columns)]
        for line in trace.metadata.get("extrapolation_laws", "").splitlines()
        if line
    ]
    return pd.DataFrame(rows, columns=columns)
