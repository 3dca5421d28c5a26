#pragma once
// The one copy of the wrapper boilerplate used by every generated wrapper (wrappers.cpp):
// reentrancy guard, timing, call-site capture, locking, failure handling. What each op records
// is in record_ops.hpp, selected by the generator's RECORD table.
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <optional>

#include "state/recorder.hpp"
#include "wrappers/record_ops.hpp"

namespace scalatrace::pmpi {

/// True while this thread is inside a wrapper: MPI calls made meanwhile (by MPI itself or by
/// callbacks) pass straight through and are not recorded.
/// (initial-exec TLS: no __tls_get_addr call on the fast path.)
inline thread_local bool t_in_wrapper __attribute__((tls_model("initial-exec"))) = false;

/// One recorded call. Only what the program's time line needs is done between the program's call
/// and `start_ns_`, and between the last clock read and the return: the event record (`Rec`, about
/// 320 bytes whose zeroing and vector members cost ~25 ns per call) is built after the PMPI call
/// returned (or by `before`, for ops that record state the call overwrites) and torn down before
/// the collector's last clock read, so its cost is the collector's own time, left out of the trace
/// (docs/collector.md, "The collector's own time").
class Call {
 public:
  Call(Op op, const char* name) noexcept : op_(op), name_(name) {
    if (t_in_wrapper) return;
    Recorder* r = Recorder::running();
    if (!r) return;
    t_in_wrapper = true;
    recorder_ = r;
    start_ns_ = now_ns_after_program();
  }
  ~Call() {
    if (recorder_) t_in_wrapper = false;
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  bool active() const { return recorder_ != nullptr; }

  /// Runs the op's "pre" recording (state the call will overwrite, e.g. request handles).
  template <class F>
  void before(F&& f) noexcept {
    try {
      std::lock_guard<std::mutex> lock(recorder_->mu);
      f(record());
    } catch (...) {
      broken_ = true;
    }
  }

  /// Completes and appends the event after the PMPI call returned rc.
  template <class F>
  void after(int rc, F&& f) noexcept {
    const std::uint64_t end_ns = now_ns();
    Recorder& r = *recorder_;
    if (r.probing()) [[unlikely]] {
      std::lock_guard<std::mutex> lock(r.mu);
      r.probe(start_ns_);
      r.returned(end_ns);
      return;
    }
    try {
      // The call site: remembered if the caller's stack is one seen before (walk_memo.hpp),
      // otherwise walked with libunwind.
      const CallerKey caller = CallerKey::of(__builtin_frame_address(0));
      std::unique_lock<std::mutex> lock(r.mu);
      std::uint32_t site = 0;
      const WalkMemo::Lookup found = r.walks.find(caller, site);
      if (found != WalkMemo::Lookup::Hit) site = r.walk_site(caller, found == WalkMemo::Lookup::Learn, lock);
      Rec& rec = record();
      Event& e = rec.e;
      e.op = op_;
      e.site = site;
      if (op_ == Op::Other) e[Field::NameId] = r.name_id(name_);
      rec.ok = rc == MPI_SUCCESS && !broken_;
      if (rec.ok) {
        f(rec);
      } else if (op_creates_request(op_)) {
        r.requests.created(MPI_REQUEST_NULL, false);  // keep the handle buffer aligned
      }
      r.append(e, start_ns_, end_ns);
      rec_.reset();
      r.returned(end_ns);
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "scalatrace: recording %s failed: %s\n", name_, ex.what());
    } catch (...) {
      std::fprintf(stderr, "scalatrace: recording %s failed\n", name_);
    }
  }

 private:
  Rec& record() {
    if (!rec_) {
      rec_.emplace();
      rec_->recorder = recorder_;
    }
    return *rec_;
  }

  Op op_;
  const char* name_;
  Recorder* recorder_ = nullptr;
  std::optional<Rec> rec_;  ///< built on first use, after the call's start timestamp
  std::uint64_t start_ns_ = 0;
  bool broken_ = false;
};

/// MPI_Init / MPI_Init_thread: the recorder starts once PMPI_Init* succeeded.
template <class F>
int wrap_init(Op op, F&& pmpi_init, int required, int* provided) {
  (void)required;
  (void)provided;
  const std::uint64_t start_ns = now_ns_after_program();
  const int rc = pmpi_init();
  if (rc != MPI_SUCCESS || t_in_wrapper) return rc;
  Recorder* r = Recorder::start(true);
  if (!r) return rc;
  t_in_wrapper = true;
  try {
    const std::uint64_t end_ns = now_ns();
    RawStack stack;
    capture_stack(stack, kMaxStackDepth);
    std::lock_guard<std::mutex> lock(r->mu);
    Event e;
    e.op = op;
    e.site = r->capture.site_id(stack, r->sites, r->settings.stack_depth);
    r->append(e, start_ns, end_ns);
    r->returned(end_ns);
  } catch (...) {
    std::fprintf(stderr, "scalatrace: recording MPI_Init failed\n");
  }
  t_in_wrapper = false;
  r->measure_call_gap();
  return rc;
}

/// MPI_Finalize: records the Finalize event, then finishes the recording while MPI is still
/// usable (compressed mode merges over MPI). Finalize's duration_ns is therefore 0.
inline void before_finalize() noexcept {
  {
    Call call(Op::Finalize, "MPI_Finalize");
    if (!call.active()) return;
    call.after(MPI_SUCCESS, [](Rec&) {});
  }
  Recorder::finish("MPI_Finalize");
}

/// MPI_Abort: records the Abort event and finishes (raw stream closed) before the process dies.
inline void before_abort(MPI_Comm comm, int /*errorcode*/) noexcept {
  {
    Call call(Op::Abort, "MPI_Abort");
    if (!call.active()) return;
    call.after(MPI_SUCCESS, [&](Rec& r) { rec::comm(r, comm); });
  }
  Recorder::finish("MPI_Abort");
}

}  // namespace scalatrace::pmpi
