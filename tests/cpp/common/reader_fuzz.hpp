#pragma once
// Mutation fuzzing of both readers (.sct traces and .straw raw streams), shared by the
// reader_fuzz test (a few thousand mutants in `make test`) and benchmarks/fuzz_reader (100,000+).
//
// Each mutant is a valid file changed by random byte overwrites, insertions, deletions,
// truncation, high bytes written into text, or sign flips of varints; for 7 in 8 mutants the
// checksum (and the .sct length field) is repaired so the parser's own checks are exercised.
// One raw mutant in three is instead a well-formed stream with an extreme rank count (header
// patched: up to 2^63-1 ranks) or extreme timings (durations and computes up to 2^64-1).
// A mutant is then loaded as a user would (decode + whole-structure validation) and, if it
// loads, used as a user would: every rank's events walked, summary, communication matrix,
// every text field checked for UTF-8. Outcomes:
//   rejected  - FormatError at load (the clean answer to a bad file)
//   accepted  - loaded, and every use afterwards worked (the mutation kept the file valid)
//   refused   - loaded; an analysis refused with UsageError (e.g. its memory limit)
//   late      - loaded, but a use afterwards failed (FormatError later than load)
//   memory    - std::bad_alloc at load or later (over the driver's memory limit)
//   other     - any other exception, at load or later
// A crash or sanitizer report ends the process (the test then fails).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "scalatrace/analysis/analysis.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/format/raw.hpp"
#include "scalatrace/format/trace_validation.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/synthetic/synthetic.hpp"
#include "synthetic_support.hpp"

namespace scalatrace::fuzz {

enum class Outcome { Rejected, Accepted, Refused, Late, Other, Memory };
inline constexpr int kOutcomes = 6;
inline const char* outcome_name(Outcome o) {
  static const char* const names[] = {
      "rejected at load (FormatError)", "accepted, all uses work", "accepted, analysis refused (UsageError)",
      "accepted, later use failed",     "other exception",         "out of memory (std::bad_alloc)"};
  return names[static_cast<int>(o)];
}

struct Tally {
  std::uint64_t count[2][kOutcomes] = {};  ///< [0] .sct, [1] .straw
  std::vector<std::string> examples;       ///< messages of late / other outcomes (first 20)
  std::uint64_t semantic = 0;              ///< raw mutants with extreme rank counts or timings
  double max_seconds = 0;                  ///< slowest input (load and every use)
  std::uint64_t over_10s = 0;              ///< inputs that took more than 10 s
  void add(int format, Outcome o, const std::string& message) {
    ++count[format][static_cast<int>(o)];
    if ((o == Outcome::Late || o == Outcome::Other || o == Outcome::Memory) && examples.size() < 20)
      examples.push_back(std::string(format == 0 ? ".sct: " : ".straw: ") + message);
  }
  std::uint64_t total(int format) const {
    std::uint64_t n = 0;
    for (auto c : count[format]) n += c;
    return n;
  }
  std::uint64_t unclean() const {
    return count[0][3] + count[0][4] + count[0][5] + count[1][3] + count[1][4] + count[1][5];
  }
};

struct Corpus {
  std::vector<std::string> traces;        ///< encoded .sct files
  std::vector<std::string> raws;          ///< .straw files
  std::vector<RankRecording> recordings;  ///< what the .straw files hold
  std::filesystem::path scratch;          ///< where raw mutants are written (kept until the run ends)
};

using test_support::synthetic_merged;

/// Valid inputs: merged traces of four patterns (with text in metadata and call sites) and raw
/// streams of two patterns. `scratch`: a directory for writing the raw streams once.
inline Corpus make_corpus(const std::filesystem::path& scratch) {
  Corpus c;
  const std::pair<SyntheticPattern, std::int64_t> patterns[] = {{SyntheticPattern::Stencil2D, 9},
                                                                {SyntheticPattern::Collectives, 4},
                                                                {SyntheticPattern::RowColumn, 6},
                                                                {SyntheticPattern::Irregular, 5}};
  for (auto [pattern, n] : patterns) {
    Trace t = synthetic_merged(pattern, n, 4);
    t.metadata["program"] = "/home/user/app \xc3\xa9t\xc3\xa9";  // UTF-8 text
    t.metadata["command_line"] = "./app -n 4";
    if (!t.sites.sites.empty()) {
      t.sites.sites[0].symbol = "exchange_halo";
      t.sites.sites[0].location = "app.c:42";
    }
    c.traces.push_back(encode_trace(t));
  }
  std::filesystem::create_directories(scratch);
  for (auto pattern : {SyntheticPattern::Stencil1D, SyntheticPattern::Irregular}) {
    SyntheticSpec spec;
    spec.pattern = pattern;
    spec.nranks = 4;
    spec.timesteps = 3;
    RankRecording rec = record_synthetic(spec, 1);
    rec.names = {"MPI_Comm_rank"};
    rec.metadata["program"] = "/home/user/app";
    if (!rec.sites.sites.empty()) rec.sites.sites[0].symbol = "main";
    const std::string path = (scratch / "rank-1.straw").string();
    RawWriter w;
    w.open(path, rec.rank, rec.nranks);
    for (const Event& e : rec.events) w.append(e);
    w.close(rec.metadata, rec.sites, rec.comms, rec.names);
    c.raws.push_back(read_regular_file(path, "raw stream"));
    std::filesystem::remove(path);
    c.recordings.push_back(std::move(rec));
  }
  c.scratch = scratch;
  return c;
}

inline std::uint32_t crc32(std::string_view data) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}

