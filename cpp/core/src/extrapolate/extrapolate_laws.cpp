// Linear laws of trace parameters in the grid sizes and a rank's coordinates (thesis §3.2.3):
// the fewest-term combination of features that reproduces every input value exactly, solved by
// Gaussian elimination and verified in exact integer arithmetic.
// See docs/extrapolation.md ("Parameter laws").
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "scalatrace/extrapolate/extrapolate.hpp"

namespace scalatrace {
namespace {

using i128 = __int128;

enum class Feat {
  One,
  X,
  Y,
  Z,
  XY,
  YZ,
  XYZ,
  Log2P,
  SqrtP,
  Cx,
  Cy,
  Cz,
  CyX,
  CzXY,
  R,
  R2,
  R3,
  J,
  JX,
  JXY,
  Log2X,
  Log2Y,
  Log2Z,
  K,
  N,
  Pow2K,
  Pow2Rev,
  XorXK,
  XorXRev,
  XorRK,
  XorRRev,
  Transpose,
  PerXp,
  PerXm,
  PerYp,
  PerYm,
  PerZp,
  PerZm,
  P2
};

struct FeatureDef {
  Feat feat;
  const char* name;
};

std::vector<FeatureDef> feature_defs(std::size_t ndims, bool with_index, bool with_stage, bool periodic) {
  std::vector<FeatureDef> d{{Feat::One, "1"}, {Feat::X, "X"}};
  if (ndims >= 2) d.insert(d.end(), {{Feat::Y, "Y"}, {Feat::XY, "X*Y"}});
  if (ndims >= 3) d.insert(d.end(), {{Feat::Z, "Z"}, {Feat::YZ, "Y*Z"}, {Feat::XYZ, "X*Y*Z"}});
  d.insert(d.end(), {{Feat::Log2P, "log2(P)"}, {Feat::SqrtP, "sqrt(P)"}});
  d.push_back({Feat::Cx, "x"});
  if (ndims >= 2) d.insert(d.end(), {{Feat::Cy, "y"}, {Feat::CyX, "y*X"}});
  if (ndims >= 3) d.insert(d.end(), {{Feat::Cz, "z"}, {Feat::CzXY, "z*X*Y"}});
  if (ndims >= 2) d.push_back({Feat::R, "r"});  // in 1D the rank is x
  d.insert(d.end(), {{Feat::R2, "(r%2)"}, {Feat::R3, "(r%3)"}});
  // The transpose partner of a 2D grid X = c*Y (NPB CG's exch_proc): the rank at
  // (c*y + x%c, floor(x/c)); on a square grid (c = 1) the plain transpose (y, x).
  if (ndims == 2) d.push_back({Feat::Transpose, "(transpose(r)-r)"});
  if (with_index) {
    d.push_back({Feat::J, "j"});
    if (ndims >= 2) d.push_back({Feat::JX, "j*X"});
    if (ndims >= 3) d.push_back({Feat::JXY, "j*X*Y"});
  }
  if (with_stage) {
    // A stage loop (k = 0 .. n-1): recursive doubling, butterflies, tree levels. Its trip count
    // is a logarithm of a grid size; its peers are the rank with bit k (or bit n-1-k) flipped.
    d.push_back({Feat::Log2X, "log2(X)"});
    if (ndims >= 2) d.push_back({Feat::Log2Y, "log2(Y)"});
    if (ndims >= 3) d.push_back({Feat::Log2Z, "log2(Z)"});
    d.insert(d.end(), {{Feat::K, "k"}, {Feat::N, "n"}, {Feat::Pow2K, "2^k"}, {Feat::Pow2Rev, "2^(n-1-k)"}});
    d.insert(d.end(), {{Feat::XorXK, "((x^2^k)-x)"}, {Feat::XorXRev, "((x^2^(n-1-k))-x)"}});
    if (ndims >= 2) d.insert(d.end(), {{Feat::XorRK, "((r^2^k)-r)"}, {Feat::XorRRev, "((r^2^(n-1-k))-r)"}});
  }
  if (periodic) {
    // The relative rank of the neighbour one step up or down a dimension with wrap-around (a
    // torus: NPB MG): one law for every rank, also where a dimension of size 2 makes both one.
    d.insert(d.end(), {{Feat::PerXp, "((x+1)%X-x)"}, {Feat::PerXm, "((x+X-1)%X-x)"}});
    if (ndims >= 2) d.insert(d.end(), {{Feat::PerYp, "X*((y+1)%Y-y)"}, {Feat::PerYm, "X*((y+Y-1)%Y-y)"}});
    if (ndims >= 3) d.insert(d.end(), {{Feat::PerZp, "X*Y*((z+1)%Z-z)"}, {Feat::PerZm, "X*Y*((z+Z-1)%Z-z)"}});
  }
  d.push_back({Feat::P2, "P^2"});  // divisor only: last (FeatureSpace::linear_count)
  return d;
}

bool is_rank_feature(Feat f) {
  return f == Feat::Cx || f == Feat::Cy || f == Feat::Cz || f == Feat::CyX || f == Feat::CzXY || f == Feat::R ||
         f == Feat::R2 || f == Feat::R3 || f == Feat::XorXK || f == Feat::XorXRev || f == Feat::XorRK ||
         f == Feat::XorRRev || f == Feat::Transpose || f == Feat::PerXp || f == Feat::PerXm || f == Feat::PerYp ||
         f == Feat::PerYm || f == Feat::PerZp || f == Feat::PerZm;
}

/// 2^e for 0 <= e < 62, else 0 (a stage index outside the loop: no such bit).
std::int64_t pow2(std::int64_t e) { return e >= 0 && e < 62 ? std::int64_t{1} << e : 0; }

/// floor(log2 n) for n >= 1 (0 otherwise).
std::int64_t floor_log2(std::int64_t n) {
  std::int64_t l = 0;
  while (n > 1) {
    n >>= 1;
    ++l;
  }
  return l;
}

/// floor(sqrt n) for n >= 0, exact.
std::int64_t floor_sqrt(std::int64_t n) {
  if (n <= 0) return 0;
  auto s = static_cast<std::int64_t>(std::sqrt(static_cast<double>(n)));
  while (s * s > n) --s;
  while ((s + 1) * (s + 1) <= n) ++s;
  return s;
}

std::int64_t feature_value(Feat f, const Grid& g, const std::vector<std::int64_t>& c, std::int64_t j, std::int64_t k,
                           std::int64_t n) {
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
    case Feat::Log2P:
      return floor_log2(g.size());
    case Feat::SqrtP:
      return floor_sqrt(g.size());
    case Feat::P2:
      return g.size() * g.size();
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
    case Feat::Log2X:
      return floor_log2(dim(0));
    case Feat::Log2Y:
      return floor_log2(dim(1));
    case Feat::Log2Z:
      return floor_log2(dim(2));
    case Feat::K:
      return k;
    case Feat::N:
      return n;
    case Feat::Pow2K:
      return pow2(k);
    case Feat::Pow2Rev:
      return pow2(n - 1 - k);
    case Feat::XorXK:
      return (co(0) ^ pow2(k)) - co(0);
    case Feat::XorXRev:
      return (co(0) ^ pow2(n - 1 - k)) - co(0);
    case Feat::Transpose: {
      if (g.dims.size() != 2 || dim(1) <= 0 || dim(0) % dim(1) != 0) return kUndefinedFeature;
      const auto c = dim(0) / dim(1), x = co(0), y = co(1);
      return (c * y + x % c + (x / c) * dim(0)) - (x + y * dim(0));
    }
    case Feat::PerXp:
    case Feat::PerXm:
    case Feat::PerYp:
    case Feat::PerYm:
    case Feat::PerZp:
    case Feat::PerZm: {
      const std::size_t axis = f == Feat::PerXp || f == Feat::PerXm ? 0 : f == Feat::PerYp || f == Feat::PerYm ? 1 : 2;
      const bool up = f == Feat::PerXp || f == Feat::PerYp || f == Feat::PerZp;
      const auto size = dim(axis), at = co(axis);
      if (size <= 0) return 0;
      std::int64_t stride = 1;
      for (std::size_t i = 0; i < axis; ++i) stride *= dim(i);
      return stride * ((at + (up ? 1 : size - 1)) % size - at);
    }
    case Feat::XorRK:
    case Feat::XorRRev: {
      const auto r = co(0) + dim(0) * (co(1) + dim(1) * co(2));
      return (r ^ pow2(f == Feat::XorRK ? k : n - 1 - k)) - r;
    }
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

/// Exact value times the common denominator: (sum, lcm). Inverse terms whose divisor is not
/// positive at `f` count 0 (they are fitted and used only where it is).
std::pair<i128, std::int64_t> exact_sum(const LinearLaw& law, const std::vector<std::int64_t>& f) {
  if (law.ext_scale != 0) {  // scale * (G - S*ends(m1)) * (G - S*ends(m2)) / S^2
    const auto size = f[law.mod_size];
    if (size <= 0) return {0, 1};
    auto ends = [&](const LinearLaw::ModTerm& m) {
      const auto v = law.mod_value(m, f);
      return static_cast<std::int64_t>(v == 0) + static_cast<std::int64_t>(v == size - 1);
    };
    const i128 e1 = law.ext_size - size * ends(law.mods[0]), e2 = law.ext_size - size * ends(law.mods[1]);
    return {static_cast<i128>(law.ext_scale) * e1 * e2, size * size};
  }
  std::int64_t l = 1;
  for (auto d : law.den) l = std::lcm(l, d);
  for (const auto& m : law.mods) l = std::lcm(l, m.den);
  for (std::size_t k = 0; k < law.inv_feature.size(); ++k)
    if (const auto d = f[law.inv_feature[k]]; d > 0) l = std::lcm(l, law.inv_den[k] * d);
  i128 s = 0;
  for (std::size_t k = 0; k < law.terms.size(); ++k)
    s += static_cast<i128>(law.num[k]) * (l / law.den[k]) * f[law.terms[k]];
  for (const auto& m : law.mods) s += static_cast<i128>(m.num) * (l / m.den) * law.mod_value(m, f);
  for (std::size_t k = 0; k < law.inv_feature.size(); ++k)
    if (const auto d = f[law.inv_feature[k]]; d > 0)
      s += static_cast<i128>(law.inv_num[k]) * (l / (law.inv_den[k] * d));
  return {s, l};
}

/// Solves the subset's coefficients from linearly independent points; nullopt if the points do
/// not determine them or the result is not exact everywhere.
std::optional<LinearLaw> fit_subset(const std::vector<std::size_t>& subset,
                                    const std::vector<std::vector<std::int64_t>>& pts,
                                    const std::vector<std::int64_t>& vals, bool* undetermined = nullptr) {
  if (undetermined) *undetermined = false;
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
    if (row >= n || best_abs <= 1e-9L * std::max<long double>(1, scale)) {
      if (undetermined) *undetermined = true;
      return std::nullopt;
    }
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

FeatureSpace FeatureSpace::make(std::size_t ndims, bool with_index, bool with_stage, bool periodic) {
  FeatureSpace fs;
  fs.ndims = ndims;
  fs.with_index = with_index;
  fs.with_stage = with_stage;
  fs.periodic = periodic;
  for (const auto& d : feature_defs(ndims, with_index, with_stage, periodic)) fs.names.emplace_back(d.name);
  return fs;
}

std::vector<std::int64_t> FeatureSpace::values(const Grid& grid, const std::vector<std::int64_t>& coords,
                                               std::int64_t j, std::int64_t k, std::int64_t n) const {
  const auto defs = feature_defs(ndims, with_index, with_stage, periodic);
  std::vector<std::int64_t> out(defs.size());
  for (std::size_t i = 0; i < defs.size(); ++i) out[i] = feature_value(defs[i].feat, grid, coords, j, k, n);
  return out;
}

bool FeatureSpace::rank_dependent(std::size_t feature) const {
  const auto defs = feature_defs(ndims, with_index, with_stage, periodic);
  return feature < defs.size() && is_rank_feature(defs[feature].feat);
}

bool FeatureSpace::exotic(std::size_t feature) const {
  const auto defs = feature_defs(ndims, with_index, with_stage, periodic);
  if (feature >= defs.size()) return false;
  const auto f = defs[feature].feat;
  return f == Feat::Log2P || f == Feat::SqrtP || f == Feat::Log2X || f == Feat::Log2Y || f == Feat::Log2Z ||
         f == Feat::Transpose;
}

std::vector<std::size_t> FeatureSpace::divisors() const {
  const auto defs = feature_defs(ndims, with_index, with_stage, periodic);
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < defs.size(); ++i) switch (defs[i].feat) {
      case Feat::X:
      case Feat::Y:
      case Feat::Z:
      case Feat::XY:
      case Feat::YZ:
      case Feat::XYZ:
      case Feat::P2:
        out.push_back(i);
        break;
      default:
        break;
    }
  return out;
}

std::optional<std::size_t> FeatureSpace::find(const std::string& name) const {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return i;
  return std::nullopt;
}

std::size_t FeatureSpace::index(const std::string& name) const {
  if (const auto i = find(name)) return *i;
  throw UsageError("no feature named '" + name + "'");
}

namespace {

/// floor(a / b) for b > 0.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && (a < 0)) --q;
  return q;
}

/// The rank count's name in formulas: the product of every grid size is P.
std::string divisor_name(const FeatureSpace& space, std::size_t feature) {
  const auto& n = space.names[feature];
  const std::string product = space.ndims == 1 ? "X" : space.ndims == 2 ? "X*Y" : "X*Y*Z";
  if (n == product) return "P";
  return n.find('*') != std::string::npos ? "(" + n + ")" : n;
}

}  // namespace

std::int64_t LinearLaw::mod_value(const ModTerm& m, const std::vector<std::int64_t>& f) const {
  const auto size = f.at(mod_size);
  if (size <= 0) return 0;
  const auto y = mod_y == SIZE_MAX ? 0 : f.at(mod_y);
  auto v = (m.a * f.at(mod_x) + m.b * y + m.c * f.at(mod_k) + m.d) % size;
  if (v < 0) v += size;
  return m.times_size ? v * size : v;
}

std::int64_t LinearLaw::eval(const std::vector<std::int64_t>& features) const {
  for (auto f : inv_feature)
    if (features.at(f) <= 0)
      throw ExtrapolationError("a law divides by " + std::to_string(features.at(f)) + " at the target");
  if (ext_scale != 0 && (features.at(mod_size) <= 0 || ext_size % features.at(mod_size) != 0))
    throw ExtrapolationError("a cell-extent law splits " + std::to_string(ext_size) + " over " +
                             std::to_string(features.at(mod_size)) + " cells at the target, unevenly");
  if (div_scale != 0) {
    const auto d = features.at(div_feature);
    if (d <= 0) throw ExtrapolationError("a division law divides by " + std::to_string(d) + " at the target");
    return div_scale * floor_div(div_numerator, d) + div_offset;
  }
  for (auto t : terms)
    if (features.at(t) == kUndefinedFeature)
      throw ExtrapolationError(
          "a law uses the transpose partner, which is undefined at the target grid (X is not a "
          "multiple of Y)");
  const auto [sum, l] = exact_sum(*this, features);
  if (sum % l != 0)
    throw ExtrapolationError("a law gives a non-integer value at the target (" +
                             std::to_string(static_cast<long double>(sum) / l) + ")");
  return static_cast<std::int64_t>(sum / l);
}

std::string LinearLaw::formula(const FeatureSpace& space) const {
  if (ext_scale != 0) {
    const auto& size = space.names[mod_size];
    auto extent = [&](const ModTerm& m) {
      ModTerm plain = m;
      plain.num = plain.den = 1;
      LinearLaw one;
      one.mods = {plain};
      one.mod_x = mod_x;
      one.mod_y = mod_y;
      one.mod_k = mod_k;
      one.mod_size = mod_size;
      auto e = one.formula(space);  // "((...) mod X)"
      return "(" + std::to_string(ext_size) + "/" + size + " - ends" + e + ")";
    };
    return std::to_string(ext_scale) + "*" + extent(mods[0]) + "*" + extent(mods[1]);
  }
  if (div_scale != 0) {
    // C's integer division; N is the smallest numerator consistent with the inputs, so where
    // they allow it (div_exact) N/d had no remainder at any of them.
    const std::string body = "floor(" + std::to_string(div_numerator) + "/" + divisor_name(space, div_feature) + ")";
    const std::string scaled = div_scale == 1 ? body : std::to_string(div_scale) + "*" + body;
    if (div_offset == 0) return scaled;
    return scaled + (div_offset < 0 ? " - " : " + ") + std::to_string(div_offset < 0 ? -div_offset : div_offset);
  }
  // Largest features first, the constant last.
  std::vector<std::size_t> order(terms.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const bool ca = terms[a] == 0, cb = terms[b] == 0;
    if (ca != cb) return cb;
    return terms[a] > terms[b];
  });
  std::vector<std::pair<bool, std::string>> pieces;  // (negative, text) in order
  std::vector<std::pair<bool, std::string>> constant;
  for (std::size_t i : order) {
    const auto& name = space.names[terms[i]];
    (terms[i] == 0 ? constant : pieces).emplace_back(num[i] < 0, coefficient_text(num[i], den[i], name));
  }
  for (const auto& m : mods) {
    std::string e;
    const std::string y = mod_y == SIZE_MAX ? "y" : space.names[mod_y];
    for (const auto& [c, sym] : {std::pair{m.a, space.names[mod_x]}, {m.b, y}, {m.c, space.names[mod_k]}}) {
      if (c == 0) continue;
      e += (c < 0 ? "-" : e.empty() ? "" : "+") + sym;
    }
    if (m.d != 0) e += (m.d < 0 ? "-" : "+") + std::to_string(m.d < 0 ? -m.d : m.d);
    const auto& size = space.names[mod_size];
    const std::string name = (m.times_size ? size + "*" : std::string()) + "((" + e + ") mod " + size + ")";
    pieces.emplace_back(m.num < 0, coefficient_text(m.num, m.den, name));
  }
  for (std::size_t k = 0; k < inv_feature.size(); ++k) {
    const auto d = divisor_name(space, inv_feature[k]);
    const auto a = inv_num[k] < 0 ? -inv_num[k] : inv_num[k];
    pieces.emplace_back(inv_num[k] < 0, std::to_string(a) + "/" +
                                            (inv_den[k] == 1 ? d : "(" + std::to_string(inv_den[k]) + "*" + d + ")"));
  }
  pieces.insert(pieces.end(), constant.begin(), constant.end());
  std::string s;
  for (const auto& [negative, text] : pieces) {
    if (s.empty())
      s = (negative ? "-" : "") + text;
    else
      s += (negative ? " - " : " + ") + text;
  }
  return s.empty() ? "0" : s;
}

bool LinearLaw::uses_rank(const FeatureSpace& space) const {
  if (div_scale != 0 && ext_scale == 0) return space.rank_dependent(div_feature);
  if (std::any_of(mods.begin(), mods.end(), [](const ModTerm& m) { return m.a != 0 || m.b != 0; })) return true;
  return std::any_of(terms.begin(), terms.end(), [&](std::size_t t) { return space.rank_dependent(t); });
}

namespace {

/// "ambiguous: A and B both reproduce every input value but give a and b at the target".
std::string ambiguity(const LinearLaw& a, const LinearLaw& b, const std::vector<std::int64_t>& probe,
                      const FeatureSpace* space, const std::string& reason = "") {
  std::string s = "ambiguous: ";
  if (space) {
    auto value = [&](const LinearLaw& l) {
      try {
        return std::to_string(l.eval(probe));
      } catch (const Error&) {
        return std::string("a non-integer");
      }
    };
    s += a.formula(*space) + " and " + b.formula(*space) + " both reproduce every input value but give " + value(a) +
         " and " + value(b) + " at the target";
  } else {
    s += "two laws reproduce every input value but differ at the target";
  }
  return s + " (" + (reason.empty() ? "the inputs' sizes or coordinates vary together" : reason) +
         "); add an input size that separates them";
}

}  // namespace

namespace {
/// A rival law and the probe at which it differs from the law it rivals.
using Rival = std::pair<LinearLaw, std::vector<std::int64_t>>;

/// A law of exactly `size` terms over `usable` that reproduces every value and differs from
/// `law` at some probe, with that probe; nullopt if there is none. `checked_by` > 0: only laws
/// with integer coefficients and that many distinct points beyond their terms count (else
/// checked or not). `decisive`: a rival for which it holds is returned before any other.
std::optional<Rival> one_term_more(const std::vector<std::size_t>& usable,
                                   const std::vector<std::vector<std::int64_t>>& pts,
                                   const std::vector<std::int64_t>& vals,
                                   const std::vector<std::vector<std::int64_t>>& probes, const LinearLaw& law,
                                   std::size_t size, std::size_t checked_by = 0,
                                   const std::function<bool(const Rival&)>& decisive = nullptr) {
  const std::size_t nusable = usable.size();
  if (size > nusable) return std::nullopt;
  auto checked = [&](const LinearLaw& other) {
    if (checked_by == 0) return true;
    // Single calls: integer coefficients only (a rival such as (r%3)/6 + y*X/3 beside y is a
    // coincidence of three points, not a reading of the code).
    if (std::any_of(other.den.begin(), other.den.end(), [](std::int64_t d) { return d != 1; })) return false;
    std::set<std::vector<std::int64_t>> distinct;
    for (const auto& p : pts) {
      std::vector<std::int64_t> projected;
      for (auto t : other.terms) projected.push_back(p[t]);
      distinct.insert(projected);
    }
    return distinct.size() >= other.terms.size() + checked_by;
  };
  std::optional<Rival> first;
  std::vector<std::size_t> pick(size), subset(size);
  std::iota(pick.begin(), pick.end(), 0);
  while (true) {
    for (std::size_t k = 0; k < size; ++k) subset[k] = usable[pick[k]];
    if (auto other = fit_subset(subset, pts, vals); other && checked(*other))
      for (const auto& probe : probes) {
        const auto [s0, l0] = exact_sum(law, probe);
        const auto [s1, l1] = exact_sum(*other, probe);
        if (s0 * l1 == s1 * l0) continue;
        Rival rival{*other, probe};
        if (!decisive || decisive(rival)) return rival;
        if (!first) first = std::move(rival);
      }
    std::size_t i = size;
    while (i > 0 && pick[i - 1] == nusable - size + i - 1) --i;
    if (i == 0) return first;
    ++pick[i - 1];
    for (std::size_t k = i; k < size; ++k) pick[k] = pick[k - 1] + 1;
  }
}

/// A residue term ((r%2), (r%3)) of a rival law whose value at the rival's probe no input point
/// had (nullopt if none). A residue has few values; a law of it is read off the classes the
/// inputs show, and says nothing of a class none of them shows (extrap_residue.c at 2, 5, 8
/// ranks: its last rank's r % 3 is 1 every time, 2 at 9 ranks).
std::optional<std::size_t> unseen_residue(const Rival& rival, const std::vector<std::vector<std::int64_t>>& pts,
                                          const FeatureSpace& space) {
  const auto defs = feature_defs(space.ndims, space.with_index, space.with_stage, space.periodic);
  for (auto t : rival.first.terms) {
    if (t >= defs.size() || (defs[t].feat != Feat::R2 && defs[t].feat != Feat::R3)) continue;
    if (std::none_of(pts.begin(), pts.end(), [&](const auto& p) { return p[t] == rival.second[t]; })) return t;
  }
  return std::nullopt;
}

/// The fewest-term law over the `usable` features (see solve_linear_law).
std::optional<LinearLaw> solve_over(const std::vector<std::size_t>& usable,
                                    const std::vector<std::vector<std::int64_t>>& pts,
                                    const std::vector<std::int64_t>& vals,
                                    const std::vector<std::vector<std::int64_t>>& probes, std::string* why,
                                    std::size_t max_terms, std::size_t check_points, const FeatureSpace* space,
                                    const LinearLaw* avoid = nullptr, bool* read_at_inputs = nullptr,
                                    bool avoid_unchecked = false, std::string* rival = nullptr);
}  // namespace

namespace {

/// The first probe at which laws `a` and `b` give different values; null if none.
const std::vector<std::int64_t>* first_disagreement(const LinearLaw& a, const LinearLaw& b,
                                                    const std::vector<std::vector<std::int64_t>>& probes) {
  for (const auto& probe : probes) {
    const auto [s0, l0] = exact_sum(a, probe);
    const auto [s1, l1] = exact_sum(b, probe);
    if (s0 * l1 != s1 * l0) return &probe;
  }
  return nullptr;
}

}  // namespace

std::optional<LinearLaw> solve_linear_law(const std::vector<std::vector<std::int64_t>>& points,
                                          const std::vector<std::int64_t>& values,
                                          const std::vector<std::vector<std::int64_t>>& probes, std::string* why,
                                          std::size_t max_terms, std::size_t check_points, std::size_t linear_features,
                                          const FeatureSpace* space, std::string* note) {
  if (points.empty() || points.size() != values.size())
    throw UsageError("solve_linear_law needs as many values as points (at least one)");
  const std::size_t nfeat = std::min(points[0].size(), linear_features);
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
  // Tiers: laws of the grid sizes and coordinates first; log2(P) and sqrt(P) only where no such
  // law fits (or only an unchecked one), and only where they vary over the points (constant
  // there, they would only repeat the constant term and alias every law with a spurious twin).
  std::string first_why;
  // A feature undefined at some point or probe (the transpose partner of a grid whose X is not a
  // multiple of Y) is no term there.
  std::vector<bool> defined(nfeat, true);
  for (std::size_t f = 0; f < nfeat; ++f) {
    for (const auto& p : pts) defined[f] = defined[f] && p[f] != kUndefinedFeature;
    for (const auto& p : probes) defined[f] = defined[f] && (f >= p.size() || p[f] != kUndefinedFeature);
  }
  std::vector<std::size_t> plain_usable;  // the first tier's features
  for (const bool with_exotic : {false, true}) {
    std::vector<std::size_t> usable;
    bool any_exotic = false;
    for (std::size_t f = 0; f < nfeat; ++f) {
      if (!defined[f]) continue;
      const bool exotic = space && space->exotic(f);
      bool varies = false;
      for (const auto& p : pts) varies = varies || p[f] != pts[0][f];
      if (!exotic || (with_exotic && varies)) usable.push_back(f);
      any_exotic = any_exotic || (exotic && varies);
    }
    if (with_exotic && !any_exotic) break;
    std::string tier_why;
    bool at_inputs = false;
    std::string rival;
    auto law = solve_over(usable, pts, vals, probes, &tier_why, max_terms, check_points, space, nullptr, &at_inputs,
                          false, &rival);
    if (!with_exotic) plain_usable = usable;
    if (law && with_exotic && first_why.rfind("under-determined", 0) == 0) {
      // The first tier had laws of the grid sizes and coordinates that reproduce every value
      // but that the points cannot check (X - 1 at X = 3, 4, 4): one of them that differs at
      // the target from this checked law with log2(P) or sqrt(P) (floor(log2 P)/2 at P = 27,
      // 64, 64) leaves the value undecided, not this law's (LULESH's neighbour at x - 1, y + 1).
      std::string plain_why;
      const auto plain = solve_over(plain_usable, pts, vals, probes, &plain_why, max_terms, 0, space, nullptr, nullptr,
                                    false, nullptr);
      if (!plain && plain_why.rfind("ambiguous", 0) == 0) {
        if (why)
          *why = plain_why + " (and " + (space ? law->formula(*space) : std::string("a law with log2(P)")) +
                 " reproduces them too)";
        return std::nullopt;
      }
      if (const auto* probe = plain ? first_disagreement(*plain, *law, probes) : nullptr) {
        if (why) *why = ambiguity(*plain, *law, *probe, space);
        return std::nullopt;
      }
    }
    if (law && note && !rival.empty()) *note = rival;
    if (law && !with_exotic && note && space) {
      // Does a law with log2(P) or sqrt(P) also fit, and differ at the target?
      std::vector<std::size_t> all = usable;
      for (std::size_t f = 0; f < nfeat; ++f) {
        if (!defined[f]) continue;
        bool varies = false;
        for (const auto& p : pts) varies = varies || p[f] != pts[0][f];
        if (space->exotic(f) && varies) all.push_back(f);
      }
      std::sort(all.begin(), all.end());
      if (all.size() > usable.size()) {
        std::string other_why;
        auto other = solve_over(all, pts, vals, probes, &other_why, law->terms.size(), check_points, space, &*law,
                                nullptr, at_inputs);
        const std::string chosen =
            law->formula(*space) +
            (at_inputs ? " (no point left to check it, read only at values of its features that an input had)" : "");
        if (!other && other_why.rfind("ambiguous", 0) == 0)
          *note = (note->empty() ? "" : *note + "; ") + chosen + " chosen over several laws with log2(P) or sqrt(P) (" +
                  other_why + ")";
        if (other)
          for (const auto& probe : probes) {
            const auto [s0, l0] = exact_sum(*law, probe);
            const auto [s1, l1] = exact_sum(*other, probe);
            if (s0 * l1 != s1 * l0) {
              *note = (note->empty() ? "" : *note + "; ") + chosen + " chosen over " + other->formula(*space) +
                      " (both reproduce every input value, they differ at the target)";
              break;
            }
          }
      }
    }
    if (law && space && law->uses_rank(*space)) {
      // Values that are the same at every rank of an input follow the size, whatever the rank:
      // a law of the rank that reproduces them (6*(r%2) + 6*x for LULESH's 6 and 12 at 3x3x3
      // and 4x4x4) is a coincidence of the ranks the inputs have, unless the laws of the sizes
      // alone agree with it at the target.
      std::map<std::vector<std::int64_t>, std::int64_t> by_size;
      bool size_only = true;
      std::vector<std::size_t> size_usable;
      for (const std::size_t f : usable)
        if (!space->rank_dependent(f)) size_usable.push_back(f);
      for (std::size_t i = 0; i < pts.size() && size_only; ++i) {
        std::vector<std::int64_t> key;
        for (const std::size_t f : size_usable) key.push_back(pts[i][f]);
        const auto [at, fresh] = by_size.emplace(std::move(key), vals[i]);
        size_only = fresh || at->second == vals[i];
      }
      if (size_only && by_size.size() > 1) {
        std::string size_why;
        const auto sized = solve_over(size_usable, pts, vals, probes, &size_why, max_terms, 0, space, nullptr, nullptr,
                                      false, nullptr);
        if (!sized && size_why.rfind("ambiguous", 0) == 0) {
          if (why) *why = size_why + " (and " + law->formula(*space) + ", a law of the rank, reproduces them too)";
          return std::nullopt;
        }
        if (const auto* probe = sized ? first_disagreement(*sized, *law, probes) : nullptr) {
          if (why) *why = ambiguity(*sized, *law, *probe, space);
          return std::nullopt;
        }
      }
    }
    if (law) return law;
    // The more telling reason: an unchecked law (either tier) over "no law".
    if (first_why.empty() || first_why.rfind("no linear law", 0) == 0) first_why = tier_why;
    if (tier_why.rfind("ambiguous", 0) == 0) {
      if (why) *why = tier_why;
      return std::nullopt;
    }
  }
  if (why) *why = first_why;
  return std::nullopt;
}

namespace {

std::optional<LinearLaw> solve_over(const std::vector<std::size_t>& usable,
                                    const std::vector<std::vector<std::int64_t>>& pts,
                                    const std::vector<std::int64_t>& vals,
                                    const std::vector<std::vector<std::int64_t>>& probes, std::string* why,
                                    std::size_t max_terms, std::size_t check_points, const FeatureSpace* space,
                                    const LinearLaw* avoid, bool* read_at_inputs, bool avoid_unchecked,
                                    std::string* rival) {
  const std::size_t nusable = usable.size();
  if (read_at_inputs) *read_at_inputs = false;
  std::vector<std::size_t> pick, subset;
  for (std::size_t size = 1; size <= std::min(max_terms, nusable); ++size) {
    std::vector<LinearLaw> fits;
    // Enumerate combinations of `size` features in lexicographic order.
    pick.resize(size);
    std::iota(pick.begin(), pick.end(), 0);
    while (true) {
      subset.resize(size);
      for (std::size_t k = 0; k < size; ++k) subset[k] = usable[pick[k]];
      if (auto law = fit_subset(subset, pts, vals)) fits.push_back(std::move(*law));
      std::size_t i = size;
      while (i > 0 && pick[i - 1] == nusable - size + i - 1) --i;
      if (i == 0) break;
      ++pick[i - 1];
      for (std::size_t k = i; k < size; ++k) pick[k] = pick[k - 1] + 1;
    }
    // Only laws checked on a point beyond their unknowns count (k terms: k+1 distinct points).
    std::string unchecked;
    auto projection = [](const LinearLaw& law, const std::vector<std::int64_t>& p) {
      std::vector<std::int64_t> projected;
      for (auto t : law.terms) projected.push_back(p[t]);
      return projected;
    };
    // An unchecked law read where the inputs were: at every probe its features have the values
    // of an input point, so every function of them that reproduces the inputs gives that
    // input's value there, whatever its form (NPB LU's face of 2640*(floor(32/Y) + 1) bytes at
    // Y = 2, 2, 4 and a target whose Y is 4); input points beyond the law's distinct ones show
    // that the other features do not change the value (4x2 gives what 2x2 gave).
    auto read_at_input = [&](const LinearLaw& law, const std::set<std::vector<std::int64_t>>& distinct) {
      if (!space || space->with_stage || space->with_index || distinct.size() >= pts.size() || probes.empty())
        return false;
      return std::all_of(probes.begin(), probes.end(), [&](const std::vector<std::int64_t>& probe) {
        return distinct.count(projection(law, probe));
      });
    };
    const auto all_fits = fits;
    std::vector<LinearLaw> at_inputs;
    std::erase_if(fits, [&](const LinearLaw& law) {
      std::set<std::vector<std::int64_t>> distinct;
      for (const auto& p : pts) distinct.insert(projection(law, p));
      if (distinct.size() >= law.terms.size() + check_points) return false;
      if (read_at_input(law, distinct)) at_inputs.push_back(law);
      if (unchecked.empty())
        unchecked = "under-determined: " + (space ? law.formula(*space) + ", a " : std::string("a ")) +
                    std::to_string(law.terms.size()) + "-term law, fits only " + std::to_string(distinct.size()) +
                    " distinct input points, none left to check it; add an input size";
      return true;
    });
    // Comparing with such a law (avoid): unchecked laws compete with it as much as checked ones.
    if (avoid && avoid_unchecked) fits = all_fits;
    // No checked law, but one read at the inputs' values: taken if every law of as many terms
    // that reproduces the values (checked or not) gives the same value at every probe.
    if (fits.empty() && !at_inputs.empty() && !avoid) {
      for (const auto& probe : probes) {
        const auto [s0, l0] = exact_sum(at_inputs[0], probe);
        for (const auto& other : all_fits) {
          const auto [s1, l1] = exact_sum(other, probe);
          if (s0 * l1 != s1 * l0) {
            if (why) *why = ambiguity(at_inputs[0], other, probe, space);
            return std::nullopt;
          }
        }
      }
      if (read_at_inputs) *read_at_inputs = true;
      return at_inputs[0];
    }
    // Looking for another law than `avoid`: only those with a term it does not have.
    if (avoid)
      std::erase_if(fits, [&](const LinearLaw& law) {
        return std::all_of(law.terms.begin(), law.terms.end(), [&](std::size_t t) {
          return std::find(avoid->terms.begin(), avoid->terms.end(), t) != avoid->terms.end();
        });
      });
    if (fits.empty()) {
      if (!unchecked.empty() && !avoid) {
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
          if (why) *why = ambiguity(fits[0], fits[f], probe, space);
          return std::nullopt;
        }
      }
    }
    // Stage loops see few iterations (k = 0, 1 where the loops run once and twice): a law with
    // one term more, even one the points cannot check, may reproduce every value as well and
    // differ at the target (2^k and k + 1 are 1, 2 at k = 0, 1; 4 and 3 at k = 2). The inputs
    // do not decide then.
    if (space && space->with_stage && size < 3 && !avoid)
      if (auto rival = one_term_more(usable, pts, vals, probes, fits[0], size + 1)) {
        if (why) *why = ambiguity(fits[0], rival->first, rival->second, space);
        return std::nullopt;
      }
    // Single calls: a law of one term more that the points check as well (one distinct point
    // beyond its terms, integer coefficients) may reproduce every value and differ at the
    // target. Where it differs at a residue class of the rank that no input shows, the inputs
    // do not decide (refused, naming both); elsewhere both are read off what the inputs show,
    // and the fewest-term law is taken and the rival named (a warning).
    const bool single_call = space && rival && !space->with_stage && !space->with_index && check_points > 0 && !avoid;
    // A law of a residue class no input shows is not checked there: another law of as many
    // terms (they agree at the target) or none.
    if (single_call) {
      auto unseen_at = [&](const LinearLaw& law) -> std::optional<std::pair<std::size_t, std::int64_t>> {
        for (const auto& probe : probes)
          if (const auto t = unseen_residue({law, probe}, pts, *space)) return std::make_pair(*t, probe[*t]);
        return std::nullopt;
      };
      const auto seen = std::find_if(fits.begin(), fits.end(), [&](const LinearLaw& l) { return !unseen_at(l); });
      if (seen == fits.end()) {
        const auto t = unseen_at(fits[0]);
        if (why)
          *why = "under-determined: " + fits[0].formula(*space) + " uses " + space->names[t->first] + ", which is " +
                 std::to_string(t->second) + " at the target and at no input; add an input size";
        return std::nullopt;
      }
      std::iter_swap(fits.begin(), seen);
    }
    if (single_call && size < max_terms) {
      const auto unseen = [&](const Rival& r) { return unseen_residue(r, pts, *space).has_value(); };
      if (auto other = one_term_more(usable, pts, vals, probes, fits[0], size + 1, check_points, unseen)) {
        if (const auto t = unseen_residue(*other, pts, *space)) {
          std::set<std::int64_t> seen;
          for (const auto& p : pts) seen.insert(p[*t]);
          std::string classes;
          for (auto v : seen) classes += (classes.empty() ? "" : ", ") + std::to_string(v);
          if (why)
            *why = ambiguity(fits[0], other->first, other->second, space,
                             space->names[*t] + " is " + std::to_string(other->second[*t]) +
                                 " at the target and only " + classes + " at the inputs");
          return std::nullopt;
        }
        *rival = fits[0].formula(*space) + " chosen over " + other->first.formula(*space) +
                 " (a law of one term more, checked as well; both reproduce every input value, they differ at "
                 "the target)";
      }
    }
    return fits[0];
  }
  if (why) *why = "no linear law with at most " + std::to_string(max_terms) + " terms fits";
  return std::nullopt;
}

}  // namespace

