// scalatrace-dump: prints scalatrace files as JSON.
//   scalatrace-dump raw PATH     PATH = a .straw file or a directory of rank-*.straw files
// One function per subcommand; add new ones to kCommands.
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "json_writer.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/format/raw.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace::tools {
namespace {

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

void write_event(JsonWriter& j, const Event& e, const std::vector<std::string>& names) {
  j.begin_object();
  j.field("op", op_name(e.op));
  if (e.op == Op::Other) {
    const std::int64_t id = e[Field::NameId];
    j.field("name", id >= 0 && static_cast<std::size_t>(id) < names.size()
                        ? std::string_view(names[static_cast<std::size_t>(id)])
                        : std::string_view("?"));
  }
  j.field("site", e.site);
  for (std::size_t i = 0; i < kFieldCount; ++i) j.field(lowercase(field_name(static_cast<Field>(i))), e.fields[i]);
  for (std::size_t i = 0; i < kArrayFieldCount; ++i)
    j.array(lowercase(array_field_name(static_cast<ArrayField>(i))), e.arrays[i]);
  j.field("compute_ns", e.compute_ns);
  j.field("duration_ns", e.duration_ns);
  j.end_object();
}

void write_sites(JsonWriter& j, const CallSiteTable& sites) {
  j.array("modules", sites.modules);
  j.key("sites");
  j.begin_array();
  for (const CallSite& s : sites.sites) {
    j.begin_object();
    j.key("frames");
    j.begin_array();
    for (const Frame& f : s.frames) {
      j.begin_array();
      j.value(std::uint64_t{f.module});
      j.value(f.offset);
      j.end_array();
    }
    j.end_array();
    j.field("hash", s.hash);
    j.field("symbol", s.symbol);
    j.field("location", s.location);
    j.end_object();
  }
  j.end_array();
}

void write_metadata(JsonWriter& j, const std::map<std::string, std::string>& metadata) {
  j.key("metadata");
  j.begin_object();
  for (const auto& [k, v] : metadata) j.field(k, v);
  j.end_object();
}

/// The communicators `rank` holds (a raw recording's table: all of them).
void write_comms(JsonWriter& j, const CommTable& comms, std::int64_t rank) {
  j.key("comms");
  j.begin_array();
  for (const CommEntry& c : comms.entries) {
    if (!c.holders.empty() && !c.holders.contains(rank)) continue;
    j.begin_object();
    j.field("id", c.id);
    j.array("members", c.members.to_vector());
    j.end_object();
  }
  j.end_array();
}

void write_recording(JsonWriter& j, const RankRecording& rec) {
  j.begin_object();
  j.field("rank", rec.rank);
  j.field("nranks", rec.nranks);
  write_metadata(j, rec.metadata);
  write_sites(j, rec.sites);
  write_comms(j, rec.comms, rec.rank);
  j.array("names", rec.names);
  j.key("events");
  j.begin_array();
  for (const Event& e : rec.events) write_event(j, e, rec.names);
  j.end_array();
  j.end_object();
}

int cmd_raw(const std::vector<std::string>& args) {
  if (args.size() != 1) throw UsageError("usage: scalatrace-dump raw PATH (a .straw file or a directory)");
  std::vector<RankRecording> recs;
  if (std::filesystem::is_directory(args[0]))
    recs = read_raw_dir(args[0]);
  else
    recs.push_back(read_raw(args[0]));
  JsonWriter j(stdout);
  j.begin_object();
  j.key("ranks");
  j.begin_array();
  for (const auto& rec : recs) write_recording(j, rec);
  j.end_array();
  j.end_object();
  j.newline();
  return 0;
}

// ---- trace FILE.sct --rank R: one rank's events from a compressed trace, in the raw shape.

int cmd_trace(const std::vector<std::string>& args) {
  std::string path;
  std::int64_t rank = -1;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--rank" && i + 1 < args.size()) {
      const std::string& text = args[++i];
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), rank);
      if (ec != std::errc{} || end != text.data() + text.size() || text.empty() || rank < 0)
        throw UsageError("--rank expects a non-negative integer, got '" + text + "'");
    } else if (path.empty()) {
      path = args[i];
    } else {
      throw UsageError("usage: scalatrace-dump trace FILE.sct --rank R");
    }
  }
  if (path.empty() || rank < 0) throw UsageError("usage: scalatrace-dump trace FILE.sct --rank R");
  const Trace t = read_trace_file(path);
  Cursor cursor(t, rank, TimingMode::Mean);
  JsonWriter j(stdout);
  j.begin_object();
  j.field("rank", rank);
  j.field("nranks", t.nranks);
  write_metadata(j, t.metadata);
  write_sites(j, t.sites);
  write_comms(j, t.comms, rank);
  j.array("names", t.names);
  j.key("events");
  j.begin_array();
  while (auto e = cursor.next()) write_event(j, *e, t.names);
  j.end_array();
  j.end_object();
  j.newline();
  return 0;
}

