#include "scalatrace/model/event.hpp"

#include <array>
#include <string>

namespace scalatrace {
namespace {

constexpr std::array<std::string_view, kFieldCount> kFieldNames = {
    "Comm", "Peer",  "Tag",     "Bytes", "DtSize", "Peer2", "Tag2", "Bytes2", "DtSize2",
    "Root", "RedOp", "NewComm", "Color", "Key",    "Index", "Flag", "Count",  "NameId"};

constexpr std::array<std::string_view, kArrayFieldCount> kArrayFieldNames = {"Requests", "SendCounts", "RecvCounts",
                                                                             "Indices"};

std::string value_text(std::int64_t v) {
  if (v == kAnySource) return "ANY";  // kAnySource == kAnyTag == kNullRequest
  if (v == kProcNull) return "PROC_NULL";
  if (v == kUndefined) return "UNDEFINED";
  if (v == kNoComm) return "NO_COMM";
  return std::to_string(v);
}

}  // namespace

std::string_view field_name(Field f) {
  auto i = static_cast<std::size_t>(f);
  return i < kFieldCount ? kFieldNames[i] : std::string_view{"<invalid field>"};
}

std::string_view array_field_name(ArrayField f) {
  auto i = static_cast<std::size_t>(f);
  return i < kArrayFieldCount ? kArrayFieldNames[i] : std::string_view{"<invalid array field>"};
}

std::string describe(const Event& e) {
  std::string out{op_name(e.op)};
  out += " site=" + std::to_string(e.site);
  for (std::size_t i = 0; i < kFieldCount; ++i) {
    if (e.fields[i] == 0) continue;
    out += ' ';
    out += field_name(static_cast<Field>(i));
    out += '=';
    out += value_text(e.fields[i]);
  }
  for (std::size_t i = 0; i < kArrayFieldCount; ++i) {
    if (e.arrays[i].empty()) continue;
    out += ' ';
    out += array_field_name(static_cast<ArrayField>(i));
    out += "=[";
    for (std::size_t k = 0; k < e.arrays[i].size(); ++k) {
      if (k) out += ',';
      out += value_text(e.arrays[i][k]);
    }
    out += ']';
  }
  out += " compute=" + std::to_string(e.compute_ns) + "ns";
  out += " duration=" + std::to_string(e.duration_ns) + "ns";
  return out;
}

std::string describe(const EventView& e) { return describe(e.to_event()); }

EventView EventView::of(const Event& e) {
  EventView v;
  v.op = e.op;
  v.site = e.site;
  v.fields = e.fields;
  for (std::size_t i = 0; i < kArrayFieldCount; ++i) v.arrays[i] = e.arrays[i];
  v.compute_ns = e.compute_ns;
  v.duration_ns = e.duration_ns;
  return v;
}

Event EventView::to_event() const {
  Event e;
  e.op = op;
  e.site = site;
  e.fields = fields;
  for (std::size_t i = 0; i < kArrayFieldCount; ++i) e.arrays[i].assign(arrays[i].begin(), arrays[i].end());
  e.compute_ns = compute_ns;
  e.duration_ns = duration_ns;
  return e;
}

}  // namespace scalatrace
