// The .sct format's shared codec: section names, the section-naming reader, text, scaled numbers
// and two-byte bin counts (sct_codec.hpp). docs/format.md is the specification.
#include "format/sct_codec.hpp"

#include <array>
#include <bit>
#include <limits>
#include <unordered_map>
#include <vector>

#include "format/scale_basis.hpp"
#include "scalatrace/format/trace_validation.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace::sct {

const char* section_name(std::uint64_t id) {
  switch (id) {
    case kMetadata:
      return "metadata";
    case kCallSites:
      return "call-site table";
    case kNames:
      return "names table";
    case kRankLists:
      return "ranklist table";
    case kValueSeqs:
      return "value-sequence table";
    case kArraySeqs:
      return "array-sequence table";
    case kValueElastics:
      return "elastic-value table";
    case kArrayElastics:
      return "elastic-array table";
    case kComms:
      return "communicator table";
    case kNodes:
      return "node tree";
    case kRankClusters:
      return "rank clusters";
    default:
      return "unknown section";
  }
}

std::string SectionReader::describe(const std::string& what) const {
  return what + " in " + section_ + " at byte " + std::to_string(offset());
}

void put_text(wire::Writer& w, std::string_view s) { w.str(to_valid_utf8(s)); }

std::string get_text(wire::Reader& r, const char* what) {
  const std::size_t n = r.count(what);
  if (!is_valid_utf8(r.peek(n))) r.fail(std::string(what) + " is not valid UTF-8");
  return std::string(r.take(n));
}

void put_call_site_table(wire::Writer& w, const CallSiteTable& sites) {
  w.uv(sites.modules.size());
  for (const auto& m : sites.modules) put_text(w, m);
  w.uv(sites.sites.size());
  for (const auto& site : sites.sites) {
    w.uv(site.frames.size());
    for (const auto& f : site.frames) {
      w.uv(f.module);
      w.uv(f.offset);
    }
    put_text(w, site.symbol);
    put_text(w, site.location);
  }
}

void put_call_site_tree(wire::Writer& w, const CallSiteTable& sites) {
  w.uv(sites.modules.size());
  for (const auto& m : sites.modules) put_text(w, m);
  // The tree: each (parent, frame) once, in order of first use, parents before children.
  struct Key {
    std::uint64_t parent;
    Frame frame;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<std::uint64_t>{}(k.parent * 0x9E3779B97F4A7C15ull ^ k.frame.offset * 31 ^ k.frame.module);
    }
  };
  std::unordered_map<Key, std::uint64_t, KeyHash> ids;  // node id + 1 (0 = the root)
  // Version 11: the nodes' parent distances, then their modules, then their offsets, each
  // offset as the difference from the previous node's offset in the same module (the call
  // sites of one routine lie close together).
  wire::Writer backs, modules, offsets;
  std::vector<std::int64_t> previous_offset(sites.modules.size(), 0);
  std::vector<std::uint64_t> innermost;
  innermost.reserve(sites.sites.size());
  for (const auto& site : sites.sites) {
    std::uint64_t parent = 0;
    for (auto f = site.frames.rbegin(); f != site.frames.rend(); ++f) {
      const auto [it, inserted] = ids.try_emplace(Key{parent, *f}, ids.size() + 1);
      if (inserted) {
        backs.uv(it->second - parent);
        modules.uv(f->module);
        const auto offset = static_cast<std::int64_t>(f->offset);
        offsets.sv(static_cast<std::int64_t>(static_cast<std::uint64_t>(offset) -
                                             static_cast<std::uint64_t>(previous_offset.at(f->module))));
        previous_offset[f->module] = offset;
      }
      parent = it->second;
    }
    innermost.push_back(parent);
  }
  w.uv(ids.size());
  w.raw(backs.data());
  w.raw(modules.data());
  w.raw(offsets.data());
  // Sites: the innermost node, then the symbol as a reference to the distinct symbols so far
  // (0: a new one, written out; k: the k-th), then the location.
  w.uv(sites.sites.size());
  std::unordered_map<std::string, std::uint64_t> symbols;
  for (std::size_t i = 0; i < sites.sites.size(); ++i) {
    w.uv(innermost[i]);  // 0: a site without frames (the root itself)
    const std::string symbol = to_valid_utf8(sites.sites[i].symbol);
    const auto [it, inserted] = symbols.try_emplace(symbol, symbols.size() + 1);
    if (inserted) {
      w.uv(0);
      put_text(w, symbol);
    } else {
      w.uv(it->second);
    }
    put_text(w, sites.sites[i].location);
  }
}

