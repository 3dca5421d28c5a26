#include "capture/callsite_capture.hpp"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>

#include "capture/elf_symbols.hpp"
#include "capture/library_frames.hpp"

namespace scalatrace::pmpi {
namespace {

std::uint64_t hash_pcs(void* const* pcs, int n) {
  std::uint64_t h = 0x84222325cbf29ce4ull ^ static_cast<std::uint64_t>(n);
  for (int i = 0; i < n; ++i) {
    h ^= reinterpret_cast<std::uintptr_t>(pcs[i]);
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h;
}

std::string executable_path() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("<executable>");
}

int collect_module(dl_phdr_info* info, std::size_t, void* data) {
  auto* out = static_cast<std::vector<ModuleMap::Module>*>(data);
  ModuleMap::Module m;
  m.lo = UINTPTR_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    m.lo = std::min<std::uintptr_t>(m.lo, info->dlpi_addr + ph.p_vaddr);
    m.hi = std::max<std::uintptr_t>(m.hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (m.hi == 0) return 0;
  m.base = info->dlpi_addr;
  m.path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : executable_path();
  out->push_back(std::move(m));
  return 0;
}

// libunwind's unw_backtrace (~100 ns per walk). libunwind is opened with RTLD_LOCAL instead of
// being linked: it exports _Unwind_* and `backtrace`, which must not interpose the traced
// program's C++ runtime or glibc. Falls back to glibc backtrace() (~2 us) if it is missing.
using BacktraceFn = int (*)(void**, int);

BacktraceFn backtrace_function() {
  static const BacktraceFn fn = [] {
    for (const char* name : {"libunwind.so.8", "libunwind.so"}) {
      if (void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
        if (void* sym = dlsym(lib, "unw_backtrace")) return reinterpret_cast<BacktraceFn>(sym);
      }
    }
    std::fprintf(stderr, "scalatrace: libunwind not found; using glibc backtrace() (slower)\n");
    return static_cast<BacktraceFn>(&::backtrace);
  }();
  return fn;
}

}  // namespace

void capture_stack(RawStack& out, int max_depth) {
  // Room for the collector's frames on top of the requested depth.
  void* pcs[kMaxStackDepth + 16];
  const int want = std::min(max_depth, kMaxStackDepth) + 16;
  const int n = backtrace_function()(pcs, want);
  // Innermost frames of the collector and of the MPI library (its Fortran / C++ bindings)
  // are not the user's call site.
  const LibraryFrames& library = LibraryFrames::get();
  int first = 0;
  while (first < n && library.skipped(reinterpret_cast<std::uintptr_t>(pcs[first]))) ++first;
  out.depth = std::min(n - first, std::min(max_depth, kMaxStackDepth));
  if (out.depth < 0) out.depth = 0;
  std::memcpy(out.pcs, pcs + first, sizeof(void*) * static_cast<std::size_t>(out.depth));
}

void ModuleMap::scan() {
  modules_.clear();
  dl_iterate_phdr(collect_module, &modules_);
  std::sort(modules_.begin(), modules_.end(), [](const Module& a, const Module& b) { return a.lo < b.lo; });
}

const ModuleMap::Module* ModuleMap::lookup(std::uintptr_t pc) const {
  auto it = std::upper_bound(modules_.begin(), modules_.end(), pc,
                             [](std::uintptr_t p, const Module& m) { return p < m.lo; });
  if (it == modules_.begin()) return nullptr;
  --it;
  return pc < it->hi ? &*it : nullptr;
}

const ModuleMap::Module* ModuleMap::find(std::uintptr_t pc) {
  if (const Module* m = lookup(pc)) return m;
  scan();  // a module loaded since the last scan (dlopen)
  return lookup(pc);
}

bool CallSiteCapture::CacheEntry::matches(std::uint64_t h, const RawStack& s) const {
  return hash == h && static_cast<int>(pcs.size()) == s.depth && std::equal(pcs.begin(), pcs.end(), s.pcs);
}

std::uint32_t CallSiteCapture::site_id(const RawStack& stack, CallSiteTable& table, int depth) {
  const std::uint64_t h = hash_pcs(stack.pcs, stack.depth);
  const CacheEntry*& slot = direct_[h & (direct_.size() - 1)];
  if (slot && slot->matches(h, stack)) return slot->site;
  auto [lo, hi] = index_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (it->second->matches(h, stack)) {
      slot = it->second;
      return slot->site;
    }

  std::vector<Frame> frames;
  frames.reserve(static_cast<std::size_t>(stack.depth));
  for (int i = 0; i < stack.depth; ++i) {
    const auto pc = reinterpret_cast<std::uintptr_t>(stack.pcs[i]);
    Frame f;
    if (const ModuleMap::Module* m = modules_.find(pc)) {
      f.module = table.intern_module(m->path);
      f.offset = pc - m->base;
      module_base_[f.module] = m->base;
    } else {
      f.module = table.intern_module("<unknown>");
      f.offset = pc;
    }
    frames.push_back(f);
  }
  fold_recursion(frames);
  if (frames.size() > static_cast<std::size_t>(depth)) frames.resize(static_cast<std::size_t>(depth));
  const std::uint32_t id = table.intern(frames);
  entries_.push_back(CacheEntry{h, std::vector<void*>(stack.pcs, stack.pcs + stack.depth), id});
  index_.emplace(h, &entries_.back());
  slot = &entries_.back();
  return id;
}

void CallSiteCapture::resolve_symbols(CallSiteTable& table) {
  ElfSymbols elf;
  for (CallSite& site : table.sites) {
    if (!site.symbol.empty()) continue;
    for (const Frame& f : site.frames) {
      auto base = module_base_.find(f.module);
      if (base == module_base_.end()) continue;
      // The return address points after the call; the call itself is one byte earlier.
      const std::uintptr_t pc = base->second + f.offset - 1;
      Dl_info info{};
      if (dladdr(reinterpret_cast<void*>(pc), &info) && info.dli_sname) {
        site.symbol = demangle(info.dli_sname);
      } else {
        site.symbol = elf.lookup(table.modules[f.module], f.offset - 1);
      }
      if (!site.symbol.empty()) break;
    }
  }
}

}  // namespace scalatrace::pmpi
