#include "communicators.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "scalatrace/support/errors.hpp"

namespace scalatrace::replay {
namespace {

CommInfo info_of(MPI_Comm comm) {
  CommInfo c;
  c.handle = comm;
  if (comm != MPI_COMM_NULL) {
    PMPI_Comm_rank(comm, &c.rank);
    PMPI_Comm_size(comm, &c.size);
  }
  return c;
}

std::string list_text(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size() && i < 16; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  if (v.size() > 16) s += ",...";
  return s + "]";
}

}  // namespace

Communicators::Communicators(const CommTable& table, int world_rank) : table_(table), world_rank_(world_rank) {
  comms_[0] = info_of(MPI_COMM_WORLD);
  comms_[1] = info_of(MPI_COMM_SELF);
}

const CommInfo& Communicators::get(std::int64_t id) const {
  auto it = comms_.find(id);
  if (it == comms_.end() || it->second.handle == MPI_COMM_NULL)
    throw FormatError("communicator id " + std::to_string(id) + " is not live on rank " + std::to_string(world_rank_) +
                      " (never created, or freed)");
  return it->second;
}

std::vector<std::int64_t> Communicators::recorded_members(std::int64_t id) const {
  const CommEntry* entry = table_.find(id, world_rank_);
  if (!entry)
    throw FormatError("the trace's communicator table has no communicator " + std::to_string(id) + " for rank " +
                      std::to_string(world_rank_));
  return entry->members.to_vector();
}

std::vector<int> Communicators::to_comm_ranks(const CommInfo& comm, const std::vector<std::int64_t>& world) const {
  MPI_Group world_group, group;
  PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
  PMPI_Comm_group(comm.handle, &group);
  std::vector<int> in(world.begin(), world.end()), out(world.size(), MPI_UNDEFINED);
  if (!in.empty()) PMPI_Group_translate_ranks(world_group, static_cast<int>(in.size()), in.data(), group, out.data());
  PMPI_Group_free(&group);
  PMPI_Group_free(&world_group);
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] == MPI_UNDEFINED)
      throw FormatError("recorded communicator member (world rank " + std::to_string(world[i]) +
                        ") is not in its parent communicator");
  return out;
}

void Communicators::check_members(MPI_Comm comm, const std::vector<std::int64_t>& expected, const Event& e) const {
  std::vector<std::int64_t> got;
  if (comm != MPI_COMM_NULL) {
    CommInfo c = info_of(comm);
    MPI_Group world_group, group;
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    PMPI_Comm_group(comm, &group);
    std::vector<int> in(static_cast<std::size_t>(c.size)), out(in.size());
    for (int i = 0; i < c.size; ++i) in[static_cast<std::size_t>(i)] = i;
    PMPI_Group_translate_ranks(group, c.size, in.data(), world_group, out.data());
    PMPI_Group_free(&group);
    PMPI_Group_free(&world_group);
    got.assign(out.begin(), out.end());
  }
  if (got != expected)
    throw FormatError("MPI_" + std::string(op_name(e.op)) + " created communicator " +
                      std::to_string(e[Field::NewComm]) + " with world ranks " + list_text(got) +
                      " but the trace records " + list_text(expected));
}

// Split `parent` into the recorded groups: color = parent rank of the group's first member,
// key = position in the group (MPI_UNDEFINED for ranks outside every group).
MPI_Comm Communicators::split_like(const CommInfo& parent, const std::vector<int>& members) {
  int color = MPI_UNDEFINED, key = 0;
  auto me = std::find(members.begin(), members.end(), parent.rank);
  if (me != members.end()) {
    color = members.front();
    key = static_cast<int>(me - members.begin());
  }
  MPI_Comm out = MPI_COMM_NULL;
  MPI_Comm_split(parent.handle, color, key, &out);
  return out;
}

// MPI_Cart_create with the recorded number of dimensions when the recorded members are the
// parent's first n ranks in order (what MPICH produces, reorder or not): dims from
// MPI_Dims_create, non-periodic, no reorder. Otherwise a split reproducing the members.
MPI_Comm Communicators::cart_create(const CommInfo& parent, const Event& e, const std::vector<int>& members) {
  int n = static_cast<int>(members.size());
  int in_order = 1;
  for (int i = 0; i < n; ++i) in_order &= members[static_cast<std::size_t>(i)] == i;
  // Ranks outside the new communicator do not know its size: agree on it (hidden from a
  // collector by using PMPI).
  int local[2] = {n, in_order ? 1 : 0}, agreed[2] = {0, 0};
  int send_max[2] = {local[0], -local[1]};
  PMPI_Allreduce(send_max, agreed, 2, MPI_INT, MPI_MAX, parent.handle);
  int size = agreed[0];
  bool all_in_order = -agreed[1] == 1;
  int ndims = static_cast<int>(e[Field::Count]);
  if (!all_in_order || ndims < 1 || ndims > 64 || size < 1) return split_like(parent, members);
  std::vector<int> dims(static_cast<std::size_t>(ndims), 0), periods(dims.size(), 0);
  PMPI_Dims_create(size, ndims, dims.data());
  MPI_Comm out = MPI_COMM_NULL;
  MPI_Cart_create(parent.handle, ndims, dims.data(), periods.data(), 0, &out);
  return out;
}

