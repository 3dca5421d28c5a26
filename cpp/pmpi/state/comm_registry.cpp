#include "state/comm_registry.hpp"

#include "scalatrace/model/event.hpp"

namespace scalatrace::pmpi {

void CommRegistry::start() {
  by_handle_.clear();
  table_.entries.clear();
  next_id_ = 0;
  last_ = MPI_COMM_NULL;
  last_info_ = nullptr;
  add(MPI_COMM_WORLD);
  add(MPI_COMM_SELF);
}

const CommInfo& CommRegistry::add(MPI_Comm comm) {
  CommInfo info;
  info.id = next_id_++;
  PMPI_Comm_rank(comm, &info.rank);
  PMPI_Comm_size(comm, &info.size);
  info.array_size = info.size;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) PMPI_Comm_remote_size(comm, &info.array_size);

  std::vector<std::int64_t> members(static_cast<std::size_t>(info.size));
  MPI_Group group, world;
  PMPI_Comm_group(comm, &group);
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> local(static_cast<std::size_t>(info.size)), global(local.size());
  for (int i = 0; i < info.size; ++i) local[static_cast<std::size_t>(i)] = i;
  PMPI_Group_translate_ranks(group, info.size, local.data(), world, global.data());
  PMPI_Group_free(&group);
  PMPI_Group_free(&world);
  for (std::size_t i = 0; i < global.size(); ++i) members[i] = global[i];

  CommEntry entry;
  entry.id = info.id;
  entry.members = RankList::from_sequence(members);
  table_.entries.push_back(std::move(entry));
  last_ = MPI_COMM_NULL;
  auto& slot = by_handle_[comm];
  slot = info;
  return slot;
}

const CommInfo& CommRegistry::lookup(MPI_Comm comm) {
  if (comm == last_ && last_info_) return *last_info_;
  auto it = by_handle_.find(comm);
  const CommInfo& info = it != by_handle_.end() ? it->second : add(comm);
  last_ = comm;
  last_info_ = &info;
  return info;
}

std::int64_t CommRegistry::created(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return kNoComm;
  by_handle_.erase(comm);  // a reused handle is a new communicator
  last_ = MPI_COMM_NULL;
  return add(comm).id;
}

void CommRegistry::freed(MPI_Comm comm) {
  by_handle_.erase(comm);
  last_ = MPI_COMM_NULL;
  last_info_ = nullptr;
}

}  // namespace scalatrace::pmpi