std::optional<LinearLaw> solve_division_law(const std::vector<std::vector<std::int64_t>>& points,
                                            const std::vector<std::int64_t>& values,
                                            const std::vector<std::vector<std::int64_t>>& probes,
                                            const std::vector<std::size_t>& divisors, std::string* why,
                                            const FeatureSpace* space, std::int64_t scale) {
  auto fail = [&](const std::string& text) {
    if (why) *why = text;
    return std::nullopt;
  };
  if (points.empty() || points.size() != values.size())
    throw UsageError("solve_division_law needs as many values as points (at least one)");
  if (std::any_of(values.begin(), values.end(), [](std::int64_t v) { return v < 0; }))
    return fail("no division law: negative values");
  if (std::all_of(values.begin(), values.end(), [&](std::int64_t v) { return v == values[0]; }))
    return fail("no division law: constant values");
  std::int64_t g = 0;
  for (auto v : values) g = std::gcd(g, v);
  std::vector<std::int64_t> scales;  // every divisor of g, or the given scale
  if (scale > 0) {
    if (g % scale == 0) scales.push_back(scale);
  } else {
    for (std::int64_t a = 1; a * a <= g; ++a)
      if (g % a == 0) {
        scales.push_back(a);
        if (a != g / a) scales.push_back(g / a);
      }
  }
  std::sort(scales.rbegin(), scales.rend());
  std::vector<LinearLaw> fits;
  std::vector<std::int64_t> upper;  // N's largest consistent value, per fit
  for (auto d : divisors) {
    std::set<std::int64_t> distinct;
    bool usable = true;
    for (const auto& p : points) {
      usable = usable && d < p.size() && p[d] > 0;
      if (usable) distinct.insert(p[d]);
    }
    // Checked: a known scale leaves one unknown (N), so 2 divisor values check it once; any
    // scale leaves two, so 3 are needed.
    if (!usable || distinct.size() < (scale > 0 ? 2u : 3u)) continue;
    for (auto a : scales) {
      // N with floor(N / d_i) = v_i / a for every point: d_i * w_i <= N <= d_i * (w_i + 1) - 1.
      i128 lo = 0, hi = std::numeric_limits<std::int64_t>::max();
      bool exact = true;
      for (std::size_t i = 0; i < points.size(); ++i) {
        const i128 w = values[i] / a, di = points[i][d];
        lo = std::max(lo, w * di);
        hi = std::min(hi, (w + 1) * di - 1);
      }
      if (lo > hi) continue;
      for (std::size_t i = 0; i < points.size(); ++i) exact = exact && lo % points[i][d] == 0;
      LinearLaw law;
      law.div_scale = a;
      law.div_numerator = static_cast<std::int64_t>(lo);
      law.div_feature = d;
      law.div_exact = exact;
      fits.push_back(law);
      upper.push_back(static_cast<std::int64_t>(hi));
    }
  }
  if (fits.empty()) return fail("no linear law and no division law a*floor(N/d) fits");
  // Every consistent (divisor, scale, N) must give the same value at every probe.
  for (const auto& probe : probes) {
    const auto ref = fits[0].eval(probe);
    for (std::size_t f = 0; f < fits.size(); ++f) {
      LinearLaw high = fits[f];
      high.div_numerator = upper[f];
      for (const LinearLaw* l : {&fits[f], &high})
        if (l->eval(probe) != ref) {
          if (!space) return fail("ambiguous: several division laws fit but differ at the target");
          return fail("ambiguous: " + fits[0].formula(*space) + " and " + l->formula(*space) +
                      " both reproduce every input value but give " + std::to_string(ref) + " and " +
                      std::to_string(l->eval(probe)) + " at the target; add an input size that separates them");
        }
    }
  }
  // Prefer exact division at every input, then the largest scale (the element size).
  std::stable_sort(fits.begin(), fits.end(), [](const LinearLaw& a, const LinearLaw& b) {
    if (a.div_exact != b.div_exact) return a.div_exact;
    return a.div_scale > b.div_scale;
  });
  const auto rival = division_remainder_rival(fits.front(), points, probes, space);
  if (!rival.empty()) return fail(rival);
  return fits.front();
}

