#pragma once
// Call sites: the stack of return addresses that led to an MPI call, recorded
// position-independently as (module, offset inside the module) so that the same call site has
// the same signature on every rank of a PIE program.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace scalatrace {

struct Frame {
  std::uint32_t module = 0;  ///< index into CallSiteTable::modules
  std::uint64_t offset = 0;  ///< return address minus the module's load base
  bool operator==(const Frame&) const = default;
};

struct CallSite {
  std::vector<Frame> frames;  ///< innermost first, recursion folded
  std::uint64_t hash = 0;     ///< XOR signature hash (quick reject), see signature_hash
  std::string symbol;         ///< innermost resolvable function name, "" if unknown
  std::string location;       ///< "file:line" if resolvable, "" otherwise
};

/// XOR-based signature hash of the frames (ScalaTrace §2), order-sensitive through rotation.
std::uint64_t signature_hash(const std::vector<Frame>& frames);

/// Folds recursion: a block of frames that repeats back to back is kept once
/// (a b b b c -> a b c; a b c b c b c d -> a b c d), longest runs of any block length.
void fold_recursion(std::vector<Frame>& frames);

/// Number of frames in which a and b differ (positionwise, plus the length difference).
std::size_t frame_distance(const std::vector<Frame>& a, const std::vector<Frame>& b);

/// Interning table of call sites; ids are dense, in first-seen order.
class CallSiteTable {
 public:
  std::vector<std::string> modules;  ///< module (shared object / executable) paths
  std::vector<CallSite> sites;

  std::uint32_t intern_module(const std::string& path);
  /// Returns the id of a site with exactly these (already folded) frames, adding it if new.
  std::uint32_t intern(const std::vector<Frame>& frames);
  /// Same, for a frame list expressed against another table's modules (used by merge).
  std::uint32_t import(const CallSiteTable& other, std::uint32_t other_id);
  std::size_t size() const { return sites.size(); }

 private:
  std::unordered_map<std::string, std::uint32_t> module_ids_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> by_hash_;
};

}  // namespace scalatrace
