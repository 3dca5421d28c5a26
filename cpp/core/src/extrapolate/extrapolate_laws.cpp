// Linear laws of trace parameters in the grid sizes and a rank's coordinates (thesis §3.2.3):
// the fewest-term combination of features that reproduces every input value exactly, solved by
// Gaussian elimination and verified in exact integer arithmetic.
// See docs/extrapolation.md ("Parameter laws").
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "scalatrace/extrapolate/extrapolate.hpp"

namespace scalatrace {
namespace {

using i128 = __int128;

enum class Feat { One, X, Y, Z, XY, YZ, XYZ, Cx, Cy, Cz, CyX, CzXY, R, R2, R3, J, JX, JXY };

struct FeatureDef {
  Feat feat;
  const char* name;
};

std::vector<FeatureDef> feature_defs(std::size_t ndims, bool with_index) {
  std::vector<FeatureDef> d{{Feat::One, "1"}, {Feat::X, "X"}};
  if (ndims >= 2) d.insert(d.end(), {{Feat::Y, "Y"}, {Feat::XY, "X*Y"}});
  if (ndims >= 3) d.insert(d.end(), {{Feat::Z, "Z"}, {Feat::YZ, "Y*Z"}, {Feat::XYZ, "X*Y*Z"}});
  d.push_back({Feat::Cx, "x"});
  if (ndims >= 2) d.insert(d.end(), {{Feat::Cy, "y"}, {Feat::CyX, "y*X"}});
  if (ndims >= 3) d.insert(d.end(), {{Feat::Cz, "z"}, {Feat::CzXY, "z*X*Y"}});
  if (ndims >= 2) d.push_back({Feat::R, "r"});  // in 1D the rank is x
  d.insert(d.end(), {{Feat::R2, "(r%2)"}, {Feat::R3, "(r%3)"}});
  if (with_index) {
    d.push_back({Feat::J, "j"});
    if (ndims >= 2) d.push_back({Feat::JX, "j*X"});
    if (ndims >= 3) d.push_back({Feat::JXY, "j*X*Y"});
  }
  return d;
}

bool is_rank_feature(Feat f) {
  return f == Feat::Cx || f == Feat::Cy || f == Feat::Cz || f == Feat::CyX || f == Feat::CzXY || f == Feat::R ||
         f == Feat::R2 || f == Feat::R3;
}

std::int64_t feature_value(Feat f, const Grid& g, const std::vector<std::int64_t>& c, std::int64_t j) {
  auto dim = [&](std::size_t i) { return i < g.dims.size() ? g.dims[i] : 1; };
  auto co = [&](std::size_t i) { return i < c.size() ? c[i] : 0; };
  switch (f) {
    case Feat::One:
      return 1;
    case Feat::X:
      return dim(0);
    case Feat::Y:
      return dim(1);
    case Feat::Z:
      return dim(2);
    case Feat::XY:
      return dim(0) * dim(1);
    case Feat::YZ:
      return dim(1) * dim(2);
    case Feat::XYZ:
      return dim(0) * dim(1) * dim(2);
    case Feat::Cx:
      return co(0);
    case Feat::Cy:
      return co(1);
    case Feat::Cz:
      return co(2);
    case Feat::CyX:
      return co(1) * dim(0);
    case Feat::CzXY:
      return co(2) * dim(0) * dim(1);
    case Feat::R:
      return co(0) + dim(0) * (co(1) + dim(1) * co(2));
    case Feat::R2:
      return (co(0) + dim(0) * (co(1) + dim(1) * co(2))) % 2;
    case Feat::R3:
      return (co(0) + dim(0) * (co(1) + dim(1) * co(2))) % 3;
    case Feat::J:
      return j;
    case Feat::JX:
      return j * dim(0);
    case Feat::JXY:
      return j * dim(0) * dim(1);
  }
  return 0;
}

/// Best rational approximation with a denominator up to 4096 (continued fractions).
bool rationalize(long double x, std::int64_t& num, std::int64_t& den) {
  if (!std::isfinite(static_cast<double>(x)) || std::fabs(static_cast<double>(x)) > 9e15) return false;
  long double h0 = 0, h1 = 1, k0 = 1, k1 = 0, v = x;
  for (int it = 0; it < 40; ++it) {
    const long double a = std::floor(v);
    const long double h2 = a * h1 + h0, k2 = a * k1 + k0;
    if (k2 > 4096) break;
    h0 = h1;
    h1 = h2;
    k0 = k1;
    k1 = k2;
    const long double frac = v - a;
    if (std::fabs(static_cast<double>(h1 / k1 - x)) <= 1e-9 * std::max<long double>(1, std::fabs(x))) break;
    if (frac < 1e-18L) break;
    v = 1 / frac;
  }
  if (k1 == 0) return false;
  num = static_cast<std::int64_t>(std::llround(static_cast<double>(h1)));
  den = static_cast<std::int64_t>(std::llround(static_cast<double>(k1)));
  if (den < 0) {
    den = -den;
    num = -num;
  }
  return den > 0;
}

/// Exact value times the common denominator: (sum, lcm).
std::pair<i128, std::int64_t> exact_sum(const LinearLaw& law, const std::vector<std::int64_t>& f) {
  std::int64_t l = 1;
  for (auto d : law.den) l = std::lcm(l, d);
  i128 s = 0;
  for (std::size_t k = 0; k < law.terms.size(); ++k)
    s += static_cast<i128>(law.num[k]) * (l / law.den[k]) * f[law.terms[k]];
  return {s, l};
}

/// Solves the subset's coefficients from linearly independent points; nullopt if the points do
/// not determine them or the result is not exact everywhere.
std::optional<LinearLaw> fit_subset(const std::vector<std::size_t>& subset,
                                    const std::vector<std::vector<std::int64_t>>& pts,
                                    const std::vector<std::int64_t>& vals) {
  const std::size_t s = subset.size(), n = pts.size();
  // Row echelon of the n x s matrix with partial pivoting, augmented with the values.
  std::vector<std::vector<long double>> a(n, std::vector<long double>(s + 1));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < s; ++k) a[i][k] = static_cast<long double>(pts[i][subset[k]]);
    a[i][s] = static_cast<long double>(vals[i]);
  }
  std::vector<std::size_t> pivot_row(s);
  std::size_t row = 0;
  for (std::size_t col = 0; col < s; ++col) {
    std::size_t best = row;
    long double best_abs = 0;
    for (std::size_t i = row; i < n; ++i)
      if (std::fabs(static_cast<double>(a[i][col])) > best_abs) {
        best_abs = std::fabs(static_cast<double>(a[i][col]));
        best = i;
      }
    long double scale = 0;
    for (std::size_t i = 0; i < n; ++i) scale = std::max<long double>(scale, std::fabs(static_cast<double>(a[i][col])));
    if (row >= n || best_abs <= 1e-9L * std::max<long double>(1, scale)) return std::nullopt;
    std::swap(a[row], a[best]);
    for (std::size_t i = row + 1; i < n; ++i) {
      const long double m = a[i][col] / a[row][col];
      if (m == 0) continue;
      for (std::size_t k = col; k <= s; ++k) a[i][k] -= m * a[row][k];
    }
    pivot_row[col] = row++;
  }
  std::vector<long double> coef(s);
  for (std::size_t col = s; col-- > 0;) {
    long double v = a[pivot_row[col]][s];
    for (std::size_t k = col + 1; k < s; ++k) v -= a[pivot_row[col]][k] * coef[k];
    coef[col] = v / a[pivot_row[col]][col];
  }
  LinearLaw law;
  for (std::size_t k = 0; k < s; ++k) {
    std::int64_t num = 0, den = 1;
    if (!rationalize(coef[k], num, den) || num == 0) return std::nullopt;
    law.terms.push_back(subset[k]);
    law.num.push_back(num);
    law.den.push_back(den);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto [sum, l] = exact_sum(law, pts[i]);
    if (sum != static_cast<i128>(vals[i]) * l) return std::nullopt;
  }
  return law;
}

