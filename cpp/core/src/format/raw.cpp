// Raw stream (.straw): writer and reader. The format is specified in docs/format.md,
// section "Raw stream (.straw)"; keep both in step.
#include "scalatrace/format/raw.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "format/sct_codec.hpp"
#include "scalatrace/format/trace_validation.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/support/wire.hpp"

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

/// The stream's reader: the byte codec's, with errors that name the file and the offset.
class Decoder : public wire::Reader {
 public:
  Decoder(std::string_view data, std::string path) : wire::Reader(data), path_(std::move(path)) {}

 protected:
  std::string describe(const std::string& what) const override {
    return path_ + ": not a valid raw stream: " + what + " (at byte " + std::to_string(pos()) + " of " +
           std::to_string(size()) + ")";
  }

 private:
  std::string path_;
};

Event decode_event(Decoder& d) {
  Event e;
  const std::uint64_t op = d.uv();
  if (op >= kOpCount) d.fail("unknown op " + std::to_string(op));
  e.op = static_cast<Op>(op);
  const std::uint64_t site = d.uv();
  if (site > 0xffffffffull) d.fail("call-site id out of range");
  e.site = static_cast<std::uint32_t>(site);
  const std::uint64_t fmask = d.uv();
  if (fmask >> kFieldCount) d.fail("unknown field in field mask");
  for (std::size_t i = 0; i < kFieldCount; ++i)
    if (fmask >> i & 1) {
      e.fields[i] = d.sv();
      if (e.fields[i] == 0) d.fail("field marked present holds 0");
    }
  const std::uint64_t amask = d.uv();
  if (amask >> kArrayFieldCount) d.fail("unknown array in array mask");
  for (std::size_t i = 0; i < kArrayFieldCount; ++i)
    if (amask >> i & 1) {
      const std::size_t n = d.count("array element");
      if (n == 0) d.fail("array marked present is empty");
      e.arrays[i].reserve(n);
      for (std::size_t k = 0; k < n; ++k) e.arrays[i].push_back(d.sv());
    }
  e.compute_ns = d.uv();
  e.duration_ns = d.uv();
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
  buffer_.data().clear();
  events_ = 0;
  hash_ = kFnvOffset;
  buffer_.raw(std::string_view(kMagic, sizeof kMagic));
  buffer_.fixed(kVersion, 4);
  buffer_.sv(rank);
  buffer_.sv(nranks);
}

void RawWriter::flush_buffer() {
  hash_ = fnv1a(hash_, buffer_.data().data(), buffer_.size());
  try {
    file_->write(buffer_.data());
  } catch (...) {
    file_.reset();
    buffer_.data().clear();
    throw;
  }
  buffer_.data().clear();
}

void RawWriter::append(const Event& e) {
  if (!file_) throw UsageError("RawWriter::append: not open");
  std::size_t elements = 0;
  for (const auto& a : e.arrays) elements += a.size();
  const std::size_t bound = 1 + wire::kMaxVarintBytes * (2 + 1 + kFieldCount + 1 + kArrayFieldCount + elements + 2);
  std::string& out = buffer_.data();
  const std::size_t old_size = out.size();
  out.resize(old_size + bound);
  char* p = out.data() + old_size;
  *p++ = static_cast<char>(kEventTag);
  p = wire::put_varint(p, static_cast<std::uint64_t>(e.op));
  p = wire::put_varint(p, e.site);
  std::uint64_t fmask = 0;
  for (std::size_t i = 0; i < kFieldCount; ++i)
    if (e.fields[i] != 0) fmask |= std::uint64_t{1} << i;
  p = wire::put_varint(p, fmask);
  for (std::size_t i = 0; i < kFieldCount; ++i)
    if (e.fields[i] != 0) p = wire::put_svarint(p, e.fields[i]);
  std::uint64_t amask = 0;
  for (std::size_t i = 0; i < kArrayFieldCount; ++i)
    if (!e.arrays[i].empty()) amask |= std::uint64_t{1} << i;
  p = wire::put_varint(p, amask);
  for (std::size_t i = 0; i < kArrayFieldCount; ++i) {
    if (e.arrays[i].empty()) continue;
    p = wire::put_varint(p, e.arrays[i].size());
    for (std::int64_t v : e.arrays[i]) p = wire::put_svarint(p, v);
  }
  p = wire::put_varint(p, e.compute_ns);
  p = wire::put_varint(p, e.duration_ns);
  out.resize(static_cast<std::size_t>(p - out.data()));
  ++events_;
  if (buffer_.size() >= kFlushBytes) flush_buffer();
}

