#pragma once
// Communicator ids per rank: MPI_COMM_WORLD = 0, MPI_COMM_SELF = 1, then creation order. A
// communicator first seen without a creation event (created by a function scalatrace does not
// model, e.g. MPI_Comm_idup) gets the next id when first used. Members are recorded as world
// ranks in communicator rank order (local group for intercommunicators).
#include <mpi.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "scalatrace/model/comm_table.hpp"

namespace scalatrace::pmpi {

struct CommInfo {
  std::int64_t id = 0;
  int rank = 0;        ///< the caller's rank in the communicator
  int size = 0;        ///< number of ranks (local group)
  int array_size = 0;  ///< length of per-rank arrays of collectives (remote size if inter)
};

class CommRegistry {
 public:
  /// Registers WORLD and SELF; call once MPI is initialised.
  void start();
  /// The communicator's info, registering it with the next id if unknown. Must be a valid
  /// communicator other than MPI_COMM_NULL.
  const CommInfo& lookup(MPI_Comm comm);
  /// A communicator just created: registers it (next id); MPI_COMM_NULL -> kNoComm.
  std::int64_t created(MPI_Comm comm);
  /// Forgets the handle (MPI may reuse it); the id stays in the table.
  void freed(MPI_Comm comm);
  const CommTable& table() const { return table_; }

 private:
  const CommInfo& add(MPI_Comm comm);
  std::unordered_map<MPI_Comm, CommInfo> by_handle_;
  CommTable table_;
  std::int64_t next_id_ = 0;
  MPI_Comm last_ = MPI_COMM_NULL;
  const CommInfo* last_info_ = nullptr;
};

}  // namespace scalatrace::pmpi