// ---- tree FILE.sct: the compressed trace as an indented outline.
template <class Seq>
std::string elastic_text(const Elastic<Seq>& e, const std::function<std::string(const Seq&)>& show) {
  std::string s;
  for (const auto& [seq, ranks] : e.alternatives) {
    if (!s.empty()) s += " | ";
    s += show(seq);
    if (!ranks.empty()) s += " @" + ranks.to_string();
  }
  return s;
}

std::string array_text(const ArraySeq& a) {
  std::string s = "[";
  for (const auto& r : a.runs()) {
    if (s.size() > 1) s += ' ';
    s += '(';
    for (std::size_t i = 0; i < r.values.size(); ++i) s += (i ? "," : "") + std::to_string(r.values[i]);
    s += ")x" + std::to_string(r.count);
  }
  return s + "]";
}

void print_nodes(const Trace& t, const std::vector<Node>& nodes, int depth) {
  const std::string pad(static_cast<std::size_t>(depth) * 2, ' ');
  const auto seq_text = std::function<std::string(const ValueSeq&)>([](const ValueSeq& v) { return v.to_string(); });
  for (const Node& n : nodes) {
    std::printf("%s", pad.c_str());
    if (n.loop) {
      std::printf("loop trips %s", elastic_text(n.loop->trips, seq_text).c_str());
    } else {
      const EventNode& e = *n.event;
      const std::string& sym = e.site < t.sites.sites.size() ? t.sites.sites[e.site].symbol : std::string();
      std::printf("%s site %u%s%s", std::string(op_name(e.op)).c_str(), e.site, sym.empty() ? "" : " ", sym.c_str());
    }
    if (!n.ranks.empty()) std::printf("  ranks %s", n.ranks.to_string().c_str());
    if (!n.presence.empty()) std::printf("  presence %s", elastic_text(n.presence, seq_text).c_str());
    std::printf("\n");
    if (n.loop) {
      print_nodes(t, n.loop->body, depth + 1);
      continue;
    }
    const EventNode& e = *n.event;
    for (std::size_t i = 0; i < kFieldCount; ++i) {
      const auto& f = e.fields[i];
      if (f.empty()) continue;
      bool all_zero = true;
      for (const auto& alt : f.alternatives)
        all_zero = all_zero && alt.first.is_constant() && (alt.first.empty() || alt.first.at(0) == 0);
      if (all_zero) continue;
      std::printf("%s    %s = %s\n", pad.c_str(), lowercase(field_name(static_cast<Field>(i))).c_str(),
                  elastic_text(f, seq_text).c_str());
    }
    for (std::size_t i = 0; i < kArrayFieldCount; ++i) {
      if (e.arrays[i].empty()) continue;
      bool all_empty = true;
      for (const auto& alt : e.arrays[i].alternatives)
        for (const auto& r : alt.first.runs()) all_empty = all_empty && r.values.empty();
      if (all_empty) continue;
      std::printf("%s    %s = %s\n", pad.c_str(), lowercase(array_field_name(static_cast<ArrayField>(i))).c_str(),
                  elastic_text(e.arrays[i], std::function<std::string(const ArraySeq&)>(array_text)).c_str());
    }
    if (!e.site_ids.empty()) std::printf("%s    sites = %s\n", pad.c_str(), elastic_text(e.site_ids, seq_text).c_str());
    if (e.compute.count() > 0 || e.duration.count() > 0)
      std::printf("%s    compute mean %.0f ns, duration mean %.0f ns (%llu calls)\n", pad.c_str(), e.compute.mean(),
                  e.duration.mean(), static_cast<unsigned long long>(e.duration.count()));
  }
}

