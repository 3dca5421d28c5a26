#include "capture/walk_memo.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "capture/library_frames.hpp"

// SCALATRACE_HAVE_LIBUNWIND_H: CMake found <libunwind.h> (option SCALATRACE_WITH_LIBUNWIND).
#if defined(__x86_64__) && defined(SCALATRACE_HAVE_LIBUNWIND_H)
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#define SCALATRACE_HAVE_UNWIND_CURSOR 1
#endif

namespace scalatrace::pmpi {
namespace {

std::uintptr_t load_word(std::uintptr_t address) {
  std::uintptr_t v;
  std::memcpy(&v, reinterpret_cast<const void*>(address), sizeof v);
  return v;
}

#ifdef SCALATRACE_HAVE_UNWIND_CURSOR
// libunwind's cursor API, opened like unw_backtrace in callsite_capture.cpp (RTLD_LOCAL, so
// that it never interposes the program's unwinder). Null if libunwind is missing.
struct CursorApi {
  int (*getcontext)(unw_context_t*) = nullptr;
  int (*init_local)(unw_cursor_t*, unw_context_t*) = nullptr;
  int (*step)(unw_cursor_t*) = nullptr;
  int (*get_reg)(unw_cursor_t*, unw_regnum_t, unw_word_t*) = nullptr;
  int (*get_save_loc)(unw_cursor_t*, int, unw_save_loc_t*) = nullptr;
  bool ok() const { return getcontext && init_local && step && get_reg && get_save_loc; }
};

const CursorApi& cursor_api() {
  static const CursorApi api = [] {
    CursorApi a;
    for (const char* name : {"libunwind.so.8", "libunwind.so"}) {
      void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (!lib) continue;
      a.getcontext = reinterpret_cast<decltype(a.getcontext)>(dlsym(lib, "_Ux86_64_getcontext"));
      a.init_local = reinterpret_cast<decltype(a.init_local)>(dlsym(lib, "_ULx86_64_init_local"));
      a.step = reinterpret_cast<decltype(a.step)>(dlsym(lib, "_ULx86_64_step"));
      a.get_reg = reinterpret_cast<decltype(a.get_reg)>(dlsym(lib, "_ULx86_64_get_reg"));
      a.get_save_loc = reinterpret_cast<decltype(a.get_save_loc)>(dlsym(lib, "_ULx86_64_get_save_loc"));
      if (a.ok()) break;
      a = CursorApi{};
    }
    return a;
  }();
  return api;
}

struct CursorFrame {
  std::uintptr_t ip, sp, rbp;
  bool ip_in_memory;
  std::uintptr_t ip_slot;
  bool rbp_in_memory;
  std::uintptr_t rbp_slot;
};

/// Longest walk described: deeper stacks are walked every time (unw_backtrace's limit applies).
constexpr std::size_t kMaxCursorFrames = 48;
#endif

}  // namespace

std::uint32_t thread_serial() {
  static std::atomic<std::uint32_t> next{1};
  static thread_local std::uint32_t serial __attribute__((tls_model("initial-exec"))) = 0;
  if (serial == 0) serial = next.fetch_add(1, std::memory_order_relaxed);
  return serial;
}

CallerKey CallerKey::of(const void* wrapper_frame) {
  const auto fp = reinterpret_cast<std::uintptr_t>(wrapper_frame);
  CallerKey k;
  k.rbp = load_word(fp);
  k.ra = load_word(fp + 8);
  k.cfa = fp + 16;
  k.thread = thread_serial();
  return k;
}

std::uint64_t CallerKey::hash() const {
  std::uint64_t h = (ra * 0x9E3779B97F4A7C15ull) ^ (cfa >> 3) ^ (std::uint64_t{thread} << 32);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 29);
}

