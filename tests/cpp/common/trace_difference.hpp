#pragma once
// Test support: structural comparison of traces and a walk over their elastic values.
#include <functional>
#include <string>
#include <vector>

#include "scalatrace/model/trace.hpp"

namespace scalatrace::test_support {

/// Structural equality of two traces, timing histograms aside; describes the first difference.
inline void first_node_difference(const std::vector<Node>& a, const std::vector<Node>& b, const std::string& path,
                                  std::string& diff) {
  if (!diff.empty()) return;
  if (a.size() != b.size()) {
    diff = path + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " nodes";
    return;
  }
  for (std::size_t i = 0; i < a.size() && diff.empty(); ++i) {
    const auto here = path + "/" + std::to_string(i);
    const Node &x = a[i], &y = b[i];
    if (!(x.ranks == y.ranks))
      diff = here + ": ranks " + x.ranks.to_string() + " vs " + y.ranks.to_string();
    else if (!(x.presence == y.presence))
      diff = here + ": presence";
    else if (x.is_loop() != y.is_loop())
      diff = here + ": loop vs event";
    else if (x.is_loop()) {
      if (!(x.loop->trips == y.loop->trips))
        diff = here + ": trip counts";
      else
        first_node_difference(x.loop->body, y.loop->body, here, diff);
    } else {
      const auto &e = *x.event, &f = *y.event;
      if (e.op != f.op || e.site != f.site) diff = here + ": op/site";
      for (std::size_t k = 0; k < kFieldCount && diff.empty(); ++k)
        if (!(e.fields[k] == f.fields[k])) diff = here + ": field " + std::string(field_name(static_cast<Field>(k)));
      for (std::size_t k = 0; k < kArrayFieldCount && diff.empty(); ++k)
        if (!(e.arrays[k] == f.arrays[k]))
          diff = here + ": array " + std::string(array_field_name(static_cast<ArrayField>(k)));
    }
  }
}

/// "" if `a` and `b` have the same rank count, nodes (timing histograms aside) and communicator
/// table, else their first difference (with its node path).
inline std::string trace_difference(const Trace& a, const Trace& b) {
  if (a.nranks != b.nranks) return "nranks " + std::to_string(a.nranks) + " vs " + std::to_string(b.nranks);
  std::string diff;
  first_node_difference(a.nodes, b.nodes, "", diff);
  if (!diff.empty()) return diff;
  if (a.comms.entries.size() != b.comms.entries.size()) return "communicator table sizes";
  for (std::size_t i = 0; i < a.comms.entries.size(); ++i) {
    const auto &x = a.comms.entries[i], &y = b.comms.entries[i];
    if (x.id != y.id || !(x.members == y.members) || !(x.holders == y.holders))
      return "communicator entry " + std::to_string(i) + ": " + x.members.to_string() + " held by " +
             x.holders.to_string() + " vs " + y.members.to_string() + " held by " + y.holders.to_string();
  }
  return "";
}

/// Calls `f` on every elastic value of `nodes`: presence, trip counts, fields and call-site ids
/// (`nodes` const or not; `f` takes the elastic value as `nodes` gives it).
template <class Nodes, class F>
void for_each_elastic(Nodes& nodes, F&& f) {
  for (auto& n : nodes) {
    f(n.presence);
    if (n.is_loop()) {
      f(n.loop->trips);
      for_each_elastic(n.loop->body, f);
      continue;
    }
    for (auto& v : n.event->fields) f(v);
    f(n.event->site_ids);
  }
}

}  // namespace scalatrace::test_support