inline void put_le(std::string& s, std::size_t at, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

/// Makes the checksum (and for .sct the payload length) match the mutated bytes again.
inline void repair(std::string& s, bool trace) {
  if (trace) {
    if (s.size() < 28) return;
    put_le(s, 16, s.size() - 28, 8);
    put_le(s, 24, crc32(std::string_view(s).substr(28)), 4);
    return;
  }
  if (s.size() < 8) return;
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i + 8 < s.size(); ++i) {
    h ^= static_cast<unsigned char>(s[i]);
    h *= 0x100000001b3ull;
  }
  put_le(s, s.size() - 8, h, 8);
}

/// An extreme 64-bit value: all ones, a power of two, just below one, or random.
inline std::uint64_t extreme(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0:
      return ~std::uint64_t{0};
    case 1:
      return std::uint64_t{1} << (rng() % 64);
    case 2:
      return (std::uint64_t{1} << (1 + rng() % 63)) - 1;
    default:
      return rng();
  }
}

/// A well-formed raw stream of `rec` with extreme timings (some events' durations and computes)
/// or an extreme rank count (the header's nranks patched, checksum repaired): the mutations the
/// byte-level ones almost never produce.
inline std::string mutate_semantic(const RankRecording& input, const std::filesystem::path& scratch,
                                   std::mt19937_64& rng) {
  RankRecording rec = input;
  const bool ranks = rng() % 2 == 0;
  if (!ranks && !rec.events.empty())
    for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k) {
      Event& e = rec.events[rng() % rec.events.size()];
      (rng() % 2 ? e.duration_ns : e.compute_ns) = extreme(rng);
    }
  const std::string path = (scratch / "mutant.straw").string();
  RawWriter w;
  w.open(path, rec.rank, rec.nranks);
  for (const Event& e : rec.events) w.append(e);
  w.close(rec.metadata, rec.sites, rec.comms, rec.names);
  std::string s = read_regular_file(path, "raw stream");
  if (!ranks) return s;
  // Header: magic[8] version:u32le rank:svar nranks:svar; the rank count is replaced.
  std::size_t at = 12;
  while (at < s.size() && (static_cast<unsigned char>(s[at]) & 0x80)) ++at;
  const std::size_t begin = at + 1;
  std::size_t end = begin;
  while (end < s.size() && (static_cast<unsigned char>(s[end]) & 0x80)) ++end;
  const std::uint64_t nranks = rng() % 2 ? extreme(rng) >> 1 : static_cast<std::uint64_t>(rec.nranks) + 1 + rng() % 4;
  std::string varint;
  for (std::uint64_t z = nranks << 1;; z >>= 7) {  // zigzag of a non-negative value
    if (z < 0x80) {
      varint += static_cast<char>(z);
      break;
    }
    varint += static_cast<char>((z & 0x7F) | 0x80);
  }
  s.replace(begin, end + 1 - begin, varint);
  repair(s, false);
  return s;
}

inline std::string mutate(const std::string& input, bool trace, std::mt19937_64& rng) {
  std::string s = input;
  const std::size_t header = trace ? 28 : 12;  // keep magic + version most of the time
  auto pos = [&] { return header + rng() % (s.size() - header); };
  const int kind = static_cast<int>(rng() % 6);
  switch (kind) {
    case 0:  // overwrite 1-4 bytes
      for (int f = 0, n = 1 + static_cast<int>(rng() % 4); f < n; ++f) s[pos()] = static_cast<char>(rng() & 0xFF);
      break;
    case 1:  // insert 1-8 random bytes
      s.insert(pos(), std::string(1 + rng() % 8, static_cast<char>(rng() & 0xFF)));
      break;
    case 2: {  // delete 1-16 bytes
      const std::size_t at = pos();
      s.erase(at, std::min<std::size_t>(1 + rng() % 16, s.size() - at));
      break;
    }
    case 3:  // truncate
      s.resize(pos());
      break;
    case 4: {  // a high byte inside text: the first printable run after a random point
      std::size_t at = pos();
      while (at < s.size() && !(s[at] >= 'a' && s[at] <= 'z')) ++at;
      if (at < s.size()) s[at] = static_cast<char>(0x80 | (rng() & 0x7F));
      break;
    }
    default: {  // varint sign flip / large values: set the low bit or a continuation bit
      const std::size_t at = pos();
      s[at] = static_cast<char>(s[at] ^ static_cast<char>(rng() % 2 ? 0x01 : 0x80));
      break;
    }
  }
  if (rng() % 8 != 0) repair(s, trace);
  return s;
}