// MPI_Cart_sub with the remain_dims whose sub-grid has exactly the recorded members (tried in
// a fixed order; every rank must find the same one), else a split reproducing the members.
MPI_Comm Communicators::cart_sub(const CommInfo& parent, const std::vector<int>& members) {
  int topo = MPI_UNDEFINED;
  PMPI_Topo_test(parent.handle, &topo);
  int choice = -1;
  std::vector<int> remain;
  if (topo == MPI_CART) {
    int ndims = 0;
    PMPI_Cartdim_get(parent.handle, &ndims);
    std::vector<int> dims(static_cast<std::size_t>(ndims)), periods(dims.size()), coords(dims.size());
    PMPI_Cart_get(parent.handle, ndims, dims.data(), periods.data(), coords.data());
    std::vector<std::vector<int>> all_coords(static_cast<std::size_t>(parent.size));
    for (int r = 0; r < parent.size; ++r) {
      all_coords[static_cast<std::size_t>(r)].resize(dims.size());
      PMPI_Cart_coords(parent.handle, r, ndims, all_coords[static_cast<std::size_t>(r)].data());
    }
    if (ndims <= 16) {
      for (int mask = 0; mask < (1 << ndims) && choice < 0; ++mask) {
        std::vector<int> sub;
        for (int r = 0; r < parent.size; ++r) {
          bool same = true;
          for (int d = 0; d < ndims; ++d)
            if (!(mask & (1 << d)) && all_coords[static_cast<std::size_t>(r)][static_cast<std::size_t>(d)] !=
                                          coords[static_cast<std::size_t>(d)])
              same = false;
          if (same) sub.push_back(r);
        }
        if (sub == members) choice = mask;
      }
    }
    remain.resize(static_cast<std::size_t>(ndims));
    for (int d = 0; d < ndims; ++d) remain[static_cast<std::size_t>(d)] = (choice >> d) & 1;
  }
  int range[2] = {choice, -choice}, agreed[2];
  PMPI_Allreduce(range, agreed, 2, MPI_INT, MPI_MAX, parent.handle);
  bool consistent = choice >= 0 && agreed[0] == choice && -agreed[1] == choice;
  int all_ok = consistent ? 1 : 0, ok = 0;
  PMPI_Allreduce(&all_ok, &ok, 1, MPI_INT, MPI_MIN, parent.handle);
  if (!ok) return split_like(parent, members);
  MPI_Comm out = MPI_COMM_NULL;
  MPI_Cart_sub(parent.handle, remain.data(), &out);
  return out;
}

void Communicators::create(const Event& e) {
  const CommInfo& parent = get(e[Field::Comm]);
  std::int64_t new_id = e[Field::NewComm];
  std::vector<std::int64_t> world_members;
  if (new_id != kNoComm) world_members = recorded_members(new_id);
  std::vector<int> members = to_comm_ranks(parent, world_members);

  MPI_Comm out = MPI_COMM_NULL;
  switch (e.op) {
    case Op::Comm_dup:
      MPI_Comm_dup(parent.handle, &out);
      break;
    case Op::Comm_split: {
      std::int64_t color = e[Field::Color];
      MPI_Comm_split(parent.handle, color == kUndefined ? MPI_UNDEFINED : static_cast<int>(color),
                     static_cast<int>(e[Field::Key]), &out);
      break;
    }
    case Op::Comm_create: {
      MPI_Group parent_group, group;
      PMPI_Comm_group(parent.handle, &parent_group);
      if (members.empty())
        group = MPI_GROUP_EMPTY;
      else
        PMPI_Group_incl(parent_group, static_cast<int>(members.size()), members.data(), &group);
      MPI_Comm_create(parent.handle, group, &out);
      if (group != MPI_GROUP_EMPTY) PMPI_Group_free(&group);
      PMPI_Group_free(&parent_group);
      break;
    }
    case Op::Cart_create:
      out = cart_create(parent, e, members);
      break;
    case Op::Cart_sub:
      out = cart_sub(parent, members);
      break;
    default:
      out = split_like(parent, members);
      break;
  }
  check_members(out, world_members, e);
  if (new_id != kNoComm) comms_[new_id] = info_of(out);
}

void Communicators::free(const Event& e) {
  auto it = comms_.find(e[Field::Comm]);
  if (it == comms_.end() || it->second.handle == MPI_COMM_NULL || e[Field::Comm] <= 1)
    throw FormatError("MPI_Comm_free of communicator " + std::to_string(e[Field::Comm]) +
                      ", which is not live on rank " + std::to_string(world_rank_));
  MPI_Comm_free(&it->second.handle);
  comms_.erase(it);
}

}  // namespace scalatrace::replay