std::string division_remainder_rival(const LinearLaw& law, const std::vector<std::vector<std::int64_t>>& points,
                                     const std::vector<std::vector<std::int64_t>>& probes, const FeatureSpace* space) {
  if (law.div_scale == 0 || (space && !space->remainder_rivals)) return "";
  const auto n = law.div_numerator;
  const auto d = law.div_feature;
  // The rank's coordinate along the divisor, 0 .. d-1: x along X, y along Y, z along Z, the
  // rank along P. Other divisors (P^2, a plane X*Y of a 3D grid) have none.
  const std::string dname = space ? divisor_name(*space, d) : "d";
  std::optional<std::size_t> coord;
  std::string coord_name;
  if (space) {
    coord_name = dname == "P"   ? (space->ndims == 1 ? "x" : "r")
                 : dname == "X" ? "x"
                 : dname == "Y" ? "y"
                 : dname == "Z" ? "z"
                                : "";
    if (!coord_name.empty()) coord = space->index(coord_name);
  }
  auto remainder = [&](const std::vector<std::int64_t>& p) { return n - p[d] * floor_div(n, p[d]); };
  struct Rival {
    std::string text;                                             // the extra element's condition
    std::function<bool(const std::vector<std::int64_t>&)> extra;  // one element more here
  };
  const std::string nd = std::to_string(n) + "/" + dname, nmod = std::to_string(n) + "%" + dname;
  std::vector<Rival> rivals{{"ceil(" + nd + ")", [&](const auto& p) { return remainder(p) != 0; }}};
  if (coord) {
    const auto c = *coord;
    rivals.push_back({"(floor(" + nd + ") + (" + coord_name + " < " + nmod + "))",
                      [&, c](const auto& p) { return p[c] < remainder(p); }});
    rivals.push_back({"(floor(" + nd + ") + (" + coord_name + " >= " + dname + " - " + nmod + "))",
                      [&, c](const auto& p) { return remainder(p) != 0 && p[c] >= p[d] - remainder(p); }});
  }
  for (const auto& rival : rivals) {
    if (std::any_of(points.begin(), points.end(), [&](const auto& p) { return p[d] <= 0 || rival.extra(p); }))
      continue;  // the inputs show how the program splits a remainder, and it is not this way
    for (const auto& probe : probes) {
      if (probe[d] <= 0 || !rival.extra(probe)) continue;
      const auto v = law.eval(probe);
      std::string text = rival.text;
      if (law.div_scale != 1) text = std::to_string(law.div_scale) + "*" + text;
      if (law.div_offset != 0)
        text += (law.div_offset < 0 ? " - " : " + ") +
                std::to_string(law.div_offset < 0 ? -law.div_offset : law.div_offset);
      return "ambiguous: " + (space ? law.formula(*space) : std::string("a division law")) + " and " + text +
             " both reproduce every input value but give " + std::to_string(v) + " and " +
             std::to_string(v + law.div_scale) + " at the target (no input splits " + std::to_string(n) +
             " unevenly where this rival would differ, the target does: how the program splits the remainder is not "
             "in the inputs); add an input size whose " +
             dname + " does not divide " + std::to_string(n);
    }
  }
  return "";
}