std::uint32_t time_code(std::uint64_t ns) {
  constexpr std::uint32_t M = kTimeMantissaBits;
  if (ns < (std::uint64_t{2} << M)) return static_cast<std::uint32_t>(ns);
  auto e = static_cast<std::uint32_t>(std::bit_width(ns) - 1);  // M + 1 .. 63
  // The leading M + 1 bits, rounded half up: 2^M .. 2^(M+1).
  std::uint64_t mantissa = (ns >> (e - M)) + ((ns >> (e - M - 1)) & 1);
  if (mantissa == (std::uint64_t{2} << M)) {
    mantissa >>= 1;
    ++e;
  }
  if (e > 63) {
    e = 63;
    mantissa = (std::uint64_t{2} << M) - 1;
  }
  return (2u << M) + (e - M - 1) * (1u << M) + static_cast<std::uint32_t>(mantissa - (std::uint64_t{1} << M));
}

std::uint64_t time_from_code(std::uint32_t code) {
  constexpr std::uint32_t M = kTimeMantissaBits;
  if (code < (2u << M)) return code;
  const std::uint32_t e = M + 1 + (code - (2u << M)) / (1u << M);
  const std::uint64_t mantissa = (std::uint64_t{1} << M) + (code - (2u << M)) % (1u << M);
  return mantissa << (e - M);
}

void put_scaled(wire::Writer& w, std::int64_t v, std::span<const std::int64_t> basis) {
  if (v >= kScaledLimit || v <= -kScaledLimit)
    throw Error("encode_trace: rank number " + std::to_string(v) + " out of range");
  std::array<std::int64_t, scale_basis::kMaxBasis> coeffs{};
  const std::int64_t rest = scale_basis::decompose(v, basis, coeffs);
  std::uint64_t codes = 0;
  for (std::size_t i = 0; i < basis.size(); ++i) {
    const std::uint64_t code = coeffs[i] == 0 ? 0 : coeffs[i] == 1 ? 1 : coeffs[i] == -1 ? 2 : 3;
    codes |= code << (2 * i);
  }
  const std::uint64_t zigzag = wire::zigzag(rest);
  if (codes == 0) {
    w.uv(zigzag << 1);
    return;
  }
  // With a coefficient, the remainder is at most half a basis number (below 2^31), so the
  // shifts stay far inside 64 bits.
  w.uv((((zigzag << (2 * basis.size())) | codes) << 1) | 1);
  for (std::size_t i = 0; i < basis.size(); ++i)
    if (((codes >> (2 * i)) & 3) == 3) w.sv(coeffs[i]);
}

std::int64_t get_scaled(wire::Reader& r, std::span<const std::int64_t> basis) {
  const std::uint64_t header = r.uv();
  if ((header & 1) == 0) return wire::unzigzag(header >> 1);
  const std::size_t k = basis.size();
  const std::uint64_t codes = (header >> 1) & ((std::uint64_t{1} << (2 * k)) - 1);
  if (codes == 0) r.fail("malformed scaled number (flagged, without coefficients)");
  __int128 v = wire::unzigzag(header >> (1 + 2 * k));
  for (std::size_t i = 0; i < k; ++i) {
    const std::uint64_t code = (codes >> (2 * i)) & 3;
    if (code == 0) continue;
    std::int64_t c = code == 1 ? 1 : -1;
    if (code == 3) {
      c = r.sv();
      if (c >= -1 && c <= 1) r.fail("malformed scaled number (coefficient " + std::to_string(c) + " written out)");
    }
    if (basis[i] < 2) r.fail("malformed scaled number (a multiple of basis number " + std::to_string(basis[i]) + ")");
    v += static_cast<__int128>(c) * basis[i];
  }
  if (v > std::numeric_limits<std::int64_t>::max() || v < std::numeric_limits<std::int64_t>::min())
    r.fail("scaled number out of range");
  return static_cast<std::int64_t>(v);
}

std::uint16_t bin_count_code(std::uint64_t count) {
  if (count < 0x8000) return static_cast<std::uint16_t>(count);
  std::uint32_t e = 0;
  while (e < 32 && (count >> (e + 5)) >= 2048) ++e;
  // Round the mantissa to nearest (half up, without an addition that could overflow); a carry
  // to 2048 moves to the next exponent.
  std::uint64_t m = (count >> (e + 5)) + ((count >> (e + 4)) & 1);
  if (m == 2048) {
    m = 1024;
    ++e;
  }
  if (e > 31) return 0xFFFF;
  return static_cast<std::uint16_t>(0x8000 | (e << 10) | (m - 1024));
}

std::uint64_t bin_count_from_code(std::uint16_t code) {
  if (code < 0x8000) return code;
  const std::uint32_t e = (code >> 10) & 0x1F;
  return (std::uint64_t{1024} + (code & 0x3FF)) << (e + 5);
}

}  // namespace scalatrace::sct