int cmd_tree(const std::vector<std::string>& args) {
  if (args.size() != 1) throw UsageError("usage: scalatrace-dump tree FILE.sct");
  const Trace t = read_trace_file(args[0]);
  std::printf("trace %s: %lld ranks, %zu nodes, %zu call sites, %zu communicators\n", args[0].c_str(),
              static_cast<long long>(t.nranks), t.node_count(), t.sites.size(), t.comms.entries.size());
  for (const auto& [k, v] : t.metadata) std::printf("  %s = %s\n", k.c_str(), v.c_str());
  for (const CommEntry& c : t.comms.entries)
    std::printf("comm %lld members %s held by %s\n", static_cast<long long>(c.id), c.members.to_string().c_str(),
                c.holders.to_string().c_str());
  print_nodes(t, t.nodes, 0);
  return 0;
}

// ---- check RAWDIR FILE.sct: every rank's cursor over the merged trace against its raw stream.
std::string site_signature(const CallSiteTable& table, std::uint32_t id) {
  if (id >= table.sites.size()) return "<invalid site " + std::to_string(id) + ">";
  std::string s;
  for (const Frame& f : table.sites[id].frames) {
    s += f.module < table.modules.size() ? table.modules[f.module] : std::string("?");
    s += "+" + std::to_string(f.offset) + ";";
  }
  return s;
}

/// One difference between a raw recording and a cursor (ok = false), or none.
struct Mismatch {
  bool ok = true;
  std::int64_t rank = 0;
  std::uint64_t event = 0;
  std::string field, expected, got;
};

std::string array_text(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t k = 0; k < v.size(); ++k) s += (k ? "," : "") + std::to_string(v[k]);
  return s + "]";
}

/// Walks `rank`'s events in `t` beside the raw recording; everything but time must be equal
/// (call sites by signature, Op::Other names by name). Counts the events compared.
Mismatch compare_rank(const RankRecording& rec, const Trace& t, std::uint64_t& events) {
  auto diff = [&](std::uint64_t i, std::string field, std::string expected, std::string got) {
    return Mismatch{false, rec.rank, i, std::move(field), std::move(expected), std::move(got)};
  };
  auto name = [](const std::vector<std::string>& names, std::int64_t id) {
    return id >= 0 && static_cast<std::size_t>(id) < names.size() ? names[static_cast<std::size_t>(id)]
                                                                  : "<invalid name " + std::to_string(id) + ">";
  };
  Cursor cursor(t, rec.rank, TimingMode::None);
  std::uint64_t i = 0;
  for (; i < rec.events.size(); ++i) {
    const Event& want = rec.events[i];
    auto got = cursor.next();
    if (!got) return diff(i, "end", describe(want), "end of trace");
    if (got->op != want.op) return diff(i, "op", std::string(op_name(want.op)), std::string(op_name(got->op)));
    const std::string ws = site_signature(rec.sites, want.site), gs = site_signature(t.sites, got->site);
    if (ws != gs) return diff(i, "site", ws, gs);
    for (std::size_t f = 0; f < kFieldCount; ++f) {
      std::string w = std::to_string(want.fields[f]), g = std::to_string(got->fields[f]);
      if (static_cast<Field>(f) == Field::NameId && want.op == Op::Other) {
        w = name(rec.names, want.fields[f]);
        g = name(t.names, got->fields[f]);
      }
      if (w != g) return diff(i, lowercase(field_name(static_cast<Field>(f))), w, g);
    }
    for (std::size_t a = 0; a < kArrayFieldCount; ++a)
      if (want.arrays[a] != got->arrays[a])
        return diff(i, lowercase(array_field_name(static_cast<ArrayField>(a))), array_text(want.arrays[a]),
                    array_text(got->arrays[a]));
  }
  if (auto extra = cursor.next()) return diff(i, "end", "end of recording", describe(*extra));
  events += i;
  return {};
}