namespace {

/// The fallback law searches (solve_inverse_law, solve_modular_law): value = a sum over a
/// subset of candidate columns (column 0 the constant), at most `max_cols` besides the
/// constant, each column given by its values at the points and a one-term law for it
/// (`unit[c]`: coefficient 1, evaluated at the probes through LinearLaw::eval). The fewest-term
/// law the points check (a distinct point beyond its terms) is taken if every other checked law
/// agrees with it at every probe. `integer`: integer coefficients only.
std::optional<LinearLaw> solve_columns(const std::vector<std::vector<std::int64_t>>& col_points,
                                       const std::vector<LinearLaw>& unit, const std::vector<std::int64_t>& values,
                                       const std::vector<std::vector<std::int64_t>>& probes, const FeatureSpace& space,
                                       std::size_t max_cols, bool integer, std::string* why) {
  auto fail = [&](const std::string& text) {
    if (why) *why = text;
    return std::nullopt;
  };
  const std::size_t ncols = col_points.size(), npts = values.size();
  // Columns that are equal at every point and probe are one candidate.
  std::vector<std::size_t> keep;
  {
    std::set<std::vector<std::int64_t>> seen;
    for (std::size_t c = 0; c < ncols; ++c) {
      auto key = col_points[c];
      for (const auto& probe : probes) {
        try {
          key.push_back(unit[c].eval(probe));
        } catch (const Error&) {
          key.push_back(kUndefinedFeature);
        }
      }
      if (seen.insert(std::move(key)).second) keep.push_back(c);
    }
  }
  // Distinct rows (points) over the kept columns.
  std::map<std::vector<std::int64_t>, std::int64_t> rows;
  for (std::size_t i = 0; i < npts; ++i) {
    std::vector<std::int64_t> row;
    for (auto c : keep) row.push_back(col_points[c][i]);
    const auto [it, fresh] = rows.emplace(std::move(row), values[i]);
    if (!fresh && it->second != values[i]) return fail("no law: equal features give different values");
  }
  std::vector<std::vector<std::int64_t>> pts;
  std::vector<std::int64_t> vals;
  for (const auto& [row, v] : rows) {
    pts.push_back(row);
    vals.push_back(v);
  }
  auto to_law = [&](const LinearLaw& fit) {
    LinearLaw law;
    for (std::size_t t = 0; t < fit.terms.size(); ++t) {
      const auto& u = unit[keep[fit.terms[t]]];
      if (!u.mods.empty()) {
        law.mod_x = u.mod_x;
        law.mod_y = u.mod_y;
        law.mod_k = u.mod_k;
        law.mod_size = u.mod_size;
      }
      for (std::size_t k = 0; k < u.terms.size(); ++k) {
        law.terms.push_back(u.terms[k]);
        law.num.push_back(fit.num[t]);
        law.den.push_back(fit.den[t]);
      }
      for (auto m : u.mods) {
        const auto g = std::gcd(fit.num[t] < 0 ? -fit.num[t] : fit.num[t], fit.den[t]);
        m.num = fit.num[t] / g;
        m.den = fit.den[t] / g;
        law.mods.push_back(m);
      }
      for (std::size_t k = 0; k < u.inv_feature.size(); ++k) {
        const i128 n = static_cast<i128>(fit.num[t]) * u.inv_num[k];
        const i128 d = static_cast<i128>(fit.den[t]) * u.inv_den[k];
        i128 a = n < 0 ? -n : n, b = d;
        while (b != 0) {
          const i128 r = a % b;
          a = b;
          b = r;
        }
        law.inv_feature.push_back(u.inv_feature[k]);
        law.inv_num.push_back(static_cast<std::int64_t>(n / a));
        law.inv_den.push_back(static_cast<std::int64_t>(d / a));
      }
    }
    return law;
  };
  // The constant column (0) is kept first if present.
  const bool has_const = !keep.empty() && keep[0] == 0;
  const std::size_t first_var = has_const ? 1 : 0, nk = keep.size();
  struct Fit {
    LinearLaw law;
    std::size_t size;
  };
  std::vector<Fit> checked;
  std::string unchecked;
  std::vector<std::size_t> subset;
  // A sample of the rows first: most subsets fail, and a sample that determines the
  // coefficients and is not fitted rules a subset out (every row must be).
  std::vector<std::vector<std::int64_t>> sample_pts;
  std::vector<std::int64_t> sample_vals;
  if (pts.size() > 32)
    for (std::size_t i = 0; i < pts.size(); i += pts.size() / 16) {
      sample_pts.push_back(pts[i]);
      sample_vals.push_back(vals[i]);
    }
  auto try_subset = [&] {
    if (!sample_pts.empty()) {
      bool undetermined = false;
      if (!fit_subset(subset, sample_pts, sample_vals, &undetermined) && !undetermined) return;
    }
    auto fit = fit_subset(subset, pts, vals);
    if (!fit) return;
    if (integer && std::any_of(fit->den.begin(), fit->den.end(), [](std::int64_t d) { return d != 1; })) return;
    std::set<std::vector<std::int64_t>> distinct;
    for (const auto& p : pts) {
      std::vector<std::int64_t> projected;
      for (auto t : subset) projected.push_back(p[t]);
      distinct.insert(std::move(projected));
    }
    auto law = to_law(*fit);
    if (distinct.size() < subset.size() + 1) {
      if (unchecked.empty())
        unchecked = "under-determined: " + law.formula(space) + ", a " + std::to_string(subset.size()) +
                    "-term law, fits only " + std::to_string(distinct.size()) +
                    " distinct input points, none left to check it; add an input size";
      return;
    }
    checked.push_back({std::move(law), subset.size()});
  };
  for (std::size_t a = first_var; a < nk; ++a) {
    for (const bool with_const : {false, true}) {
      if (with_const && !has_const) continue;
      subset.clear();
      if (with_const) subset.push_back(0);
      subset.push_back(a);
      try_subset();
      if (max_cols < 2) continue;
      for (std::size_t b = a + 1; b < nk; ++b) {
        subset.resize(with_const ? 2 : 1);
        subset.push_back(b);
        try_subset();
      }
    }
  }
  if (checked.empty()) return fail(unchecked.empty() ? "no law" : unchecked);
  const auto best =
      std::min_element(checked.begin(), checked.end(), [](const Fit& x, const Fit& y) { return x.size < y.size; });
  for (const auto& other : checked)
    for (const auto& probe : probes) {
      std::int64_t v0 = 0, v1 = 0;
      bool e0 = false, e1 = false;
      try {
        v0 = best->law.eval(probe);
      } catch (const Error&) {
        e0 = true;
      }
      try {
        v1 = other.law.eval(probe);
      } catch (const Error&) {
        e1 = true;
      }
      if (e0 != e1 || v0 != v1)
        return fail("ambiguous: " + best->law.formula(space) + " and " + other.law.formula(space) +
                    " both reproduce every input value but give " + (e0 ? "no integer" : std::to_string(v0)) + " and " +
                    (e1 ? "no integer" : std::to_string(v1)) + " at the target; add an input size that separates them");
    }
  return best->law;
}

LinearLaw constant_law() {
  LinearLaw l;
  l.terms = {0};
  l.num = {1};
  l.den = {1};
  return l;
}

/// Why a term that divides by the size `name` cannot be used where the target's size `target` does not
/// divide `lcm`, the least common multiple of the inputs' sizes.
std::string uneven_split_reason(const std::string& name, std::int64_t target, std::int64_t lcm) {
  return "the target's " + name + " = " + std::to_string(target) + " does not divide " + std::to_string(lcm) +
         ", the least common multiple of the inputs' " + name +
         ", so whether the program's size splits evenly there is not in the inputs";
}

/// A law of the cell coordinates (x, y, the stage k) modulo the grid side X, without terms yet.
LinearLaw cell_coordinate_law(std::size_t fx, std::optional<std::size_t> fy, std::size_t fk, std::size_t fs) {
  LinearLaw base;
  base.mod_x = fx;
  base.mod_y = fy ? *fy : SIZE_MAX;
  base.mod_k = fk;
  base.mod_size = fs;
  return base;
}

/// Every coordinate expression (a x + b y + c k + d) with a, b, c in {-1, 0, 1} (b = 0 without a
/// y), not all 0, and d in {-2, ..., 2}: the cell coordinates of a multi-partition sweep.
std::vector<LinearLaw::ModTerm> cell_coordinate_terms(bool with_y) {
  std::vector<LinearLaw::ModTerm> out;
  const std::int64_t bmax = with_y ? 1 : 0;
  for (std::int64_t a = -1; a <= 1; ++a)
    for (std::int64_t b = -bmax; b <= bmax; ++b)
      for (std::int64_t c = -1; c <= 1; ++c)
        for (std::int64_t d = -2; d <= 2; ++d)
          if (a != 0 || b != 0 || c != 0) {
            LinearLaw::ModTerm m;
            m.a = a;
            m.b = b;
            m.c = c;
            m.d = d;
            out.push_back(m);
          }
  return out;
}

}  // namespace

