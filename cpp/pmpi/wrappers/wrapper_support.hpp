#pragma once
// The one copy of the wrapper boilerplate used by every generated wrapper (wrappers.cpp):
// reentrancy guard, timing, call-site capture, locking, failure handling. What each op records
// is in record_ops.hpp, selected by the generator's RECORD table.
#include <mpi.h>

#include <cstdio>
#include <exception>

#include "state/recorder.hpp"
#include "wrappers/record_ops.hpp"

namespace scalatrace::pmpi {

/// True while this thread is inside a wrapper: MPI calls made meanwhile (by MPI itself or by
/// callbacks) pass straight through and are not recorded.
/// (initial-exec TLS: no __tls_get_addr call on the fast path.)
inline thread_local bool t_in_wrapper __attribute__((tls_model("initial-exec"))) = false;

class Call {
 public:
  Call(Op op, const char* name) noexcept : op_(op), name_(name) {
    if (t_in_wrapper) return;
    Recorder* r = Recorder::running();
    if (!r) return;
    t_in_wrapper = true;
    rec_.recorder = r;
    start_ns_ = now_ns();
  }
  ~Call() {
    if (rec_.recorder) t_in_wrapper = false;
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  bool active() const { return rec_.recorder != nullptr; }

  /// Runs the op's "pre" recording (state the call will overwrite, e.g. request handles).
  template <class F>
  void before(F&& f) noexcept {
    try {
      std::lock_guard<std::mutex> lock(rec_.recorder->mu);
      f(rec_);
    } catch (...) {
      broken_ = true;
    }
  }

  /// Completes and appends the event after the PMPI call returned rc.
  template <class F>
  void after(int rc, F&& f) noexcept {
    const std::uint64_t end_ns = now_ns();
    Recorder& r = *rec_.recorder;
    try {
      // The call site: remembered if the caller's stack is one seen before (walk_memo.hpp),
      // otherwise walked with libunwind.
      void* const frame = __builtin_frame_address(0);
      const CallerKey caller = CallerKey::of(frame);
      std::unique_lock<std::mutex> lock(r.mu);
      std::uint32_t site = 0;
      const WalkMemo::Lookup found = r.walks.find(caller, site);
      if (found != WalkMemo::Lookup::Hit) site = r.walk_site(frame, found == WalkMemo::Lookup::Learn, lock);
      Event& e = rec_.e;
      e.op = op_;
      e.site = site;
      if (op_ == Op::Other) e[Field::NameId] = r.name_id(name_);
      rec_.ok = rc == MPI_SUCCESS && !broken_;
      if (rec_.ok) {
        f(rec_);
      } else if (op_creates_request(op_)) {
        r.requests.created(MPI_REQUEST_NULL, false);  // keep the handle buffer aligned
      }
      r.append(e, start_ns_, end_ns);
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "scalatrace: recording %s failed: %s\n", name_, ex.what());
    } catch (...) {
      std::fprintf(stderr, "scalatrace: recording %s failed\n", name_);
    }
  }

 private:
  Op op_;
  const char* name_;
  Rec rec_;
  std::uint64_t start_ns_ = 0;
  bool broken_ = false;
};

/// MPI_Init / MPI_Init_thread: the recorder starts once PMPI_Init* succeeded.
template <class F>
int wrap_init(Op op, F&& pmpi_init, int required, int* provided) {
  (void)required;
  (void)provided;
  const std::uint64_t start_ns = now_ns();
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
  } catch (...) {
    std::fprintf(stderr, "scalatrace: recording MPI_Init failed\n");
  }
  t_in_wrapper = false;
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