void RawWriter::close(const std::map<std::string, std::string>& metadata, const CallSiteTable& sites,
                      const CommTable& comms, const std::vector<std::string>& names) {
  if (!file_) throw UsageError("RawWriter::close: not open");
  buffer_.u8(kTrailerTag);
  buffer_.uv(events_);
  buffer_.uv(metadata.size());
  for (const auto& [k, v] : metadata) {
    sct::put_text(buffer_, k);
    sct::put_text(buffer_, v);
  }
  sct::put_call_site_table(buffer_, sites);
  buffer_.uv(comms.entries.size());
  for (const auto& c : comms.entries) {
    buffer_.sv(c.id);
    const auto members = c.members.to_vector();
    buffer_.uv(members.size());
    for (auto m : members) buffer_.sv(m);
  }
  buffer_.uv(names.size());
  for (const auto& n : names) sct::put_text(buffer_, n);
  hash_ = fnv1a(hash_, buffer_.data().data(), buffer_.size());
  buffer_.fixed(hash_, 8);
  std::unique_ptr<SafeFileWriter> file = std::move(file_);
  file->write(buffer_.data());
  buffer_.data().clear();
  file->commit();
}

RankRecording read_raw(const std::string& path) {
  std::string data;
  // The magic is checked on the first bytes, before the rest of a (possibly huge) file is read.
  const auto check_start = [&](std::string_view head) {
    if (head.size() >= sizeof kMagic && std::memcmp(head.data(), kMagic, sizeof kMagic) != 0)
      throw FormatError(path + ": not a valid raw stream: bad magic (expected a .straw file) (at byte 0)");
  };
  try {
    data = read_regular_file(path, "raw stream", check_start, sizeof kMagic);
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
    throw FormatError(path +
                      ": empty raw stream: the rank's recording never finished (it was "
                      "killed, or its disk was full)");
  if (data.size() < sizeof kMagic || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
    d.fail("bad magic (expected a .straw file)");
  if (data.size() < sizeof kMagic + 4 + 8) d.fail("truncated");
  const std::uint64_t stored = wire::Reader(std::string_view(data).substr(data.size() - 8)).fixed(8);
  if (fnv1a(kFnvOffset, data.data(), data.size() - 8) != stored)
    d.fail("checksum mismatch (file truncated, unfinished or corrupt)");
  d.take(sizeof kMagic);
  const std::uint64_t version = d.fixed(4);
  if (version != kVersion)
    d.fail("unsupported version " + std::to_string(version) + " (this reader knows " + std::to_string(kVersion) + ")");

  RankRecording rec;
  rec.rank = d.sv();
  rec.nranks = d.sv();
  if (rec.nranks <= 0 || rec.rank < 0 || rec.rank >= rec.nranks)
    d.fail("rank " + std::to_string(rec.rank) + " of " + std::to_string(rec.nranks));

  for (;;) {
    const unsigned char tag = d.u8();
    if (tag == kEventTag) {
      rec.events.push_back(decode_event(d));
    } else if (tag == kTrailerTag) {
      break;
    } else {
      d.fail("unknown record tag " + std::to_string(tag));
    }
  }
  if (d.uv() != rec.events.size()) d.fail("event count in trailer does not match the events");
  for (std::size_t n = d.count("metadata"); n > 0; --n) {
    std::string k = sct::get_text(d, "metadata key");
    rec.metadata[k] = sct::get_text(d, "metadata value");
  }
  // Modules and sites are interned once each, as in a trace (whose reader refuses duplicates).
  for (std::size_t n = d.count("module"), i = 0; i < n; ++i) {
    const std::string path = sct::get_text(d, "module path");
    if (rec.sites.intern_module(path) != i) d.fail("duplicate module \"" + path + "\"");
  }
  for (std::size_t n = d.count("call site"), i = 0; i < n; ++i) {
    std::vector<Frame> frames;
    for (std::size_t f = d.count("frame"); f > 0; --f) {
      Frame fr;
      const std::uint64_t m = d.uv();
      if (m >= rec.sites.modules.size()) d.fail("frame names unknown module " + std::to_string(m));
      fr.module = static_cast<std::uint32_t>(m);
      fr.offset = d.uv();
      frames.push_back(fr);
    }
    if (rec.sites.intern(frames) != i) d.fail("duplicate call site " + std::to_string(i));
    rec.sites.sites[i].symbol = sct::get_text(d, "symbol");
    rec.sites.sites[i].location = sct::get_text(d, "location");
  }
  for (std::size_t n = d.count("communicator"); n > 0; --n) {
    CommEntry c;
    c.id = d.sv();
    std::vector<std::int64_t> members;
    for (std::size_t m = d.count("member"); m > 0; --m) {
      members.push_back(d.sv());
      if (members.back() < 0 || members.back() >= rec.nranks)
        d.fail("communicator member outside 0.." + std::to_string(rec.nranks - 1));
    }
    c.members = RankList::from_sequence(members);
    rec.comms.entries.push_back(std::move(c));
  }
  for (std::size_t n = d.count("name"); n > 0; --n) rec.names.push_back(sct::get_text(d, "function name"));
  if (d.remaining() != 8) d.fail("unexpected bytes after the tables");
  // The rank count must be justified by the stream: a real stream lists MPI_COMM_WORLD's
  // members (one byte or more each), so analyses that allocate per rank stay proportional to
  // the file's size; a crafted header declaring 10^12 ranks is refused here, not by bad_alloc.
  std::int64_t justified = rec.rank + 1;
  for (const auto& c : rec.comms.entries) justified = std::max(justified, max_rank(c.members) + 1);
  if (rec.nranks > justified)
    d.fail("the stream declares " + std::to_string(rec.nranks) + " ranks but its communicators name only " +
           std::to_string(justified) + " (a stream lists every member of MPI_COMM_WORLD)");

  for (const Event& e : rec.events) {
    if (e.site >= rec.sites.sites.size()) d.fail("event refers to unknown call site " + std::to_string(e.site));
    if (e.op == Op::Other && (e[Field::NameId] < 0 || static_cast<std::size_t>(e[Field::NameId]) >= rec.names.size()))
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
  const std::string unfinished_note = unfinished.empty()
                                          ? ""
                                          : " (unfinished temporary files for " + *unfinished.begin() +
                                                (unfinished.size() > 1 ? " and others" : "") +
                                                ": those ranks were killed before finishing their recording)";
  if (out.empty()) throw FormatError(dir + ": no rank-*.straw files" + unfinished_note);
  std::sort(out.begin(), out.end(), [](const RankRecording& a, const RankRecording& b) { return a.rank < b.rank; });
  const std::int64_t n = out.front().nranks;
  std::set<std::int64_t> seen;
  for (const auto& rec : out) {
    if (rec.nranks != n)
      throw FormatError(dir + ": streams disagree on the number of ranks (" + std::to_string(n) + " vs " +
                        std::to_string(rec.nranks) + ")");
    if (!seen.insert(rec.rank).second) throw FormatError(dir + ": rank " + std::to_string(rec.rank) + " appears twice");
  }
  if (static_cast<std::int64_t>(out.size()) != n) {
    std::string missing;
    for (std::int64_t r = 0; r < n && missing.size() < 200; ++r)
      if (!seen.count(r)) missing += " " + raw_file_name(r);
    throw FormatError(dir + ": incomplete set of raw streams: " + std::to_string(out.size()) + " of " +
                      std::to_string(n) + " ranks; missing" + missing + unfinished_note);
  }
  return out;
}

}  // namespace scalatrace