std::optional<LinearLaw> solve_inverse_law(const std::vector<std::vector<std::int64_t>>& points,
                                           const std::vector<std::int64_t>& values,
                                           const std::vector<std::vector<std::int64_t>>& probes,
                                           const FeatureSpace& space, std::string* why) {
  if (points.empty() || points.size() != values.size())
    throw UsageError("solve_inverse_law needs as many values as points (at least one)");
  std::vector<std::string> names{"X"};
  if (space.ndims >= 2) names.push_back("Y");
  if (space.ndims >= 3) names.push_back("Z");
  if (space.ndims == 2) names.push_back("X*Y");
  if (space.ndims == 3) names.push_back("X*Y*Z");
  names.push_back("P^2");
  std::vector<std::vector<std::int64_t>> cols{std::vector<std::int64_t>(points.size(), 1)};
  std::vector<LinearLaw> unit{constant_law()};
  std::vector<std::vector<std::int64_t>> blocked_cols{cols[0]};
  std::vector<LinearLaw> blocked_unit{unit[0]};
  std::string blocked_why;
  for (const auto& name : names) {
    const auto f = space.find(name);
    if (!f) continue;
    std::int64_t lcm = 1;
    std::set<std::int64_t> distinct;
    bool usable = true;
    for (const auto& p : points) {
      const auto d = p[*f];
      if (d <= 0 || d == kUndefinedFeature || lcm > (std::int64_t{1} << 40) / d) {
        usable = false;
        break;
      }
      lcm = std::lcm(lcm, d);
      distinct.insert(d);
    }
    if (!usable || distinct.size() < 2) continue;
    std::vector<std::int64_t> col;
    for (const auto& p : points) col.push_back(lcm / p[*f]);
    LinearLaw u;
    u.inv_feature = {*f};
    u.inv_num = {lcm};
    u.inv_den = {1};
    std::optional<std::int64_t> bad;
    for (const auto& probe : probes)
      if (probe[*f] <= 0 || lcm % probe[*f] != 0) bad = probe[*f];
    if (bad) {
      if (blocked_why.empty()) blocked_why = uneven_split_reason(divisor_name(space, *f), *bad, lcm);
      blocked_cols.push_back(std::move(col));
      blocked_unit.push_back(std::move(u));
      continue;
    }
    blocked_cols.push_back(col);
    blocked_unit.push_back(u);
    cols.push_back(std::move(col));
    unit.push_back(std::move(u));
  }
  std::string w;
  std::optional<LinearLaw> law;
  if (cols.size() > 1) law = solve_columns(cols, unit, values, probes, space, 2, false, &w);
  if (!law && !blocked_why.empty() && w.rfind("ambiguous", 0) != 0) {
    // Would a term the target's sizes block explain the inputs? Then say so.
    std::string wb;
    if (auto hidden = solve_columns(blocked_cols, blocked_unit, values, {}, space, 2, false, &wb)) {
      if (why)
        *why = "ambiguous: " + hidden->formula(space) + " reproduces every input value, but " + blocked_why +
               " (a remainder would change the value); add an input size that the target's divides";
      return std::nullopt;
    }
  }
  if (!law && why) *why = w.empty() ? "no law of inverse sizes" : w;
  return law;
}