bool WalkMemo::Variant::matches(const CallerKey& caller) const {
  std::uintptr_t rbp = caller.rbp;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const MemoFrame& f = frames[i];
    if (i > 0) {
      if (load_word(f.sp - 8) != f.ip) return false;
      if (f.rbp_slot) rbp = load_word(f.rbp_slot);
    }
    if (f.check_rbp) {
      if (rbp != f.rbp) return false;
      if (f.check_drap && load_word(f.rbp - 8) != f.next_sp) return false;
    }
  }
  return end_slot == 0 || load_word(end_slot) == 0;
}

WalkMemo::Place* WalkMemo::place_of(const CallerKey& key) {
  for (Place& p : sets_[key.hash() % kSets])
    if (p.valid && p.key.same_place(key)) return &p;
  return nullptr;
}

WalkMemo::Lookup WalkMemo::find(const CallerKey& key, std::uint32_t& site) {
  if (!enabled_) return Lookup::Walk;
  Place* p = place_of(key);
  if (!p) {
    CallerKey& seen = seen_once_[key.hash() % kSets];
    if (seen.same_place(key)) return Lookup::Learn;
    seen = key;
    return Lookup::Walk;
  }
  if (p->walk_only) return Lookup::Walk;
  for (std::size_t i = 0; i < p->variants.size(); ++i) {
    if (!p->variants[i].matches(key)) continue;
    ++p->hits;
    if (i > 0) std::swap(p->variants[i], p->variants[i - 1]);  // hot variants move forward
    site = p->variants[i > 0 ? i - 1 : 0].site;
    return Lookup::Hit;
  }
  if (p->learned >= kLearnLimit && p->hits < kHitsPerLearn * p->learned) {
    p->walk_only = true;
    p->variants.clear();
    return Lookup::Walk;
  }
  return Lookup::Learn;
}

void WalkMemo::remember(WalkDescription&& walk, std::uint32_t site) {
  Place* p = place_of(walk.key);
  if (!p) {
    // A new place goes into the first way; the place there moves to the second.
    auto& set = sets_[walk.key.hash() % kSets];
    std::swap(set[0], set[1]);
    p = &set[0];
    *p = Place{};
    p->key = walk.key;
    p->valid = true;
  }
  if (!walk.usable) {
    p->walk_only = true;
    p->variants.clear();
    return;
  }
  ++p->learned;
  Variant v;
  v.frames = std::move(walk.frames);
  v.end_slot = walk.end_slot;
  v.site = site;
  if (p->variants.size() == kVariants) p->variants.pop_back();
  p->variants.insert(p->variants.begin(), std::move(v));
}

bool WalkMemo::walked_before(const CallerKey& key, std::uint32_t site) {
  std::uint64_t h = key.hash() ^ ((std::uint64_t{site} + 1) * 0x9E3779B97F4A7C15ull);
  h |= 1;  // never the empty slot's 0
  std::uint64_t& slot = walked_[(h >> 20) % kWalked];
  if (slot == h) return true;
  slot = h;
  return false;
}

