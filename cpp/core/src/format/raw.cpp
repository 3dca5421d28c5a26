// Raw stream (.straw): writer and reader. The format is specified in docs/format.md,
// section "Raw stream (.straw)"; keep both in step.
#include "scalatrace/format/raw.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "scalatrace/support/errors.hpp"
#include "scalatrace/format/trace_validation.hpp"

namespace scalatrace {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'W', '\0', '\r', '\n'};
constexpr std::uint32_t kVersion = 1;
constexpr unsigned char kEventTag = 'E';
constexpr unsigned char kTrailerTag = 'T';
constexpr std::size_t kFlushBytes = 1u << 20;
constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;

std::uint64_t fnv1a(std::uint64_t h, const char* data, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= kFnvPrime;
  }
  return h;
}

// ---- encoding ----
void put_u(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_s(std::string& out, std::int64_t v) {
  put_u(out, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
}
void put_str(std::string& out, const std::string& s) {  // stored as UTF-8 (ill-formed -> U+FFFD)
  const std::string text = to_valid_utf8(s);
  put_u(out, text.size());
  out += text;
}
// Pointer-based encoders for the per-event hot path (the caller reserved enough room).
char* enc_u(char* p, std::uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}
char* enc_s(char* p, std::int64_t v) {
  return enc_u(p, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
}
void put_fixed(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// ---- decoding (bounds-checked; every problem is a FormatError naming file and offset) ----
class Decoder {
 public:
  Decoder(const std::string& data, std::string path) : data_(data), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(path_ + ": not a valid raw stream: " + what + " (at byte " +
                      std::to_string(pos_) + " of " + std::to_string(data_.size()) + ")");
  }
  std::size_t remaining() const { return data_.size() - pos_; }
  std::size_t pos() const { return pos_; }
  bool at_end() const { return pos_ == data_.size(); }

  unsigned char byte() {
    if (pos_ >= data_.size()) fail("truncated");
    return static_cast<unsigned char>(data_[pos_++]);
  }
  std::uint64_t u() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const unsigned char b = byte();
      if (shift == 63 && b > 1) fail("varint overflows 64 bits");
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("varint longer than 10 bytes");
  }
  std::int64_t s() {
    const std::uint64_t z = u();
    return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  /// A count of items that each take at least one byte: bounded by what is left.
  std::size_t count(const char* what) {
    const std::uint64_t n = u();
    if (n > remaining()) fail(std::string("implausible ") + what + " count " + std::to_string(n));
    return static_cast<std::size_t>(n);
  }
  std::string str(const char* what) {
    const std::size_t n = count(what);
    std::string out = data_.substr(pos_, n);
    if (!is_valid_utf8(out)) fail(std::string(what) + " is not valid UTF-8");
    pos_ += n;
    return out;
  }
  std::uint64_t fixed(int bytes) {
    if (remaining() < static_cast<std::size_t>(bytes)) fail("truncated");
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(data_[pos_++])) << (8 * i);
    return v;
  }

 private:
  const std::string& data_;
  std::string path_;
  std::size_t pos_ = 0;
};

Event decode_event(Decoder& d) {
  Event e;
  const std::uint64_t op = d.u();
  if (op >= kOpCount) d.fail("unknown op " + std::to_string(op));
  e.op = static_cast<Op>(op);
  const std::uint64_t site = d.u();
  if (site > 0xffffffffull) d.fail("call-site id out of range");
  e.site = static_cast<std::uint32_t>(site);
  const std::uint64_t fmask = d.u();
  if (fmask >> kFieldCount) d.fail("unknown field in field mask");
  for (std::size_t i = 0; i < kFieldCount; ++i)
    if (fmask >> i & 1) {
      e.fields[i] = d.s();
      if (e.fields[i] == 0) d.fail("field marked present holds 0");
    }
  const std::uint64_t amask = d.u();
  if (amask >> kArrayFieldCount) d.fail("unknown array in array mask");
  for (std::size_t i = 0; i < kArrayFieldCount; ++i)
    if (amask >> i & 1) {
      const std::size_t n = d.count("array element");
      if (n == 0) d.fail("array marked present is empty");
      e.arrays[i].reserve(n);
      for (std::size_t k = 0; k < n; ++k) e.arrays[i].push_back(d.s());
    }
  e.compute_ns = d.u();
  e.duration_ns = d.u();
  try {
    validate_event_values(e);
  } catch (const FormatError& ex) {
    d.fail(ex.what());
  }
  return e;
}

}  // namespace

RawWriter::~RawWriter() = default;  // an unclosed stream is removed, never left half-written

void RawWriter::open(const std::string& path, std::int64_t rank, std::int64_t nranks) {
  if (file_) throw UsageError("RawWriter::open: already open");
  file_ = std::make_unique<SafeFileWriter>(path);
  buffer_.clear();
  events_ = 0;
  hash_ = kFnvOffset;
  buffer_.append(kMagic, sizeof kMagic);
  put_fixed(buffer_, kVersion, 4);
  put_s(buffer_, rank);
  put_s(buffer_, nranks);
}

void RawWriter::flush_buffer() {
  hash_ = fnv1a(hash_, buffer_.data(), buffer_.size());
  try {
    file_->write(buffer_);
  } catch (...) {
    file_.reset();
    buffer_.clear();
    throw;
  }
  buffer_.clear();
}

void RawWriter::append(const Event& e) {
  if (!file_) throw UsageError("RawWriter::append: not open");
  std::size_t elements = 0;
  for (const auto& a : e.arrays) elements += a.size();
  constexpr std::size_t kVarint = 10;
  const std::size_t bound =
      1 + kVarint * (2 + 1 + kFieldCount + 1 + kArrayFieldCount + elements + 2);
  const std::size_t old_size = buffer_.size();
  buffer_.resize(old_size + bound);
  char* p = buffer_.data() + old_size;
  *p++ = static_cast<char>(kEventTag);
  p = enc_u(p, static_cast<std::uint64_t>(e.op));
  p = enc_u(p, e.site);
  std::uint64_t fmask = 0;
  for (std::size_t i = 0; i < kFieldCount; ++i)
    if (e.fields[i] != 0) fmask |= std::uint64_t{1} << i;
  p = enc_u(p, fmask);
  for (std::size_t i = 0; i < kFieldCount; ++i)
    if (e.fields[i] != 0) p = enc_s(p, e.fields[i]);
  std::uint64_t amask = 0;
  for (std::size_t i = 0; i < kArrayFieldCount; ++i)
    if (!e.arrays[i].empty()) amask |= std::uint64_t{1} << i;
  p = enc_u(p, amask);
  for (std::size_t i = 0; i < kArrayFieldCount; ++i) {
    if (e.arrays[i].empty()) continue;
    p = enc_u(p, e.arrays[i].size());
    for (std::int64_t v : e.arrays[i]) p = enc_s(p, v);
  }
  p = enc_u(p, e.compute_ns);
  p = enc_u(p, e.duration_ns);
  buffer_.resize(static_cast<std::size_t>(p - buffer_.data()));
  ++events_;
  if (buffer_.size() >= kFlushBytes) flush_buffer();
}

void RawWriter::close(const std::map<std::string, std::string>& metadata,
                      const CallSiteTable& sites, const CommTable& comms,
                      const std::vector<std::string>& names) {
  if (!file_) throw UsageError("RawWriter::close: not open");
  buffer_.push_back(static_cast<char>(kTrailerTag));
  put_u(buffer_, events_);
  put_u(buffer_, metadata.size());
  for (const auto& [k, v] : metadata) {
    put_str(buffer_, k);
    put_str(buffer_, v);
  }
  put_u(buffer_, sites.modules.size());
  for (const auto& m : sites.modules) put_str(buffer_, m);
  put_u(buffer_, sites.sites.size());
  for (const auto& site : sites.sites) {
    put_u(buffer_, site.frames.size());
    for (const auto& f : site.frames) {
      put_u(buffer_, f.module);
      put_u(buffer_, f.offset);
    }
    put_str(buffer_, site.symbol);
    put_str(buffer_, site.location);
  }
  put_u(buffer_, comms.entries.size());
  for (const auto& c : comms.entries) {
    put_s(buffer_, c.id);
    const auto members = c.members.to_vector();
    put_u(buffer_, members.size());
    for (auto m : members) put_s(buffer_, m);
  }
  put_u(buffer_, names.size());
  for (const auto& n : names) put_str(buffer_, n);
  hash_ = fnv1a(hash_, buffer_.data(), buffer_.size());
  put_fixed(buffer_, hash_, 8);
  std::unique_ptr<SafeFileWriter> file = std::move(file_);
  file->write(buffer_);
  buffer_.clear();
  file->commit();
}

RankRecording read_raw(const std::string& path) {
  std::string data;
  try {
    data = read_regular_file(path, "raw stream");
  } catch (const FormatError&) {
    throw;
  } catch (const Error& e) {
    throw FormatError(e.what());
  }
  return decode_raw(data, path);
}

RankRecording decode_raw(const std::string& data, const std::string& path) {
  Decoder d(data, path);
  if (data.empty())
    throw FormatError(path + ": empty raw stream: the rank's recording never finished (it was "
                      "killed, or its disk was full)");
  if (data.size() < sizeof kMagic || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
    d.fail("bad magic (expected a .straw file)");
  if (data.size() < sizeof kMagic + 4 + 8) d.fail("truncated");
  {
    const char* tail = data.data() + data.size() - 8;
    std::uint64_t stored = 0;
    for (int i = 0; i < 8; ++i)
      stored |= static_cast<std::uint64_t>(static_cast<unsigned char>(tail[i])) << (8 * i);
    if (fnv1a(kFnvOffset, data.data(), data.size() - 8) != stored)
      d.fail("checksum mismatch (file truncated, unfinished or corrupt)");
  }
  for (std::size_t i = 0; i < sizeof kMagic; ++i) d.byte();
  const std::uint64_t version = d.fixed(4);
  if (version != kVersion)
    d.fail("unsupported version " + std::to_string(version) + " (this reader knows " +
           std::to_string(kVersion) + ")");

  RankRecording rec;
  rec.rank = d.s();
  rec.nranks = d.s();
  if (rec.nranks <= 0 || rec.rank < 0 || rec.rank >= rec.nranks)
    d.fail("rank " + std::to_string(rec.rank) + " of " + std::to_string(rec.nranks));

  for (;;) {
    const unsigned char tag = d.byte();
    if (tag == kEventTag) {
      rec.events.push_back(decode_event(d));
    } else if (tag == kTrailerTag) {
      break;
    } else {
      d.fail("unknown record tag " + std::to_string(tag));
    }
  }
  if (d.u() != rec.events.size()) d.fail("event count in trailer does not match the events");
  for (std::size_t n = d.count("metadata"); n > 0; --n) {
    std::string k = d.str("metadata key");
    rec.metadata[k] = d.str("metadata value");
  }
  for (std::size_t n = d.count("module"); n > 0; --n) rec.sites.modules.push_back(d.str("module path"));
  for (std::size_t n = d.count("call site"); n > 0; --n) {
    CallSite site;
    for (std::size_t f = d.count("frame"); f > 0; --f) {
      Frame fr;
      const std::uint64_t m = d.u();
      if (m >= rec.sites.modules.size()) d.fail("frame names unknown module " + std::to_string(m));
      fr.module = static_cast<std::uint32_t>(m);
      fr.offset = d.u();
      site.frames.push_back(fr);
    }
    site.hash = signature_hash(site.frames);
    site.symbol = d.str("symbol");
    site.location = d.str("location");
    rec.sites.sites.push_back(std::move(site));
  }
  for (std::size_t n = d.count("communicator"); n > 0; --n) {
    CommEntry c;
    c.id = d.s();
    std::vector<std::int64_t> members;
    for (std::size_t m = d.count("member"); m > 0; --m) {
      members.push_back(d.s());
      if (members.back() < 0 || members.back() >= rec.nranks)
        d.fail("communicator member outside 0.." + std::to_string(rec.nranks - 1));
    }
    c.members = RankList::from_sequence(members);
    rec.comms.entries.push_back(std::move(c));
  }
  for (std::size_t n = d.count("name"); n > 0; --n) rec.names.push_back(d.str("function name"));
  if (d.remaining() != 8) d.fail("unexpected bytes after the tables");

  for (const Event& e : rec.events) {
    if (e.site >= rec.sites.sites.size())
      d.fail("event refers to unknown call site " + std::to_string(e.site));
    if (e.op == Op::Other &&
        (e[Field::NameId] < 0 || static_cast<std::size_t>(e[Field::NameId]) >= rec.names.size()))
      d.fail("event refers to unknown function name " + std::to_string(e[Field::NameId]));
  }
  return rec;
}

std::vector<RankRecording> read_raw_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw FormatError(dir + ": not a directory of raw streams");
  std::vector<RankRecording> out;
  std::set<std::string> unfinished;  // temporary files of streams still (or never) being written
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 11 && name.starts_with("rank-") && name.ends_with(".straw"))
      out.push_back(read_raw(entry.path().string()));
    else if (name.starts_with(".rank-") && name.ends_with(".tmp"))
      unfinished.insert(name.substr(1, name.find(".straw.") + 5));
  }
  if (ec) throw FormatError(dir + ": cannot list the directory: " + ec.message());
  const std::string unfinished_note =
      unfinished.empty() ? ""
                         : " (unfinished temporary files for " + *unfinished.begin() +
                               (unfinished.size() > 1 ? " and others" : "") +
                               ": those ranks were killed before finishing their recording)";
  if (out.empty()) throw FormatError(dir + ": no rank-*.straw files" + unfinished_note);
  std::sort(out.begin(), out.end(),
            [](const RankRecording& a, const RankRecording& b) { return a.rank < b.rank; });
  const std::int64_t n = out.front().nranks;
  std::set<std::int64_t> seen;
  for (const auto& rec : out) {
    if (rec.nranks != n)
      throw FormatError(dir + ": streams disagree on the number of ranks (" + std::to_string(n) +
                        " vs " + std::to_string(rec.nranks) + ")");
    if (!seen.insert(rec.rank).second)
      throw FormatError(dir + ": rank " + std::to_string(rec.rank) + " appears twice");
  }
  if (static_cast<std::int64_t>(out.size()) != n) {
    std::string missing;
    for (std::int64_t r = 0; r < n && missing.size() < 200; ++r)
      if (!seen.count(r)) missing += " " + raw_file_name(r);
    throw FormatError(dir + ": incomplete set of raw streams: " + std::to_string(out.size()) +
                      " of " + std::to_string(n) + " ranks; missing" + missing + unfinished_note);
  }
  return out;
}

}  // namespace scalatrace