std::optional<LinearLaw> solve_modular_law(const std::vector<std::vector<std::int64_t>>& points,
                                           const std::vector<std::int64_t>& values,
                                           const std::vector<std::vector<std::int64_t>>& probes,
                                           const FeatureSpace& space, std::string* why) {
  if (points.empty() || points.size() != values.size())
    throw UsageError("solve_modular_law needs as many values as points (at least one)");
  const auto fx = space.find("x"), fy = space.find("y"), fk = space.find("k"), fs = space.find("X");
  if (!space.with_stage || !fx || !fk || !fs) {
    if (why) *why = "no modular law outside stage loops";
    return std::nullopt;
  }
  std::vector<std::vector<std::int64_t>> cols{std::vector<std::int64_t>(points.size(), 1)};
  std::vector<LinearLaw> unit{constant_law()};
  const LinearLaw base = cell_coordinate_law(*fx, fy, *fk, *fs);
  for (auto m : cell_coordinate_terms(fy.has_value()))
    for (const bool times : {false, true}) {
      m.times_size = times;
      LinearLaw u = base;
      u.mods = {m};
      std::vector<std::int64_t> col;
      col.reserve(points.size());
      for (const auto& p : points) col.push_back(u.mod_value(m, p));
      cols.push_back(std::move(col));
      unit.push_back(std::move(u));
    }
  std::string w;
  auto law = solve_columns(cols, unit, values, probes, space, 2, true, &w);
  if (!law && why) *why = w == "no law" ? "no modular law of the cell coordinates" : w;
  return law;
}

