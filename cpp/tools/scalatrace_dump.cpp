// scalatrace-dump: prints scalatrace files as JSON.
//   scalatrace-dump raw PATH     PATH = a .straw file or a directory of rank-*.straw files
// One function per subcommand; add new ones to kCommands.
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "json_writer.hpp"
#include "scalatrace/errors.hpp"
#include "scalatrace/raw.hpp"

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
  for (std::size_t i = 0; i < kFieldCount; ++i)
    j.field(lowercase(field_name(static_cast<Field>(i))), e.fields[i]);
  for (std::size_t i = 0; i < kArrayFieldCount; ++i)
    j.array(lowercase(array_field_name(static_cast<ArrayField>(i))), e.arrays[i]);
  j.field("compute_ns", e.compute_ns);
  j.field("duration_ns", e.duration_ns);
  j.end_object();
}

void write_recording(JsonWriter& j, const RankRecording& rec) {
  j.begin_object();
  j.field("rank", rec.rank);
  j.field("nranks", rec.nranks);
  j.key("metadata");
  j.begin_object();
  for (const auto& [k, v] : rec.metadata) j.field(k, v);
  j.end_object();
  j.array("modules", rec.sites.modules);
  j.key("sites");
  j.begin_array();
  for (const CallSite& s : rec.sites.sites) {
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
  j.key("comms");
  j.begin_array();
  for (const CommEntry& c : rec.comms.entries) {
    j.begin_object();
    j.field("id", c.id);
    j.array("members", c.members.to_vector());
    j.end_object();
  }
  j.end_array();
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

struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>& args);
  const char* help;
};

const Command kCommands[] = {
    {"raw", cmd_raw, "raw PATH    raw streams (.straw file or directory) as JSON"},
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
  if (argc < 2) return usage(stderr);
  const std::string_view name = argv[1];
  if (name == "-h" || name == "--help") return usage(stdout);
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    try {
      return c.run(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const std::exception& e) {
      std::fflush(stdout);
      std::fprintf(stderr, "scalatrace-dump: %s\n", e.what());
      return 2;
    }
  }
  std::fprintf(stderr, "scalatrace-dump: unknown command '%s'\n", argv[1]);
  return usage(stderr);
}