std::string coefficient_text(std::int64_t num, std::int64_t den, const std::string& name) {
  const bool constant = name == "1";
  std::string s;
  const std::int64_t a = num < 0 ? -num : num;
  if (constant)
    s = std::to_string(a);
  else if (a == 1)
    s = name;
  else
    s = std::to_string(a) + "*" + name;
  if (den != 1) s += "/" + std::to_string(den);
  return s;
}

}  // namespace

FeatureSpace FeatureSpace::make(std::size_t ndims, bool with_index) {
  FeatureSpace fs;
  fs.ndims = ndims;
  fs.with_index = with_index;
  for (const auto& d : feature_defs(ndims, with_index)) fs.names.emplace_back(d.name);
  return fs;
}

std::vector<std::int64_t> FeatureSpace::values(const Grid& grid, const std::vector<std::int64_t>& coords,
                                               std::int64_t j) const {
  const auto defs = feature_defs(ndims, with_index);
  std::vector<std::int64_t> out(defs.size());
  for (std::size_t i = 0; i < defs.size(); ++i) out[i] = feature_value(defs[i].feat, grid, coords, j);
  return out;
}

bool FeatureSpace::rank_dependent(std::size_t feature) const {
  const auto defs = feature_defs(ndims, with_index);
  return feature < defs.size() && is_rank_feature(defs[feature].feat);
}

std::int64_t LinearLaw::eval(const std::vector<std::int64_t>& features) const {
  const auto [sum, l] = exact_sum(*this, features);
  if (sum % l != 0)
    throw ExtrapolationError("a law gives a non-integer value at the target (" +
                             std::to_string(static_cast<long double>(sum) / l) + ")");
  return static_cast<std::int64_t>(sum / l);
}

