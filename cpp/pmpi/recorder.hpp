#pragma once
// Per-rank recorder: owns the state of one MPI process's recording (settings, call-site table
// and cache, communicator registry, request tracker, names of Op::Other functions, raw writer)
// and finishes the recording at MPI_Finalize, MPI_Abort or process exit, whichever comes first.
// All mutable state is guarded by mu (MPI_THREAD_MULTIPLE programs call in from any thread).
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "callsite_capture.hpp"
#include "clock.hpp"
#include "comm_registry.hpp"
#include "request_tracker.hpp"
#include "scalatrace/callsite.hpp"
#include "scalatrace/event.hpp"
#include "scalatrace/raw.hpp"
#include "settings.hpp"

namespace scalatrace::pmpi {

class Recorder {
 public:
  /// The running recorder, or nullptr (before MPI is initialised, after the recording finished).
  /// Starts the recorder lazily if MPI was initialised behind the collector's back (mpi_f08
  /// calls PMPI_Init directly).
  static Recorder* running();
  /// Starts the recorder after PMPI_Init / PMPI_Init_thread succeeded (idempotent).
  static Recorder* start();
  /// Finishes the recording (idempotent); `why` is "MPI_Finalize", "MPI_Abort" or "exit".
  static void finish(const char* why);

  /// Appends one finished event (timing filled in here). Caller holds mu.
  void append(Event& e, std::uint64_t start_ns, std::uint64_t end_ns);
  /// Id of an Op::Other function name (pointer-keyed: the wrappers pass string literals).
  std::int64_t name_id(const char* name);
  /// Reports a problem of the collector itself on stderr (never throws).
  void warn(const std::string& what);

  std::mutex mu;
  Settings settings;
  int rank = 0;
  int nranks = 1;
  CallSiteCapture capture;
  CallSiteTable sites;
  CommRegistry comms;
  RequestTracker requests;

 private:
  Recorder() = default;
  void begin();
  void end(const char* why);
  std::map<std::string, std::string> metadata(const char* why) const;

  std::vector<std::string> names_;
  std::unordered_map<const char*, std::int64_t> name_ids_;
  RawWriter raw_;
  std::string raw_path_;
  std::uint64_t events_ = 0;
  std::uint64_t last_end_ns_ = 0;
  std::map<std::string, std::string> start_metadata_;
  // Integration point (compressed mode, SCALATRACE_OUT): an IntraCompressor fed in append()
  // and merged over the radix tree in end(). See docs/collector.md.
};

}  // namespace scalatrace::pmpi
