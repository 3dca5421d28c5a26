#pragma once
// Call-site capture: walks the stack with libunwind, drops the innermost frames of the collector
// and of the MPI library with its language bindings (library_frames.hpp) and
// turns the return addresses into an interned call-site id. The fast path (a call site seen
// before) is one stack walk plus one hash lookup keyed by the raw return addresses; only the
// first visit of a call site maps addresses to (module, offset), folds recursion and interns.
#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "scalatrace/model/callsite.hpp"

namespace scalatrace::pmpi {

inline constexpr int kMaxStackDepth = 64;

/// Return addresses of one call, innermost first, starting at the user's code (the collector's
/// and the MPI library's innermost frames removed).
struct RawStack {
  void* pcs[kMaxStackDepth];
  int depth = 0;
};

/// Walks the calling thread's stack (no locks, no allocation).
void capture_stack(RawStack& out, int max_depth);

/// Maps addresses to loaded modules (executable and shared objects, via dl_iterate_phdr).
class ModuleMap {
 public:
  struct Module {
    std::uintptr_t lo = 0, hi = 0;  ///< address range of the module's loaded segments
    std::uintptr_t base = 0;        ///< load bias: offset = address - base
    std::string path;
  };
  /// The module holding pc, or nullptr; rescans the loaded objects once per unknown address.
  const Module* find(std::uintptr_t pc);

 private:
  void scan();
  const Module* lookup(std::uintptr_t pc) const;
  std::vector<Module> modules_;  // sorted by lo
};

/// Per rank, used under the recorder's lock.
class CallSiteCapture {
 public:
  /// Interned id of the call site for these return addresses. Recursion is folded over the
  /// whole captured stack first, then the signature is cut to `depth` frames, so every level
  /// of a recursion deeper than `depth` still gets the same signature.
  std::uint32_t site_id(const RawStack& stack, CallSiteTable& table, int depth);
  /// Fills CallSite::symbol (innermost frame with a name) for every site of the table.
  void resolve_symbols(CallSiteTable& table);

 private:
  struct CacheEntry {
    std::uint64_t hash;
    std::vector<void*> pcs;
    std::uint32_t site;
    bool matches(std::uint64_t h, const RawStack& s) const;
  };
  ModuleMap modules_;
  // Raw return-address tuple -> site id: a direct-mapped first level (the hot call sites)
  // over a hash index of every tuple seen. Entries live in a deque: stable addresses.
  std::deque<CacheEntry> entries_;
  std::unordered_multimap<std::uint64_t, const CacheEntry*> index_;
  std::array<const CacheEntry*, 256> direct_{};
  std::unordered_map<std::uint32_t, std::uintptr_t> module_base_;  // table module id -> base
};

}  // namespace scalatrace::pmpi