inline bool all_text_valid(const std::map<std::string, std::string>& metadata, const CallSiteTable& sites,
                           const std::vector<std::string>& names) {
  for (const auto& [k, v] : metadata)
    if (!is_valid_utf8(k) || !is_valid_utf8(v)) return false;
  for (const auto& m : sites.modules)
    if (!is_valid_utf8(m)) return false;
  for (const auto& s : sites.sites)
    if (!is_valid_utf8(s.symbol) || !is_valid_utf8(s.location)) return false;
  for (const auto& n : names)
    if (!is_valid_utf8(n)) return false;
  return true;
}

constexpr std::uint64_t kAnalysisMemory = std::uint64_t{64} << 20;

/// Loads with `load` and uses what it loaded with `use`, and says how that went (see the
/// outcomes above). A use that finds something the reader should have refused throws
/// FormatError (a late rejection).
template <class Load, class Use>
Outcome classify(Load&& load, Use&& use, std::string& message) {
  decltype(load()) loaded;
  try {
    loaded = load();
  } catch (const FormatError& e) {
    message = e.what();
    return Outcome::Rejected;
  } catch (const std::bad_alloc& e) {
    message = std::string("at load: ") + e.what();
    return Outcome::Memory;
  } catch (const std::exception& e) {
    message = std::string("at load: ") + e.what();
    return Outcome::Other;
  }
  try {
    use(loaded);
    return Outcome::Accepted;
  } catch (const UsageError& e) {
    message = e.what();
    return Outcome::Refused;
  } catch (const FormatError& e) {
    message = e.what();
    return Outcome::Late;
  } catch (const std::bad_alloc& e) {
    message = e.what();
    return Outcome::Memory;
  } catch (const std::exception& e) {
    message = e.what();
    return Outcome::Other;
  }
}

inline void require_valid_text(const std::map<std::string, std::string>& metadata, const CallSiteTable& sites,
                               const std::vector<std::string>& names) {
  if (!all_text_valid(metadata, sites, names)) throw FormatError("text that is not UTF-8 passed the reader");
}

/// Every use a user makes of a loaded trace.
inline void use_trace(const Trace& t) {
  require_valid_text(t.metadata, t.sites, t.names);
  for (std::int64_t r = 0; r < t.nranks && r < 32; ++r) {
    Cursor c(t, r, TimingMode::Mean);
    for (int n = 0; n < 20000 && c.next(); ++n) {
    }
  }
  summary(t);
  comm_matrix_sparse(t, Metric::Bytes, CommKind::All, kAnalysisMemory);
}

inline Outcome try_trace(const std::string& bytes, std::string& message) {
  return classify([&] { return decode_trace_checked(bytes); }, use_trace, message);
}

inline Outcome try_raw(const std::string& bytes, std::string& message) {
  const auto use = [](const RankRecording& rec) {
    require_valid_text(rec.metadata, rec.sites, rec.names);
    for (const Event& e : rec.events) validate_event_values(e);
    Trace t = compress_recording(rec);
    Cursor c(t, rec.rank, TimingMode::None);
    while (c.next()) {
    }
    comm_matrix_of_recordings({rec}, Metric::Bytes, CommKind::All);
    summary(t);
    decode_trace_checked(encode_trace(t));  // what the reader accepts, the writer can save
  };
  return classify([&] { return decode_raw(bytes, "mutant.straw"); }, use, message);
}

/// Runs `mutants` mutants, alternating .sct and .straw inputs; `before_each` (optional) is
/// called with each input's number before it is tried (the driver arms its time limit there).
inline Tally run(const Corpus& corpus, std::uint64_t mutants, std::uint64_t seed,
                 const std::function<void(std::uint64_t)>& before_each = {}) {
  std::mt19937_64 rng(seed);
  Tally tally;
  std::string message;
  for (std::uint64_t i = 0; i < mutants; ++i) {
    const bool trace = i % 2 == 0;
    const auto& pool = trace ? corpus.traces : corpus.raws;
    const std::size_t which = (i / 2) % pool.size();
    const bool semantic = !trace && rng() % 3 == 0;
    const std::string bytes =
        semantic ? mutate_semantic(corpus.recordings[which], corpus.scratch, rng) : mutate(pool[which], trace, rng);
    tally.semantic += semantic;
    if (before_each) before_each(i);
    const auto t0 = std::chrono::steady_clock::now();
    message.clear();
    const Outcome o = trace ? try_trace(bytes, message) : try_raw(bytes, message);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tally.max_seconds = std::max(tally.max_seconds, seconds);
    tally.over_10s += seconds > 10;
    tally.add(trace ? 0 : 1, o, message);
  }
  return tally;
}

}  // namespace scalatrace::fuzz
