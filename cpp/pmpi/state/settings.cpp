#include "state/settings.hpp"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace scalatrace::pmpi {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// Whether this process reports bad values (rank 0 only: every rank reads the same environment).
bool g_report = true;

// A path setting: unset, "none" and "off" mean off (an empty string).
std::string read_path(const char* name) {
  const char* v = env(name);
  if (!v) return {};
  const std::string text = v;
  return text == "none" || text == "off" ? std::string() : text;
}

template <class T>
void read_number(const char* name, T& value, std::uint64_t lo, std::uint64_t hi, const char* what) {
  const char* text = env(name);
  if (!text) return;
  std::uint64_t v = 0;
  if (parse_size(text, v) && v >= lo && v <= hi) {
    value = static_cast<T>(v);
    return;
  }
  if (!g_report) return;
  std::fprintf(stderr, "scalatrace: %s='%s' is not %s (%llu..%llu); using default %llu\n", name, text, what,
               static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi),
               static_cast<unsigned long long>(value));
}

void read_flag(const char* name, bool& value) {
  const char* v = env(name);
  if (!v) return;
  const std::string text = v;
  if (text == "1" || text == "yes" || text == "true")
    value = true;
  else if (text == "0" || text == "no" || text == "false")
    value = false;
  else if (g_report)
    std::fprintf(stderr, "scalatrace: %s='%s' is not 0 or 1; using default %d\n", name, v, value ? 1 : 0);
}

}  // namespace

bool parse_size(const std::string& text, std::uint64_t& out) {
  if (text.empty()) return false;
  std::uint64_t v = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return false;
    v = v * 10 + digit;
  }
  if (i == 0) return false;
  int shift = 0;
  if (i < text.size()) {
    switch (text[i]) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      default:
        return false;
    }
    ++i;
    if (i < text.size() && (text[i] == 'B' || text[i] == 'b')) ++i;
  }
  if (i != text.size()) return false;
  if (shift && v > (std::numeric_limits<std::uint64_t>::max() >> shift)) return false;
  out = v << shift;
  return true;
}

Settings Settings::from_environment(const std::string& program, bool report) {
  g_report = report;
  Settings s;
  s.raw_dir = read_path("SCALATRACE_RAW");
  s.out = program + ".sct";
  if (env("SCALATRACE_OUT")) {
    s.out = read_path("SCALATRACE_OUT");
    if (s.out.empty()) s.out = "none";  // the collector's spelling of "off"
  }
  read_number("SCALATRACE_STACK_DEPTH", s.stack_depth, 1, 64, "a stack depth");
  read_number("SCALATRACE_WINDOW", s.window, 0, 1u << 20, "a window size");
  if (s.window < 2) s.window = 2;  // loop detection needs both iterations of a loop (README)
  read_number("SCALATRACE_SITE_MATCH", s.site_match, 0, 64, "a frame count");
  read_number("SCALATRACE_SITE_THRESHOLD", s.site_threshold, 0, 64, "a frame count");
  read_number("SCALATRACE_MEMORY", s.memory_budget, 1u << 20, std::uint64_t{1} << 40,
              "a memory budget in bytes (suffix k/M/G allowed)");
  if (const char* v = env("TMPDIR")) s.spill_dir = v;
  if (const char* v = env("SCALATRACE_SPILL_DIR")) s.spill_dir = v;
  read_number("SCALATRACE_HIST_BINS", s.hist_sub_bins, 1, 16, "a number of bins per octave");
  if (s.hist_sub_bins & (s.hist_sub_bins - 1)) {  // the histogram takes 1, 2, 4, 8 or 16
    if (g_report)
      std::fprintf(stderr, "scalatrace: SCALATRACE_HIST_BINS='%s' is not 1, 2, 4, 8 or 16; using default 4\n",
                   env("SCALATRACE_HIST_BINS"));
    s.hist_sub_bins = 4;
  }
  read_number("SCALATRACE_TIMING_BINS", s.timing_bins, 1, 8, "a number of bins (1 to 8)");
  read_number("SCALATRACE_CLUSTERS", s.clusters, 1, 1u << 30, "a cluster count");
  if (const char* v = env("SCALATRACE_LOSSY")) {
    const std::string text = v;
    if (text == "off" || text == "0" || text == "no" || text.empty())
      s.lossy = 0;
    else if (text == "on" || text == "yes")
      s.lossy = Settings::kDefaultLossyThreshold;
    else
      read_number("SCALATRACE_LOSSY", s.lossy, 1, std::uint64_t{1} << 40,
                  "on, off or a lossy threshold in value runs");  // bad values: lossless, with a message
  }
  read_number("SCALATRACE_EXIT_WAIT", s.exit_wait_s, 0, 3600, "a number of seconds");
  read_flag("SCALATRACE_QUIET", s.quiet);
  read_flag("SCALATRACE_STACK_MEMO", s.stack_memo);
  read_flag("SCALATRACE_COMPENSATE", s.compensate);
  if (const char* v = env("SCALATRACE_OWN_TIME")) {
    const std::string text = v;
    if (text == "compute")
      s.own_time_in_compute = true;
    else if (text != "out" && g_report)
      std::fprintf(stderr, "scalatrace: SCALATRACE_OWN_TIME='%s' is not out or compute; using default out\n", v);
  }
  if (s.own_time_in_compute) s.compensate = false;  // the wrappers' entry and exit are the collector's time too
  if (!s.out.empty() && s.out != "none") s.publish_out = read_path("SCALATRACE_PUBLISH_OUT");
  if (!s.raw_dir.empty()) s.publish_raw = read_path("SCALATRACE_PUBLISH_RAW");
  return s;
}

std::map<std::string, std::string> Settings::as_metadata() const {
  return {
      {"setting.SCALATRACE_RAW", shown_raw_dir()},
      {"setting.SCALATRACE_OUT", shown_out()},
      {"setting.SCALATRACE_STACK_DEPTH", std::to_string(stack_depth)},
      {"setting.SCALATRACE_STACK_MEMO", stack_memo ? "1" : "0"},
      {"setting.SCALATRACE_COMPENSATE", compensate ? "1" : "0"},
      {"setting.SCALATRACE_OWN_TIME", own_time_in_compute ? "compute" : "out"},
      {"setting.SCALATRACE_WINDOW", std::to_string(window)},
      {"setting.SCALATRACE_SITE_MATCH", std::to_string(site_match)},
      {"setting.SCALATRACE_SITE_THRESHOLD", std::to_string(site_threshold)},
      {"setting.SCALATRACE_MEMORY", std::to_string(memory_budget)},
      {"setting.SCALATRACE_HIST_BINS", std::to_string(hist_sub_bins)},
      {"setting.SCALATRACE_TIMING_BINS", std::to_string(timing_bins)},
      {"setting.SCALATRACE_SPILL_DIR", spill_dir},
      {"setting.SCALATRACE_EXIT_WAIT", std::to_string(exit_wait_s)},
      {"setting.SCALATRACE_CLUSTERS", std::to_string(clusters)},
      {"setting.SCALATRACE_LOSSY", lossy == 0 ? std::string("off") : std::to_string(lossy)},
  };
}

}  // namespace scalatrace::pmpi
