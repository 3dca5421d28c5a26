#include "scalatrace/model/callsite.hpp"

#include <algorithm>
#include <bit>

namespace scalatrace {

std::uint64_t signature_hash(const std::vector<Frame>& frames);

namespace {

std::uint64_t mix(std::uint64_t x) {
  // splitmix64 finaliser: spreads module/offset bits over the whole word.
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool same_block(const std::vector<Frame>& f, std::size_t a, std::size_t b, std::size_t len) {
  for (std::size_t k = 0; k < len; ++k)
    if (!(f[a + k] == f[b + k])) return false;
  return true;
}

// The public vectors may have been filled directly (e.g. by a reader): rebuild the lookup
// indexes whenever they are out of step with them.
void reindex(const std::vector<std::string>& modules, std::unordered_map<std::string, std::uint32_t>& module_ids,
             const std::vector<CallSite>& sites, std::unordered_multimap<std::uint64_t, std::uint32_t>& by_hash) {
  if (module_ids.size() != modules.size()) {
    module_ids.clear();
    for (std::size_t i = 0; i < modules.size(); ++i) module_ids.emplace(modules[i], static_cast<std::uint32_t>(i));
  }
  if (by_hash.size() != sites.size()) {
    by_hash.clear();
    for (std::size_t i = 0; i < sites.size(); ++i)
      by_hash.emplace(signature_hash(sites[i].frames), static_cast<std::uint32_t>(i));
  }
}

}  // namespace

std::uint64_t signature_hash(const std::vector<Frame>& frames) {
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const std::uint64_t frame = mix(frames[i].offset ^ (std::uint64_t{frames[i].module} << 48));
    h ^= std::rotl(frame, static_cast<int>(i % 64));
  }
  return h;
}

void fold_recursion(std::vector<Frame>& frames) {
  // Repeatedly drop the second copy of any block repeated back to back; scanning from the
  // innermost frame and the shortest block makes the result deterministic.
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::size_t i = 0; i < frames.size() && !changed; ++i) {
      for (std::size_t len = 1; i + 2 * len <= frames.size(); ++len) {
        if (same_block(frames, i, i + len, len)) {
          frames.erase(frames.begin() + static_cast<std::ptrdiff_t>(i + len),
                       frames.begin() + static_cast<std::ptrdiff_t>(i + 2 * len));
          changed = true;
          break;
        }
      }
    }
  }
}

std::size_t frame_distance(const std::vector<Frame>& a, const std::vector<Frame>& b) {
  const std::size_t common = std::min(a.size(), b.size());
  std::size_t d = std::max(a.size(), b.size()) - common;
  for (std::size_t i = 0; i < common; ++i)
    if (!(a[i] == b[i])) ++d;
  return d;
}

std::uint32_t CallSiteTable::intern_module(const std::string& path) {
  reindex(modules, module_ids_, sites, by_hash_);
  auto [it, added] = module_ids_.emplace(path, static_cast<std::uint32_t>(modules.size()));
  if (added) modules.push_back(path);
  return it->second;
}

std::uint32_t CallSiteTable::intern(const std::vector<Frame>& frames) {
  reindex(modules, module_ids_, sites, by_hash_);
  const std::uint64_t h = signature_hash(frames);
  auto [lo, hi] = by_hash_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (sites[it->second].frames == frames) return it->second;
  const auto id = static_cast<std::uint32_t>(sites.size());
  sites.push_back(CallSite{frames, h, {}, {}});
  by_hash_.emplace(h, id);
  return id;
}

std::uint32_t CallSiteTable::import(const CallSiteTable& other, std::uint32_t other_id) {
  const CallSite& theirs = other.sites.at(other_id);
  std::vector<Frame> frames = theirs.frames;
  for (Frame& f : frames) f.module = intern_module(other.modules.at(f.module));
  const std::uint32_t id = intern(frames);
  CallSite& mine = sites[id];
  if (mine.symbol.empty()) mine.symbol = theirs.symbol;
  if (mine.location.empty()) mine.location = theirs.location;
  return id;
}

}  // namespace scalatrace