std::string LinearLaw::formula(const FeatureSpace& space) const {
  // Largest features first, the constant last.
  std::vector<std::size_t> order(terms.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const bool ca = terms[a] == 0, cb = terms[b] == 0;
    if (ca != cb) return cb;
    return terms[a] > terms[b];
  });
  std::string s;
  for (std::size_t i : order) {
    const auto& name = space.names[terms[i]];
    const auto text = coefficient_text(num[i], den[i], name);
    if (s.empty())
      s = (num[i] < 0 ? "-" : "") + text;
    else
      s += (num[i] < 0 ? " - " : " + ") + text;
  }
  return s.empty() ? "0" : s;
}

bool LinearLaw::uses_rank(const FeatureSpace& space) const {
  return std::any_of(terms.begin(), terms.end(), [&](std::size_t t) { return space.rank_dependent(t); });
}

std::optional<LinearLaw> solve_linear_law(const std::vector<std::vector<std::int64_t>>& points,
                                          const std::vector<std::int64_t>& values,
                                          const std::vector<std::vector<std::int64_t>>& probes, std::string* why,
                                          std::size_t max_terms, std::size_t check_points) {
  if (points.empty() || points.size() != values.size())
    throw UsageError("solve_linear_law needs as many values as points (at least one)");
  const std::size_t nfeat = points[0].size();
  // Distinct points only (many ranks share feature values).
  std::set<std::pair<std::vector<std::int64_t>, std::int64_t>> uniq;
  for (std::size_t i = 0; i < points.size(); ++i) uniq.emplace(points[i], values[i]);
  std::vector<std::vector<std::int64_t>> pts;
  std::vector<std::int64_t> vals;
  for (const auto& [p, v] : uniq) {
    pts.push_back(p);
    vals.push_back(v);
  }
  for (std::size_t i = 1; i < pts.size(); ++i)
    if (pts[i] == pts[i - 1]) {
      if (why)
        *why = "the same sizes and coordinates give different values (" + std::to_string(vals[i - 1]) + " and " +
               std::to_string(vals[i]) + ")";
      return std::nullopt;
    }
  if (std::all_of(vals.begin(), vals.end(), [&](std::int64_t v) { return v == vals[0]; })) {
    LinearLaw law;
    law.terms = {0};
    law.num = {vals[0]};
    law.den = {1};
    return law;
  }
  std::vector<std::size_t> subset;
  for (std::size_t size = 1; size <= std::min(max_terms, nfeat); ++size) {
    std::vector<LinearLaw> fits;
    // Enumerate combinations of `size` features in lexicographic order.
    subset.resize(size);
    std::iota(subset.begin(), subset.end(), 0);
    while (true) {
      if (auto law = fit_subset(subset, pts, vals)) fits.push_back(std::move(*law));
      std::size_t i = size;
      while (i > 0 && subset[i - 1] == nfeat - size + i - 1) --i;
      if (i == 0) break;
      ++subset[i - 1];
      for (std::size_t k = i; k < size; ++k) subset[k] = subset[k - 1] + 1;
    }
    // Only laws checked on a point beyond their unknowns count (k terms: k+1 distinct points).
    std::string unchecked;
    std::erase_if(fits, [&](const LinearLaw& law) {
      std::set<std::vector<std::int64_t>> distinct;
      for (const auto& p : pts) {
        std::vector<std::int64_t> projected;
        for (auto t : law.terms) projected.push_back(p[t]);
        distinct.insert(projected);
      }
      if (distinct.size() >= law.terms.size() + check_points) return false;
      if (unchecked.empty())
        unchecked = "under-determined: a " + std::to_string(law.terms.size()) + "-term law fits only " +
                    std::to_string(distinct.size()) +
                    " distinct input points, none left to check it; add an input size";
      return true;
    });
    if (fits.empty()) {
      if (!unchecked.empty()) {
        if (why) *why = unchecked;
        return std::nullopt;
      }
      continue;
    }
    for (const auto& probe : probes) {
      const auto [s0, l0] = exact_sum(fits[0], probe);
      for (std::size_t f = 1; f < fits.size(); ++f) {
        const auto [s1, l1] = exact_sum(fits[f], probe);
        if (s0 * l1 != s1 * l0) {
          if (why)
            *why =
                "ambiguous: the inputs do not separate the candidate laws (their sizes or "
                "coordinates vary together); add input sizes that vary each grid dimension "
                "on its own";
          return std::nullopt;
        }
      }
    }
    return fits[0];
  }
  if (why) *why = "no linear law with at most " + std::to_string(max_terms) + " terms fits";
  return std::nullopt;
}

}  // namespace scalatrace
