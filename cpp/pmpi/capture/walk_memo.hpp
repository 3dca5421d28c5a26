#pragma once
// Remembered stack walks: the call-site id of a call whose stack is one seen before, found
// without walking the stack (libunwind's walk is the largest cost of a recorded call).
//
// A libunwind walk is a deterministic function of where it starts and of the stack memory it
// reads: frame i+1's return address is read from the slot just below frame i's CFA, the CFA
// comes from frame i's unwind rule (stack pointer + constant, frame pointer + constant, or, for
// functions that realign the stack, a slot just below the frame pointer), and the frame
// pointer of an outer frame is restored from the slot where an inner frame saved it. So when a
// call comes from the same return address with the same stack pointer (the CFA of the wrapper)
// on the same thread as a remembered walk, and every slot that walk read still holds the
// value it read then, libunwind would walk the same frames again: the remembered call-site id
// is the call's. A remembered walk keeps, per frame, its stack pointer and return address, the
// slot its frame pointer came from, and (for frames whose frame pointer points into their own
// frame, i.e. may define the CFA) the frame pointer and the realignment slot.
//
// Walks are remembered at the second call with the same (return address, stack pointer,
// thread) and call site (walked_before), after one libunwind cursor walk, started at the
// wrapper's caller, that is checked against unw_backtrace's result;
// walks that do not fit the model (signal frames, unusual save locations, very deep stacks)
// are remembered as "always walk". Assumption (true of GCC, Clang and gfortran output and of
// glibc): unwind rules use the stack pointer, the frame pointer and slots addressed by them;
// rules built on other registers are not checked (none are known in user code on x86-64).
#include <array>
#include <cstdint>
#include <vector>

#include "capture/callsite_capture.hpp"

namespace scalatrace::pmpi {

/// Where a wrapper was called from: read from the wrapper's frame (the collector is built with
/// frame pointers): return address, the caller's stack pointer (the wrapper's CFA), the
/// caller's frame pointer (saved by the wrapper's prologue) and the calling thread.
struct CallerKey {
  std::uintptr_t ra = 0, cfa = 0, rbp = 0;
  std::uint32_t thread = 0;
  static CallerKey of(const void* wrapper_frame);
  std::uint64_t hash() const;
  bool same_place(const CallerKey& o) const { return ra == o.ra && cfa == o.cfa && thread == o.thread; }
};

/// One frame of a remembered walk, outward from the caller of the wrapper.
struct MemoFrame {
  std::uintptr_t sp = 0;        ///< stack pointer of the frame (its return address at sp - 8)
  std::uintptr_t ip = 0;        ///< return address into the frame
  std::uintptr_t rbp_slot = 0;  ///< slot its frame pointer was restored from (0: unchanged)
  std::uintptr_t rbp = 0;       ///< frame pointer, checked if check_rbp
  std::uintptr_t next_sp = 0;   ///< stack pointer of the next outer frame (realignment check)
  bool check_rbp = false;       ///< frame pointer points into this frame: may define the CFA
  bool check_drap = false;      ///< the slot below the frame pointer holds the CFA (realigned)
};

/// A libunwind walk described for remembering (made outside the recorder's lock).
struct WalkDescription {
  CallerKey key;
  std::vector<MemoFrame> frames;
  std::uintptr_t end_slot = 0;  ///< slot whose 0 ended the walk (0: ended by the unwind rules)
  bool usable = false;          ///< false: the walk does not fit the model; always walk at this place
};

/// Walks the stack with libunwind's cursor from the wrapper's caller outward and describes it,
/// checked against `walked` (capture_stack's result for the same call).
WalkDescription describe_walk(const CallerKey& caller, const RawStack& walked);

/// Per rank, used under the recorder's lock. Bounded: a two-way set-associative table of
/// places (return address, stack pointer, thread), each with up to kVariants remembered walks
/// (one per outer stack seen there, most recently used first).
class WalkMemo {
 public:
  enum class Lookup { Hit, Learn, Walk };
  /// Hit: `site` is the call's; Learn: walk, describe and remember(); Walk: just walk.
  Lookup find(const CallerKey& key, std::uint32_t& site);
  void remember(WalkDescription&& walk, std::uint32_t site);
  /// True if a walk from this place already gave this call site (then records it): only such
  /// outer stacks are worth describing (a Fortran binding's place sees every call site of
  /// its MPI function, some only once).
  bool walked_before(const CallerKey& key, std::uint32_t site);
  /// Off (SCALATRACE_STACK_MEMO=0): find() always says Walk.
  void set_enabled(bool on) { enabled_ = on; }

  static constexpr std::size_t kVariants = 8;
  /// A place whose outer stacks change more often than this is walked at every call: after
  /// kLearnLimit walks were learned there, unless it had kHitsPerLearn hits per walk learned.
  static constexpr std::uint32_t kLearnLimit = 16, kHitsPerLearn = 4;

 private:
  struct Variant {
    std::vector<MemoFrame> frames;
    std::uintptr_t end_slot = 0;
    std::uint32_t site = 0;
    bool matches(const CallerKey& caller) const;
  };
  struct Place {
    CallerKey key;
    bool valid = false;
    bool walk_only = false;  ///< walks here do not fit the model, or change too often
    std::uint32_t learned = 0, hits = 0;
    std::vector<Variant> variants;
  };
  Place* place_of(const CallerKey& key);
  bool enabled_ = true;
  static constexpr std::size_t kSets = 512;
  std::array<std::array<Place, 2>, kSets> sets_{};
  std::array<CallerKey, kSets> seen_once_{};  ///< places seen once (learned at the second)
  static constexpr std::size_t kWalked = 4096;
  std::array<std::uint64_t, kWalked> walked_{};  ///< (place, call site) of recent walks, hashed
};

/// A small serial number of the calling thread (1, 2, ...), for CallerKey.
std::uint32_t thread_serial();

}  // namespace scalatrace::pmpi
