#pragma once
// Internal to the core: the scale basis of a trace (format version 5, docs/format.md "Scaled
// numbers"). Rank numbers that grow with the run (a grid's row length, a plane's size, the rank
// count) are written as small coefficients of a few numbers stored once, so that the same
// program traced at 64 and at 1,048,576 ranks writes the same bytes.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "scalatrace/model/trace.hpp"

namespace scalatrace::scale_basis {

/// At most this many basis numbers: the rank count and up to three grid strides.
inline constexpr std::size_t kMaxBasis = 4;

/// The basis of `trace`, largest first: its rank count, then up to three strides of the grid its
/// ranklists walk. Candidates are the outer strides of descriptors whose innermost stride is 1,
/// where the ranks inside the stride span at least a third of it (a 2D grid's row, a 3D grid's
/// row and plane), and that divide the rank count; taken most frequent first (then largest), each
/// kept if it divides or is divided by every stride kept before, at least 3 times. Any basis
/// encodes any number; this one makes a grid's numbers small coefficients.
std::vector<std::int64_t> find_basis(const Trace& trace);

/// Coefficients of `value` over `basis` (largest first): `coeffs[i]` multiplies basis[i] and
/// the result is their sum plus the returned remainder. Greedy from the largest: a coefficient is
/// the quotient rounded to nearest and is kept only if it makes the remainder strictly smaller
/// in magnitude (so small numbers stay plain and a tie stays with the remainder). Basis numbers
/// below 2 get coefficient 0. |value| must be below 2^62.
std::int64_t decompose(std::int64_t value, std::span<const std::int64_t> basis, std::span<std::int64_t> coeffs);

/// The basis a ranklist count is written against, given the stride of its dimension (or of its
/// group). Where the stride is a grid stride (1, or a basis number but the first): the number of
/// such steps in the whole run (rank count / stride) and across the grid in that direction (the
/// next larger basis number / stride), one number if they are equal; otherwise the whole basis.
/// The span points into `scratch` or `basis`.
std::span<const std::int64_t> count_basis(std::int64_t stride, std::span<const std::int64_t> basis,
                                          std::array<std::int64_t, 2>& scratch);

}  // namespace scalatrace::scale_basis
