#pragma once
// Communicators during replay: recorded comm ids mapped to live MPI communicators, recreated
// from the trace's CommTable when the replay reaches their CommCreate event.
#include <mpi.h>

#include <cstdint>
#include <map>

#include "scalatrace/model/comm_table.hpp"
#include "scalatrace/model/event.hpp"

namespace scalatrace::replay {

struct CommInfo {
  MPI_Comm handle = MPI_COMM_NULL;
  int rank = 0;  ///< this process's rank in it
  int size = 0;
};

class Communicators {
 public:
  Communicators(const CommTable& table, int world_rank);
  /// The live communicator of a recorded id; throws FormatError if there is none.
  const CommInfo& get(std::int64_t id) const;
  /// Issues the CommCreate event `e` (collective over its parent) and maps Field::NewComm.
  void create(const Event& e);
  /// Issues MPI_Comm_free for the event's communicator.
  void free(const Event& e);

 private:
  std::vector<std::int64_t> recorded_members(std::int64_t id) const;
  std::vector<int> to_comm_ranks(const CommInfo& comm, const std::vector<std::int64_t>& world) const;
  MPI_Comm split_like(const CommInfo& parent, const std::vector<int>& members);
  MPI_Comm cart_create(const CommInfo& parent, const Event& e, const std::vector<int>& members);
  MPI_Comm cart_sub(const CommInfo& parent, const std::vector<int>& members);
  void check_members(MPI_Comm comm, const std::vector<std::int64_t>& expected, const Event& e) const;

  const CommTable& table_;
  int world_rank_;
  std::map<std::int64_t, CommInfo> comms_;
};

}  // namespace scalatrace::replay