WalkDescription describe_walk(const CallerKey& caller, const RawStack& walked) {
  WalkDescription out;
  out.key = caller;
#ifdef SCALATRACE_HAVE_UNWIND_CURSOR
  const CursorApi& api = cursor_api();
  if (!api.ok()) return out;
  // The walk starts at the wrapper's caller, from a context holding its return address,
  // stack pointer and frame pointer (the wrapper's CFA and its saved frame pointer): libunwind
  // arrives at the same frame after stepping through the collector's own frames, since unwind
  // rules use only the stack and frame pointers (walk_memo.hpp). Steps cost about 1 us each
  // (the CFI interpreter, and two system calls: libunwind's global cache lock blocks signals),
  // so starting there saves a third of a description (docs/collector.md, "Call sites without a
  // walk").
  unw_context_t context;
  unw_cursor_t cursor;
  if (api.getcontext(&context) != 0) return out;
  context.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(out.key.ra);
  context.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(out.key.cfa);
  context.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(out.key.rbp);
  if (api.init_local(&cursor, &context) != 0) return out;
  std::vector<CursorFrame> all;
  int step = 0;
  do {
    CursorFrame f{};
    unw_word_t ip = 0, sp = 0, rbp = 0;
    unw_save_loc_t ip_loc{}, rbp_loc{};
    if (api.get_reg(&cursor, UNW_REG_IP, &ip) != 0 || api.get_reg(&cursor, UNW_REG_SP, &sp) != 0 ||
        api.get_reg(&cursor, UNW_X86_64_RBP, &rbp) != 0 || api.get_save_loc(&cursor, UNW_REG_IP, &ip_loc) != 0 ||
        api.get_save_loc(&cursor, UNW_X86_64_RBP, &rbp_loc) != 0)
      return out;
    f.ip = ip;
    f.sp = sp;
    f.rbp = rbp;
    f.ip_in_memory = ip_loc.type == UNW_SLT_MEMORY;
    f.ip_slot = ip_loc.u.addr;
    f.rbp_in_memory = rbp_loc.type == UNW_SLT_MEMORY;
    f.rbp_slot = rbp_loc.u.addr;
    all.push_back(f);
    if (all.size() > kMaxCursorFrames) return out;  // too deep: always walk
    step = api.step(&cursor);
  } while (step > 0);
  if (step < 0) return out;  // the walk ended in an error: nothing to rely on
  // The end: an undefined return address (the outermost frame's unwind rule) or a 0 read
  // from a slot, which must then still hold 0.
  unw_save_loc_t end_loc{};
  if (api.get_save_loc(&cursor, UNW_REG_IP, &end_loc) != 0) return out;
  if (end_loc.type == UNW_SLT_MEMORY) {
    if (end_loc.u.addr < out.key.cfa || load_word(end_loc.u.addr) != 0) return out;
    out.end_slot = end_loc.u.addr;
  } else if (end_loc.type != UNW_SLT_NONE) {
    return out;
  }

  // Frame 0 is the wrapper's caller.
  constexpr std::size_t first = 0;
  if (all.empty() || all[first].ip != out.key.ra || all[first].sp != out.key.cfa) return out;
  const LibraryFrames& library = LibraryFrames::get();
  // The same frames as unw_backtrace gave (capture_stack's skipping of library frames).
  std::size_t user = first;
  while (user < all.size() && library.skipped(all[user].ip)) ++user;
  if (static_cast<std::size_t>(walked.depth) != all.size() - user) return out;
  for (std::size_t i = user; i < all.size(); ++i)
    if (reinterpret_cast<std::uintptr_t>(walked.pcs[i - user]) != all[i].ip) return out;

  for (std::size_t i = first; i < all.size(); ++i) {
    const CursorFrame& f = all[i];
    MemoFrame m;
    m.sp = f.sp;
    m.ip = f.ip;
    if (i > first) {
      const CursorFrame& inner = all[i - 1];
      // A return address read from anywhere but just below the CFA: a signal frame or an
      // unusual unwinder path. Not modelled.
      if (!f.ip_in_memory || f.ip_slot != f.sp - 8 || load_word(f.ip_slot) != f.ip) return out;
      if (!f.rbp_in_memory) return out;
      if (f.rbp_slot == inner.rbp_slot) {
        if (f.rbp != inner.rbp) return out;  // "unchanged" must mean unchanged
      } else {
        // Restored from a slot in the user's stack (above the wrapper's CFA).
        if (f.rbp_slot < out.key.cfa || load_word(f.rbp_slot) != f.rbp) return out;
        m.rbp_slot = f.rbp_slot;
      }
    }
    if (i + 1 < all.size()) {
      m.next_sp = all[i + 1].sp;
      if (f.rbp >= f.sp && f.rbp < m.next_sp) {
        m.check_rbp = true;
        m.rbp = f.rbp;
        m.check_drap = f.rbp >= f.sp + 8 && load_word(f.rbp - 8) == m.next_sp;
      }
    } else {
      // The outermost frame: without unwind information libunwind ends at a 0 frame pointer.
      m.check_rbp = true;
      m.rbp = f.rbp;
    }
    out.frames.push_back(m);
  }
  out.usable = true;
#else
  (void)walked;
#endif
  return out;
}

}  // namespace scalatrace::pmpi
