// The byte codec's out-of-line parts: CRC-32 and the Reader's failure message (see wire.hpp).
#include "scalatrace/support/wire.hpp"

#include <array>

namespace scalatrace::wire {
namespace {

std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}

}  // namespace

std::uint32_t crc32(std::string_view data) {
  static const auto table = make_crc_table();
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void Reader::fail(const std::string& what) const { throw FormatError(describe(what)); }

std::string Reader::describe(const std::string& what) const { return what + " at byte " + std::to_string(offset()); }

}  // namespace scalatrace::wire
