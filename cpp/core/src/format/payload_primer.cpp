// The texts the entropy coder's model reads before a payload (docs/format.md, "Entropy coding",
// "Primer"). A primer is part of the format: the coded bytes of a file depend on it, so each
// format version names its primer and a primer never changes once files use it.
#include <map>
#include <string>
#include <string_view>

#include "format/sct_codec.hpp"

namespace scalatrace::sct {
namespace {

#include "format/payload_primer_v11.inc"

/// Versions 8 and 9: the text as those writers used it. It was meant to be longer (keys and
/// values of the metadata, library paths, routine names), but a NUL byte in its C++ literal ended
/// it after 536 bytes, and some hex escapes swallowed the letters after them; these are exactly
/// the 536 bytes the files were coded with (a literal ends after each escape, so that no escape
/// runs into the letters after it).
constexpr std::string_view kPrimerV8 =
    "clock\x03"
    "tsc\x9c"
    "ollector\x1a"
    "scalatrace libscalatrace.so\xcc"
    "ommand_line\xec"
    "ompress"
    "or_peak_bytes\xda"
    "te&-01-01T00:00:00Znvents\xbf"
    "inished_by\x0c"
    "MPI_Finalize\x04"
    "host\x0e"
    "m"
    "erge_seconds\x80"
    ".012345\x0b"
    "mpi_libraryMPICH Version: 4.0.2; MPICH Release date: Thu Apr  7"
    " 12:34:45 CDT 2022; MPICH ABI: 14:2:2; MPICH Device: ch4:ofi; Open MPI v4.1.4, package: Debian O"
    "penMPI, ident: 4.1.4, repo rev: \x11"
    "peak_memory_bytes\x07"
    "program\x1b"
    "setting.SCALATRACE_"
    "CLUSTERS\x10\x1d"
    "setting.SCALATRACE_EXIT_WAIT0\x1c"
    "setting.SCALATRACE_HIST_BINS\x14\x19"
    "se"
    "tting.SCALATRACE_MEMORYV\x16"
    "setting.SCALATRACE_OUT\x16"
    "setting.SCALATRACE_RAW";

/// Version 10, part 1: section 1 as the collector writes it for a typical run (the scale basis
/// of a 4-rank trace and the metadata keys with their default or usual values), so that a trace's
/// first bytes, which are mostly these, are predicted by the match model from the first byte.
std::string typical_metadata_section() {
  const std::map<std::string, std::string> metadata = {
      {"clock", "tsc"},
      {"collector", "scalatrace libscalatrace.so"},
      {"command_line", "./a.out"},
      {"compressor_peak_bytes", "65536"},
      {"date", "2026-01-01T00:00:00Z"},
      {"events", "100"},
      {"finished_by", "MPI_Finalize"},
      {"host", "localhost"},
      {"merge_seconds", "0.012345"},
      {"mpi_library",
       "MPICH Version: 4.0.2; MPICH Release date: Thu Apr  7 12:34:45 CDT 2022; MPICH ABI: 14:2:2; MPICH Device: "
       "ch4:ofi"},
      {"peak_memory_bytes", "25165824"},
      {"program", "./a.out"},
      {"setting.SCALATRACE_CLUSTERS", "0"},
      {"setting.SCALATRACE_EXIT_WAIT", "30"},
      {"setting.SCALATRACE_HIST_BINS", "4"},
      {"setting.SCALATRACE_LOSSY", "off"},
      {"setting.SCALATRACE_MEMORY", "268435456"},
      {"setting.SCALATRACE_OUT", "trace.sct"},
      {"setting.SCALATRACE_RAW", ""},
      {"setting.SCALATRACE_SITE_MATCH", "1"},
      {"setting.SCALATRACE_SITE_THRESHOLD", "0"},
      {"setting.SCALATRACE_SPILL_DIR", "/tmp"},
      {"setting.SCALATRACE_STACK_DEPTH", "16"},
      {"setting.SCALATRACE_STACK_MEMO", "1"},
      {"setting.SCALATRACE_TIMING_BINS", "2"},
      {"setting.SCALATRACE_WINDOW", "512"},
      {"stack_walks", "10"},
  };
  const std::int64_t basis[] = {4};
  wire::Writer body;
  put_metadata_body(body, metadata, basis);
  return std::move(body.data());
}

/// Version 10, part 2: text that recurs in the other sections (library paths of the call-site
/// table, routine names, names of MPI functions recorded as Other), each length-prefixed as the
/// format writes text.
std::string typical_texts() {
  constexpr std::string_view kTexts[] = {
      "MPICH Version: 4.1; MPICH Device: ch4:ucx",
      "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: ",
      "/lib/x86_64-linux-gnu/libc.so.6",
      "/usr/lib/x86_64-linux-gnu/libc.so.6",
      "/usr/lib/x86_64-linux-gnu/libmpich.so.12",
      "/usr/lib/x86_64-linux-gnu/libmpichfort.so.12",
      "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
      "/usr/lib/x86_64-linux-gnu/libgfortran.so.5",
      "main",
      "MAIN__",
      "_start",
      "__libc_start_main",
      "MPI_Comm_rank",
      "MPI_Comm_size",
      "MPI_Wtime",
      "MPI_Type_commit",
      "MPI_Type_free",
      "MPI_Get_count",
      "MPI_Type_vector",
      "MPI_Type_contiguous",
      "MPI_Get_address",
      "MPI_Dims_create",
      "MPI_Cart_create",
      "MPI_Cart_shift",
      "MPI_Cart_coords",
      "MPI_Comm_group",
      "MPI_Group_free",
      "MPI_Comm_free",
      "MPI_Op_create",
      "MPI_Op_free",
      "MPI_Initialized",
      "MPI_Abort",
  };
  wire::Writer w;
  for (const std::string_view text : kTexts) put_text(w, text);
  return std::move(w.data());
}

}  // namespace

std::string_view payload_primer(std::uint32_t version) {
  if (version < 10) return kPrimerV8;
  static const std::string primer_v10 = typical_metadata_section() + typical_texts();
  if (version == 10) return primer_v10;
  // Version 11: the same, then the payloads of two typical traces (their tables, node trees
  // and timing columns), so that a small trace's structure is predicted from its first bytes.
  static_assert(sizeof(kTypicalPayloadsV11) == kTypicalPayloadsV11Size + 1);
  static const std::string primer_v11 = std::string(kTypicalPayloadsV11, kTypicalPayloadsV11Size) + primer_v10;
  return primer_v11;
}

}  // namespace scalatrace::sct