std::optional<LinearLaw> solve_extent_law(const std::vector<std::vector<std::int64_t>>& points,
                                          const std::vector<std::int64_t>& values,
                                          const std::vector<std::vector<std::int64_t>>& probes,
                                          const FeatureSpace& space, std::string* why) {
  auto fail = [&](const std::string& text) {
    if (why) *why = text;
    return std::nullopt;
  };
  const auto fx = space.find("x"), fy = space.find("y"), fk = space.find("k"), fs = space.find("X");
  if (!space.with_stage || !fx || !fk || !fs || points.empty()) return fail("no cell-extent law outside stage loops");
  std::int64_t lcm = 1;
  for (const auto& p : points) {
    const auto s = p[*fs];
    if (s <= 0 || lcm > (std::int64_t{1} << 20) / s) return fail("no cell-extent law");
    lcm = std::lcm(lcm, s);
  }
  std::optional<std::int64_t> blocked;
  for (const auto& probe : probes)
    if (probe[*fs] <= 0 || lcm % probe[*fs] != 0) blocked = probe[*fs];
  const LinearLaw base = cell_coordinate_law(*fx, fy, *fk, *fs);
  const std::vector<LinearLaw::ModTerm> exprs = cell_coordinate_terms(fy.has_value());
  // ends(m) per expression and point; expressions equal at every point are one candidate
  // (they are compared at the probes below through the laws they give).
  std::vector<std::vector<std::int64_t>> ends(exprs.size());
  for (std::size_t e = 0; e < exprs.size(); ++e)
    for (const auto& p : points) {
      const auto v = base.mod_value(exprs[e], p), s = p[*fs];
      ends[e].push_back(static_cast<std::int64_t>(v == 0) + static_cast<std::int64_t>(v == s - 1));
    }
  std::vector<LinearLaw> fits;
  // A sample of the points first (as in solve_columns): most pairs fail on it.
  std::vector<std::size_t> sample;
  if (points.size() > 48)
    for (std::size_t p = 0; p < points.size(); p += points.size() / 24) sample.push_back(p);
  auto row_of = [&](std::size_t i, std::size_t j, std::size_t p) {
    const auto q = lcm / points[p][*fs];
    return std::vector<std::int64_t>{q * q, (ends[i][p] + ends[j][p]) * q, ends[i][p] * ends[j][p]};
  };
  for (std::size_t i = 0; i < exprs.size(); ++i)
    for (std::size_t j = i; j < exprs.size(); ++j) {
      if (!sample.empty()) {
        std::vector<std::vector<std::int64_t>> sp;
        std::vector<std::int64_t> sv;
        for (auto p : sample) {
          sp.push_back(row_of(i, j, p));
          sv.push_back(values[p]);
        }
        bool undetermined = false;
        if (!fit_subset({0, 1, 2}, sp, sv, &undetermined) && !undetermined) continue;
      }
      std::map<std::vector<std::int64_t>, std::int64_t> rows;
      bool consistent = true;
      for (std::size_t p = 0; p < points.size() && consistent; ++p) {
        const auto [it, fresh] = rows.emplace(row_of(i, j, p), values[p]);
        consistent = fresh || it->second == values[p];
      }
      if (!consistent || rows.size() < 4) continue;
      std::vector<std::vector<std::int64_t>> pts;
      std::vector<std::int64_t> vals;
      for (const auto& [row, v] : rows) {
        pts.push_back(row);
        vals.push_back(v);
      }
      const auto fit = fit_subset({0, 1, 2}, pts, vals);
      if (!fit || fit->den[2] != 1) continue;
      // v = u1*q^2 + u2*(e1+e2)*q + u3*e1*e2 with q = L/X: a = u3, G = -u2*L/a, u1 = a*G^2/L^2.
      const i128 a = fit->num[2];
      const i128 g_num = -static_cast<i128>(fit->num[1]) * lcm, g_den = static_cast<i128>(fit->den[1]) * a;
      if (g_den == 0 || g_num % g_den != 0) continue;
      const i128 g = g_num / g_den;
      if (g <= 0 || g > (i128{1} << 40)) continue;
      if (static_cast<i128>(fit->num[0]) * lcm * lcm != a * g * g * fit->den[0]) continue;
      LinearLaw law = base;
      law.ext_scale = static_cast<std::int64_t>(a);
      law.ext_size = static_cast<std::int64_t>(g);
      law.mods = {exprs[i], exprs[j]};
      bool exact = true;
      for (std::size_t p = 0; p < points.size() && exact; ++p) {
        const auto [sum, l] = exact_sum(law, points[p]);
        exact = sum == static_cast<i128>(values[p]) * l;
      }
      if (exact) fits.push_back(std::move(law));
    }
  if (fits.empty()) return fail("no cell-extent law");
  if (blocked)
    return fail("ambiguous: " + fits[0].formula(space) + " reproduces every input value, but " +
                uneven_split_reason("X", *blocked, lcm));
  for (const auto& other : fits)
    for (const auto& probe : probes) {
      const auto [s0, l0] = exact_sum(fits[0], probe);
      const auto [s1, l1] = exact_sum(other, probe);
      if (s0 * l1 != s1 * l0)
        return fail("ambiguous: " + fits[0].formula(space) + " and " + other.formula(space) +
                    " both reproduce every input value but differ at the target; add an input size that "
                    "separates them");
    }
  return fits[0];
}

}  // namespace scalatrace
