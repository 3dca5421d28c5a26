#pragma once
// Per-rank recorder: owns the state of one MPI process's recording (settings, call-site table
// and cache, communicator registry, request tracker, names of Op::Other functions, raw writer)
// and finishes the recording at MPI_Finalize, MPI_Abort or process exit, whichever comes first.
// All mutable state is guarded by mu (MPI_THREAD_MULTIPLE programs call in from any thread).
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/callsite_capture.hpp"
#include "capture/clock.hpp"
#include "capture/walk_memo.hpp"
#include "finish/spill_file.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/raw.hpp"
#include "scalatrace/model/callsite.hpp"
#include "scalatrace/model/event.hpp"
#include "state/comm_registry.hpp"
#include "state/request_tracker.hpp"
#include "state/settings.hpp"

namespace scalatrace::pmpi {

class Recorder {
 public:
  /// The running recorder, or nullptr (before MPI is initialised, after the recording finished).
  /// Starts the recorder lazily if MPI was initialised behind the collector's back (mpi_f08
  /// calls PMPI_Init directly).
  /// Hidden: called directly by every wrapper before its start timestamp, not through the PLT.
  __attribute__((visibility("hidden"))) static Recorder* running();
  /// Starts the recorder (idempotent). `at_init`: called right after PMPI_Init* succeeded on
  /// every rank, so a collective call (the private communicator's PMPI_Comm_dup) is safe.
  static Recorder* start(bool at_init);
  /// Finishes the recording (idempotent); `why` is "MPI_Finalize", "MPI_Abort" or "exit".
  static void finish(const char* why);

  /// Appends one finished event (timing filled in here). Caller holds mu; calls returned() next.
  void append(Event& e, std::uint64_t start_ns, std::uint64_t end_ns);
  /// The collector is about to return control to the program after the call that ended at
  /// `end_ns`: the next event's compute_ns starts now; the time since `end_ns` (call site,
  /// recording, compression) is the tool's, not the program's (docs/collector.md, "The
  /// collector's own time"). Caller holds mu.
  /// With SCALATRACE_OWN_TIME=compute the next compute_ns starts at `end_ns` instead: the
  /// collector's time stays in it (probes excepted: they run only when compensating).
  void returned(std::uint64_t end_ns) {
    const std::uint64_t returned_ns = now_ns();
    if (returned_ns > end_ns) collector_ns_ += returned_ns - end_ns;
    const std::uint64_t mark = settings.own_time_in_compute ? end_ns : returned_ns;
    if (mark > last_end_ns_) last_end_ns_ = mark;
  }
  /// Overhead compensation (docs/collector.md, "The collector's own time"): right after MPI_Init,
  /// times 64 back-to-back MPI_Comm_rank calls through the wrappers, which in this mode record
  /// nothing (`probing()`), and takes the median gap between one call's last clock read and the
  /// next one's first as `call_gap_ns`: the program time a recorded call costs outside the
  /// collector's clock reads (entry, exit). Every later compute_ns has it taken out.
  void measure_call_gap();
  /// True while measure_call_gap() runs: a wrapper then only times itself (`probe`).
  bool probing() const { return probing_; }
  /// One probe call, started at `start_ns` (caller holds mu; calls returned() next).
  void probe(std::uint64_t start_ns);
  /// Call-site id of a call from `caller` whose stack is not remembered (walk_memo.hpp): walks
  /// the stack with libunwind (outside the lock, which `lock` holds on entry and on return),
  /// interns the call site and, if `learn` and the place gave this call site before, remembers
  /// the walk.
  std::uint32_t walk_site(const CallerKey& caller, bool learn, std::unique_lock<std::mutex>& lock);
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
  WalkMemo walks;
  CommRegistry comms;
  RequestTracker requests;

 private:
  Recorder() = default;
  void begin(bool at_init);
  void end(const char* why);
  /// At exit without MPI_Finalize: waits (at most settings.exit_wait_s) until every rank has
  /// finished its recording, so that no rank's exit makes the process manager kill the
  /// others before they flushed. True if all ranks arrived.
  bool wait_for_all_ranks();
  std::map<std::string, std::string> metadata(const char* why) const;
  /// Rank 0's summary of the raw streams (collective over sync_comm_ when ranks_in_step).
  void report_raw_streams(bool ranks_in_step);

  std::vector<std::string> names_;
  std::unordered_map<const char*, std::int64_t> name_ids_;
  /// Direct-mapped cache in front of name_ids_ (a wrapper's name literal -> its id).
  std::array<std::pair<const char*, std::int64_t>, 64> recent_names_{};
  RawWriter raw_;
  std::string raw_path_;
  bool raw_failed_ = false;  ///< this rank's raw stream could not be (completely) written
  std::uint64_t events_ = 0;
  /// This rank's recorded time (recorded_time_ns summed over its events): the merge's measure of
  /// a difference that adds up (MergeConfig::rank_time_ns, the mean over the ranks).
  double recorded_ns_ = 0;
  std::uint64_t stack_walks_ = 0;     ///< calls whose stack was walked (not remembered)
  std::uint64_t walks_learned_ = 0;   ///< of them, walks also described for the memo
  std::uint64_t walk_ns_ = 0;         ///< time in walk_site: walking, describing, interning
  unsigned threads_calling_mpi_ = 0;  ///< distinct threads that made a recorded MPI call
  /// When the collector last returned control to the program (end of its last append).
  std::uint64_t last_end_ns_ = 0;
  /// The collector's own time after the calls it recorded, left out of every compute_ns.
  std::uint64_t collector_ns_ = 0;
  /// measure_call_gap()'s result, taken out of every compute_ns (0: not measured, or off).
  std::uint64_t call_gap_ns_ = 0;
  bool probing_ = false;
  static constexpr std::size_t kProbeCalls = 64;
  std::array<std::uint64_t, kProbeCalls> probe_gaps_{};
  std::size_t probes_ = 0;
  bool probe_started_ = false;
  std::map<std::string, std::string> start_metadata_;
  // Compressed mode (SCALATRACE_OUT): the rank's online loop compressor, fed in append();
  // merged over the radix tree in end() (write_compressed). Null when compressed output is
  // off or not available in this build.
  std::unique_ptr<IntraCompressor> compressor_;
  /// Where the compressor's queue goes when it exceeds SCALATRACE_MEMORY (spill_file.hpp).
  std::unique_ptr<SpillFile> spill_;
  /// The compressor's spill sink: encodes `nodes` as a rank segment into spill_. False (the
  /// nodes left intact, a warning printed) if the segment could not be written.
  bool spill_segment(std::vector<Node>& nodes);
  /// Private duplicate of MPI_COMM_WORLD (MPI_COMM_NULL after a lazy start).
  MPI_Comm sync_comm_ = MPI_COMM_NULL;
  void write_compressed(const char* why, bool ranks_in_step);
};

/// True if this build can write compressed traces (the tree merge is linked in).
bool compressed_output_available();

}  // namespace scalatrace::pmpi
