#pragma once
// Test support: a compressed node list as one line of text (loops with their trip counts,
// events as op and call site, presence after '?'), for assertion messages and exact-shape
// tests, and the number of event nodes in it.
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "scalatrace/model/trace.hpp"

namespace scalatrace::test_support {

/// A value sequence: its values when short ("[1 0 1]"), else its compressed form.
inline std::string seq_text(const ValueSeq& v) {
  if (v.size() > 12) return v.to_string();
  std::string out = "[";
  for (auto x : v.to_vector()) out += (out.size() > 1 ? " " : "") + std::to_string(x);
  return out + "]";
}

/// E.g. "Init9 L[15]{Irecv1 Allreduce4?[0 1x14]} Finalize10 " (per-rank nodes).
inline std::string shape(const std::vector<Node>& nodes) {
  std::ostringstream os;
  for (const auto& n : nodes) {
    if (n.loop) {
      os << "L" << seq_text(n.loop->trips.alternatives.at(0).first) << "{" << shape(n.loop->body) << "}";
    } else {
      os << op_name(n.event->op) << n.event->site;
    }
    if (!n.presence.empty()) os << "?" << seq_text(n.presence.alternatives.at(0).first);
    os << " ";
  }
  return os.str();
}

/// Event nodes in `nodes` and every loop body below them.
inline std::size_t event_nodes(const std::vector<Node>& nodes) {
  std::size_t n = 0;
  for (const auto& node : nodes) n += node.loop ? event_nodes(node.loop->body) : 1;
  return n;
}

}  // namespace scalatrace::test_support