/// Prints the JSON verdict of a check; exit status 1 on a difference.
int report_check(const Mismatch& m, std::int64_t ranks, std::uint64_t events, std::uint64_t nodes) {
  JsonWriter j(stdout);
  j.begin_object();
  j.field("ok", m.ok);
  if (m.ok) {
    j.field("ranks", ranks);
    j.field("events", events);
    j.field("trace_nodes", nodes);
  } else {
    j.field("rank", m.rank);
    j.field("event", m.event);
    j.field("field", m.field);
    j.field("expected", m.expected);
    j.field("got", m.got);
  }
  j.end_object();
  j.newline();
  return m.ok ? 0 : 1;
}

int cmd_check(const std::vector<std::string>& args) {
  if (args.size() != 2) throw UsageError("usage: scalatrace-dump check RAWDIR FILE.sct");
  const std::vector<RankRecording> recs = read_raw_dir(args[0]);
  const Trace t = read_trace_file(args[1]);
  if (static_cast<std::int64_t>(recs.size()) != t.nranks)
    return report_check(Mismatch{false, -1, 0, "nranks", std::to_string(recs.size()), std::to_string(t.nranks)}, 0, 0,
                        0);
  std::uint64_t events = 0;
  for (const RankRecording& rec : recs) {
    const Mismatch m = compare_rank(rec, t, events);
    if (!m.ok) return report_check(m, 0, 0, 0);
  }
  return report_check({}, static_cast<std::int64_t>(recs.size()), events, t.node_count());
}

// ---- check-intra RAWDIR: every rank's raw stream through the intra-rank compressor alone
// (default settings), then its cursor against the raw stream. trace_nodes sums the queues.
int cmd_check_intra(const std::vector<std::string>& args) {
  if (args.size() != 1) throw UsageError("usage: scalatrace-dump check-intra RAWDIR");
  const std::vector<RankRecording> recs = read_raw_dir(args[0]);
  std::uint64_t events = 0, nodes = 0;
  for (const RankRecording& rec : recs) {
    const Trace t = compress_recording(rec);
    nodes += t.node_count();
    const Mismatch m = compare_rank(rec, t, events);
    if (!m.ok) return report_check(m, 0, 0, 0);
  }
  return report_check({}, static_cast<std::int64_t>(recs.size()), events, nodes);
}

struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>& args);
  const char* help;
};

const Command kCommands[] = {
    {"raw", cmd_raw, "raw PATH    raw streams (.straw file or directory) as JSON"},
    {"trace", cmd_trace, "trace FILE.sct --rank R    one rank's events of a compressed trace as JSON"},
    {"tree", cmd_tree, "tree FILE.sct    the compressed trace as an indented outline"},
    {"check", cmd_check,
     "check RAWDIR FILE.sct    every rank of FILE.sct against its raw stream (exit 1 on a difference)"},
    {"check-intra", cmd_check_intra,
     "check-intra RAWDIR    every rank's raw stream compressed alone, its cursor against the stream"},
};

int usage(std::FILE* out) {
  std::fprintf(out, "usage: scalatrace-dump COMMAND ARGS...\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %s\n", c.help);
  return out == stdout ? 0 : 2;
}

}  // namespace
}  // namespace scalatrace::tools

int main(int argc, char** argv) {
  using namespace scalatrace::tools;
  if (argc < 2) {
    std::fprintf(stderr, "scalatrace-dump: error: missing COMMAND (scalatrace-dump --help lists them)\n");
    return 2;
  }
  const std::string_view name = argv[1];
  if (name == "-h" || name == "--help") return usage(stdout);
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    try {
      return c.run(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const scalatrace::UsageError& e) {  // bad arguments: exit 2, one line
      std::fflush(stdout);
      std::fprintf(stderr, "scalatrace-dump: error: %s\n", e.what());
      return 2;
    } catch (const std::exception& e) {  // an unreadable file, a corrupt trace: exit 1
      std::fflush(stdout);
      std::fprintf(stderr, "scalatrace-dump: error: %s\n", e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "scalatrace-dump: error: unknown command '%s' (scalatrace-dump --help lists them)\n", argv[1]);
  return 2;
}
