// coNCePTuaL back end of the benchmark generator (thesis ch. 4).
//
// Every event node becomes one statement executed by the node's task set (a SUCH THAT
// condition on the task variable where the ranklist is regular, an explicit list otherwise).
// Sends name UNSUSPECTING targets and receives are explicit RECEIVE statements, so each
// rank's order of point-to-point calls is the recorded one. Values that differ between ranks
// are `a IF cond OTHERWISE b` expressions of the task variable; values that differ between
// loop iterations turn the enclosing loops into FOR EACH loops and become expressions of the
// loop variables (FOR n REPETITIONS otherwise). Peers and roots are absolute world ranks
// (communicators resolved through the trace's communicator table). Collectives follow the
// thesis' Table 4.1. Wildcards are resolved first (Algorithm 3), collectives split over call
// sites are aligned (Algorithm 2, sibling nodes). See docs/codegen.md.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "codegen/codegen_support.hpp"
#include "scalatrace/codegen/codegen.hpp"

namespace scalatrace {
namespace {

using codegen_support::constant_of;
using codegen_support::is_everyone;

const ElasticValue& field(const EventNode& e, Field f) { return e.fields[static_cast<std::size_t>(f)]; }

std::string num(std::int64_t v) { return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v); }

/// Condition "var is in ranks" as coNCePTuaL rel_expr text.
std::string rank_condition(const RankList& ranks, const std::string& var, std::int64_t nranks) {
  std::vector<std::string> parts;
  std::vector<std::int64_t> singles;
  for (const auto& d : ranks.descriptors()) {
    if (d.dims.size() > 1) {  // multi-dimensional: a list comprehension (thesis §4.4.5)
      std::string comp = var + " IS IN {" + std::to_string(d.start);
      for (std::size_t k = 0; k < d.dims.size(); ++k) comp += "+j" + std::to_string(k);
      for (std::size_t k = d.dims.size(); k-- > 0;) {
        const auto [count, stride] = d.dims[k];
        comp += " FOR EACH j" + std::to_string(k) + " IN {0, " + std::to_string(stride) + ", ..., " +
                std::to_string(stride * (count - 1)) + "}";
      }
      parts.push_back(comp + "}");
      continue;
    }
    const std::int64_t count = d.dims.empty() ? 1 : d.dims[0].first;
    const std::int64_t stride = d.dims.empty() ? 1 : d.dims[0].second;
    const std::int64_t last = d.start + stride * (count - 1);
    if (count == 1) {
      singles.push_back(d.start);
      continue;
    }
    std::vector<std::string> c;
    if (d.start > 0) c.push_back(var + " >= " + std::to_string(d.start));
    if (last < nranks - 1) c.push_back(var + " <= " + std::to_string(last));
    if (stride > 1)
      c.push_back(std::to_string(stride) + " DIVIDES " + var + (d.start ? " - " + std::to_string(d.start) : ""));
    if (c.empty()) c.push_back(var + " >= 0");
    std::string joined;
    for (std::size_t i = 0; i < c.size(); ++i) joined += (i ? " /\\ " : "") + c[i];
    parts.push_back(c.size() > 1 && ranks.descriptors().size() > 1 ? "(" + joined + ")" : joined);
  }
  if (singles.size() == 1) {
    parts.push_back(var + " = " + std::to_string(singles[0]));
  } else if (!singles.empty()) {
    std::string list = var + " IS IN {";
    for (std::size_t i = 0; i < singles.size(); ++i) list += (i ? ", " : "") + std::to_string(singles[i]);
    parts.push_back(list + "}");
  }
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? " \\/ " : "") + parts[i];
  return out;
}

/// Merges collective event nodes split over call sites (thesis §4.4.3, Algorithm 2) among
/// siblings: node j joins an earlier node i of the same collective when their ranks are
/// disjoint and no node between them involves j's ranks (so every rank keeps its order).
void align_siblings(std::vector<Node>& body, std::int64_t nranks) {
  for (Node& n : body)
    if (n.loop) align_siblings(n.loop->body, nranks);
  auto ranks = [&](const Node& n) { return codegen_support::ranks_of(n, nranks); };
  auto disjoint = [&](const RankList& a, const RankList& b) {
    for (auto r : a.to_vector())
      if (b.contains(r)) return false;
    return true;
  };
  for (std::size_t i = 0; i < body.size(); ++i) {
    Node& a = body[i];
    if (!a.event || !op_is_collective(a.event->op) || !a.presence.empty()) continue;
    for (std::size_t j = i + 1; j < body.size(); ++j) {
      Node& b = body[j];
      const RankList rb = ranks(b);
      if (b.event && b.event->op == a.event->op && b.presence.empty() && disjoint(ranks(a), rb) &&
          field(*b.event, Field::Comm).alternatives.size() > 0) {
        bool movable = true;
        for (std::size_t k = i + 1; k < j && movable; ++k) movable = disjoint(ranks(body[k]), rb);
        if (movable) {
          EventNode& ea = *a.event;
          EventNode& eb = *b.event;
          for (std::size_t f = 0; f < kFieldCount; ++f)
            for (auto& alt : eb.fields[f].alternatives) {
              if (alt.second.empty()) alt.second = rb;
              ea.fields[f].alternatives.push_back(std::move(alt));
            }
          ea.compute.merge(eb.compute);
          ea.duration.merge(eb.duration);
          ea.first_compute.merge(eb.first_compute);
          a.ranks = ranks(a).unite(rb);
          body.erase(body.begin() + static_cast<std::ptrdiff_t>(j));
          --j;
          continue;
        }
      }
      if (!disjoint(ranks(body[j]), ranks(a))) break;  // a's ranks move on: stop looking
    }
  }
}

void collect_unaligned(const Trace& t, const std::vector<Node>& body, std::vector<std::string>& out) {
  for (const Node& n : body) {
    if (n.loop) {
      collect_unaligned(t, n.loop->body, out);
      continue;
    }
    if (!op_is_collective(n.event->op)) continue;
    const RankList ranks = codegen_support::ranks_of(n, t.nranks);
    // ranks of this node per communicator instance (members), and how many members it has
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> present;  // members -> (seen, size)
    const ElasticValue& comm = field(*n.event, Field::Comm);
    for (auto r : ranks.to_vector()) {
      const ValueSeq* seq = comm.for_rank(r);
      if (!seq || seq->empty()) continue;
      auto id = constant_of(*seq);
      if (!id) continue;
      std::string key;
      std::int64_t size = 0;
      if (*id == 0) {
        key = "world";
        size = t.nranks;
      } else if (*id == 1) {
        key = "self" + std::to_string(r);
        size = 1;
      } else if (const CommEntry* e = t.comms.find(*id, r)) {
        key = std::to_string(*id) + e->members.to_string();
        size = e->members.size();
      } else {
        continue;
      }
      auto& [seen, members] = present[key];
      ++seen;
      members = size;
    }
    for (const auto& [key, counts] : present)
      if (counts.first < counts.second)
        out.push_back("MPI_" + std::string(op_name(n.event->op)) + " at call site " + std::to_string(n.event->site) +
                      " runs on " + std::to_string(counts.first) + " of the " + std::to_string(counts.second) +
                      " members of its communicator (ranks " + ranks.to_string() + ")");
  }
}

struct LoopFrame {
  std::string var;                        ///< FOR EACH variable ("" for FOR n REPETITIONS)
  std::optional<std::int64_t> trips;      ///< uniform constant trip count
  std::optional<std::string> trips_text;  ///< trip count as an expression of the task variable
  const ElasticValue* trips_value = nullptr;
};

class ConceptualBackend final : public CodegenBackend {
 public:
  explicit ConceptualBackend(const CodegenOptions& o) : options_(o) {}

  void begin(const Trace& t) override { trace_ = &t; }

  void enter_loop(const Node& node, const LoopNode& loop, int depth) override {
    (void)node.ranks;  // the statements inside carry their own task sets
    LoopFrame frame;
    frame.trips = codegen_support::uniform_of(loop.trips);
    frame.trips_value = &loop.trips;
    const bool varying = needs_loop_variable(loop.body);
    std::string count = frame.trips ? std::to_string(*frame.trips) : per_task_value(loop.trips, "", "t");
    if (!frame.trips) {
      // trip counts differ between ranks: coNCePTuaL loops are global, so loop to the largest
      // count and let each statement's task set keep the ranks still iterating
      std::int64_t most = 0;
      for (const auto& [seq, r] : loop.trips.alternatives)
        for (std::uint64_t k = 0; k < seq.size() && k < 64; ++k) most = std::max(most, seq.at(k));
      count = std::to_string(most);
      frame.var = "i" + std::to_string(depth + 1);
      limits_.push_back({frame.var, &loop.trips});
    } else if (varying && node.presence.empty()) {
      frame.var = "i" + std::to_string(depth + 1);
    }
    bool per_task_constant = true;
    for (const auto& [seq, r] : loop.trips.alternatives)
      per_task_constant &= seq.empty() || constant_of(seq).has_value();
    if (frame.trips)
      frame.trips_text = std::to_string(*frame.trips);
    else if (per_task_constant)
      frame.trips_text = per_task_value(loop.trips, "", "t");
    if (frame.var.empty())
      open("FOR " + count + " REPETITIONS {");
    else
      open("FOR EACH " + frame.var + " IN {0, ..., " + count + "-1} {");
    loops_.push_back(frame);
  }

  void leave_loop(const Node&, const LoopNode& loop, int) override {
    if (!limits_.empty() && limits_.back().second == &loop.trips) limits_.pop_back();
    loops_.pop_back();
    close();
  }

  void event(const Node& node, const EventNode& e, int) override {
    const RankList all = codegen_support::ranks_of(node, trace_->nranks);
    // one statement per group of ranks whose parameters share their elastic alternatives
    // (collectives stay one statement: every member takes part in the same operation)
    std::vector<RankList> groups = rank_groups(e, all);
    const bool shared = groups.size() == 1;
    if (op_is_collective(e.op)) groups = {all};
    for (const RankList& ranks : groups) {
      group_ = shared || !op_is_collective(e.op) ? &ranks : nullptr;
      std::string tasks = task_set(ranks, "t");
      std::string s = translate(e, ranks, tasks);
      if (tasks.rfind("TASK ", 0) == 0)  // a single task binds no variable: use its number
        s = std::regex_replace(s, std::regex("\\bt\\b"), "(" + std::to_string(ranks.at(0)) + ")");
      if (!s.empty()) {  // the computation before the call, then the call, on one line
        std::string compute;
        const double us = static_cast<double>(codegen_support::mean_compute_ns(e)) / 1000.0;
        if (options_.computation && codegen_support::mean_compute_ns(e) >= options_.min_compute_ns &&
            std::llround(us) > 0)
          compute = tasks + " COMPUTE FOR " + std::to_string(std::llround(us)) + " MICROSECONDS then ";
        statement(compute + s);
      }
      group_ = nullptr;
    }
  }

  static int alternative_of(const ElasticValue& v, std::int64_t rank) {
    if (v.alternatives.size() <= 1) return 0;
    for (std::size_t a = 0; a < v.alternatives.size(); ++a)
      if (v.alternatives[a].second.empty() || v.alternatives[a].second.contains(rank)) return static_cast<int>(a);
    return -1;
  }

  std::vector<RankList> rank_groups(const EventNode& e, const RankList& ranks) const {
    std::map<std::vector<int>, std::vector<std::int64_t>> by;
    for (auto r : ranks.to_vector()) {
      std::vector<int> signature;
      for (const auto& f : e.fields) signature.push_back(alternative_of(f, r));
      for (const auto& l : loops_)
        if (l.trips_value) signature.push_back(alternative_of(*l.trips_value, r));
      by[signature].push_back(r);
    }
    std::vector<RankList> out;
    for (auto& [sig, members] : by) out.push_back(RankList::from_sequence(members));
    std::sort(out.begin(), out.end(), [](const RankList& a, const RankList& b) { return a.at(0) < b.at(0); });
    return out;
  }

  /// The group's value of a loop's trip count, if one constant.
  std::optional<std::int64_t> group_trips(const LoopFrame& l) const {
    if (l.trips) return l.trips;
    if (!group_ || !l.trips_value) return std::nullopt;
    const ValueSeq* seq = l.trips_value->for_rank(group_->at(0));
    return seq ? constant_of(*seq) : std::nullopt;
  }

  /// A sequence that repeats the innermost loop's iterations: an expression of its variable.
  std::optional<std::string> periodic_value(const ValueSeq& seq) const {
    if (loops_.empty() || loops_.back().var.empty() || seq.size() > 100000) return std::nullopt;
    auto period = group_trips(loops_.back());
    if (!period || *period < 1 || seq.size() % static_cast<std::uint64_t>(*period) != 0) return std::nullopt;
    const auto p = static_cast<std::uint64_t>(*period);
    for (std::uint64_t k = p; k < seq.size(); ++k)
      if (seq.at(k) != seq.at(k % p)) return std::nullopt;
    const std::string& var = loops_.back().var;
    const std::int64_t first = seq.at(0), stride = p > 1 ? seq.at(1) - seq.at(0) : 0;
    bool linear = true;
    for (std::uint64_t k = 0; k < p; ++k) linear &= seq.at(k) == first + stride * static_cast<std::int64_t>(k);
    if (linear) return stride == 0 ? num(first) : "(" + num(first) + "+" + num(stride) + "*" + var + ")";
    if (p > 8) return std::nullopt;
    std::string out;
    for (std::uint64_t k = 0; k + 1 < p; ++k)
      out += "(" + num(seq.at(k)) + " IF " + var + " = " + std::to_string(k) + " OTHERWISE ";
    out += num(seq.at(p - 1)) + std::string(p - 1, ')');
    return out;
  }

  std::string finish() override {
    std::ostringstream out;
    const Trace& t = *trace_;
    auto it = t.metadata.find("program");
    out << "# coNCePTuaL benchmark generated by scalatrace from a trace of " << t.nranks << " tasks"
        << (it == t.metadata.end() ? "" : " (" + it->second.substr(it->second.find_last_of('/') + 1) + ")") << ".\n"
        << "Require language version \"1.5\".\n"
        << "Assert that \"this benchmark reproduces a " << t.nranks << "-task run\" with num_tasks = " << t.nranks
        << ".\n";
    for (const auto& n : notes_) out << "# note: " << n << "\n";
    out << "All tasks synchronize then\nall tasks reset their counters then\n";
    for (const auto& l : lines_) out << l << "\n";
    out << "all tasks synchronize then\n"
        << "task 0 logs elapsed_usecs as \"Elapsed time (us)\" and bytes_sent as \"Bytes sent by task 0\".\n";
    return out.str();
  }

 private:
  // ---- output with THEN between consecutive statements ----
  std::string indent() const { return std::string(2 * loops_.size(), ' '); }
  void statement(const std::string& s) { lines_.push_back(indent() + s + " then"); }
  void open(const std::string& s) { lines_.push_back(indent() + s); }
  void close() {
    // the last statement of a block takes no THEN
    if (!lines_.empty() && lines_.back().size() >= 5 &&
        lines_.back().compare(lines_.back().size() - 5, 5, " then") == 0)
      lines_.back().erase(lines_.back().size() - 5);
    if (!lines_.empty() && lines_.back().back() == '{')
      lines_.back() += "}";  // empty block
    else
      lines_.push_back(indent() + "}");
    lines_.back() += " then";
  }

  bool needs_loop_variable(const std::vector<Node>& body) const {
    for (const Node& n : body) {
      if (n.loop) {
        if (needs_loop_variable(n.loop->body)) return true;
        continue;
      }
      for (Field f : {Field::Peer, Field::Peer2, Field::Bytes, Field::Bytes2, Field::Root, Field::Tag})
        for (const auto& [seq, r] : field(*n.event, f).alternatives)
          if (!seq.empty() && !constant_of(seq)) return true;
    }
    return false;
  }

  /// Occurrence index of an event node as an expression of the FOR EACH variables, if every
  /// enclosing loop has one and a uniform trip count.
  std::optional<std::string> occurrence() const {
    if (loops_.empty()) return std::string("0");
    std::string expr;
    for (const auto& l : loops_) {
      if (l.var.empty()) return std::nullopt;
      auto trips = group_trips(l);
      if (!trips && !l.trips_text) return std::nullopt;
      expr = expr.empty() ? l.var : "(" + expr + ")*" + (trips ? std::to_string(*trips) : *l.trips_text) + "+" + l.var;
    }
    return expr;
  }

  /// A value sequence at occurrence `occ` (an expression), or nullopt if not expressible.
  static std::optional<std::string> sequence_value(const ValueSeq& seq, const std::optional<std::string>& occ) {
    if (auto c = constant_of(seq)) return num(*c);
    if (!occ) return std::nullopt;
    std::string out;
    int open = 0;
    std::uint64_t start = 0;
    for (const auto& b : seq.blocks()) {
      std::uint64_t period = 0;
      for (const auto& r : b.runs) period += r.count;
      const std::string local = b.repeat > 1
                                    ? "((" + *occ + ")-" + std::to_string(start) + ") MOD " + std::to_string(period)
                                    : "(" + *occ + ")-" + std::to_string(start);
      std::uint64_t offset = 0;
      for (const auto& r : b.runs) {
        std::string v = num(r.first);
        if (r.stride != 0 && r.count > 1)
          v = "(" + v + "+" + num(r.stride) + "*(" + local + "-" + std::to_string(offset) + "))";
        offset += r.count;
        const bool last_run = &r == &b.runs.back() && &b == &seq.blocks().back();
        if (last_run) {
          out += v;
        } else {
          out += "(" + v + " IF " + local + " < " + std::to_string(offset) + " OTHERWISE ";
          ++open;
        }
      }
      start += period * b.repeat;
    }
    for (int i = 0; i < open; ++i) out += ")";
    return out;
  }

  /// Per-task value: alternatives as IF/OTHERWISE on the task variable.
  std::string per_task_value(const ElasticValue& v, const std::string& mean_note, const std::string& var) {
    if (v.empty()) return "0";
    if (auto u = codegen_support::uniform_of(v)) return num(*u);
    if (group_) {  // the statement's ranks share one alternative
      const ValueSeq* seq = v.for_rank(group_->at(0));
      if (!seq || seq->empty()) return "0";
      if (auto c = constant_of(*seq)) return num(*c);
      if (auto p = periodic_value(*seq)) return *p;
      if (auto x = sequence_value(*seq, occurrence())) return *x;
      double sum = 0;
      for (std::uint64_t k = 0; k < seq->size(); ++k) sum += static_cast<double>(seq->at(k));
      if (!mean_note.empty()) note(mean_note + " varies between iterations; its mean is used");
      return num(std::llround(sum / static_cast<double>(seq->size())));
    }
    const auto occ = occurrence();
    std::string out;
    int open = 0;
    for (std::size_t a = 0; a < v.alternatives.size(); ++a) {
      const auto& [seq, ranks] = v.alternatives[a];
      auto value = sequence_value(seq, occ);
      if (!value) {  // varies over iterations that have no loop variable: the mean (Table 4.1 style)
        double sum = 0;
        for (std::uint64_t k = 0; k < seq.size(); ++k) sum += static_cast<double>(seq.at(k));
        value = num(std::llround(sum / static_cast<double>(std::max<std::uint64_t>(seq.size(), 1))));
        if (!mean_note.empty()) note(mean_note + " varies between iterations; its mean is used");
      }
      if (a + 1 == v.alternatives.size() || ranks.empty() || is_everyone(ranks, trace_->nranks)) {
        out += *value;
        break;
      }
      out += "(" + *value + " IF " + rank_condition(ranks, var, trace_->nranks) + " OTHERWISE ";
      ++open;
    }
    for (int i = 0; i < open; ++i) out += ")";
    return out;
  }

  void note(const std::string& n) {
    if (std::find(notes_.begin(), notes_.end(), n) == notes_.end()) notes_.push_back(n);
  }

  std::string task_set(const RankList& ranks, const std::string& var) {
    std::string cond;
    if (!is_everyone(ranks, trace_->nranks)) cond = rank_condition(ranks, var, trace_->nranks);
    for (const auto& [loop_var, trips] : limits_) {  // loops whose trip count differs per task
      std::string limit = loop_var + " < " + per_task_value(*trips, "", var);
      cond = cond.empty() ? limit : "(" + cond + ") /\\ " + limit;
    }
    if (cond.empty()) return "ALL TASKS " + var;
    if (ranks.size() == 1 && limits_.empty()) return "TASK " + std::to_string(ranks.at(0));
    return "TASKS " + var + " SUCH THAT " + cond;
  }

  /// World rank of a communicator member, as an expression of the task variable: the member
  /// `rel` positions from the task (peer) or member `root` (root).
  std::string absolute(const EventNode& e, const RankList& ranks, Field which, bool relative) {
    const ElasticValue& comm = field(e, Field::Comm);
    auto c = codegen_support::uniform_of(comm);
    const ElasticValue& value = field(e, which);
    if (c && *c == 0) {  // MPI_COMM_WORLD: the recorded value is already a world offset / rank
      std::string v = per_task_value(value, "peer", "t");
      return relative ? (v == "0" ? "t" : "t+" + v) : v;
    }
    // other communicators: world offsets per task, grouped into a per-task value
    std::map<std::vector<std::int64_t>, std::vector<std::int64_t>> groups;
    for (auto r : ranks.to_vector()) {
      const ValueSeq* cs = comm.for_rank(r);
      const ValueSeq* vs = value.for_rank(r);
      if (!cs || !vs || cs->empty()) continue;
      std::vector<std::int64_t> offsets;
      for (std::uint64_t k = 0; k < vs->size() && k < 4096; ++k) {
        const std::int64_t id = cs->at(std::min<std::uint64_t>(k, cs->size() - 1));
        const std::int64_t v = vs->at(k);
        RankList members = id == 1 ? RankList::single(r) : RankList::range(0, trace_->nranks);
        if (id > 1) {
          const CommEntry* entry = trace_->comms.find(id, r);
          if (!entry) continue;
          members = entry->members;
        }
        const std::int64_t at = relative ? members.index_of(r) + v : v;
        const std::int64_t world = at >= 0 && at < members.size() ? members.at(at) : r;
        offsets.push_back(relative ? world - r : world);
      }
      groups[offsets].push_back(r);
    }
    ElasticValue offsets;
    for (auto& [seq_values, group] : groups) {
      ValueSeq seq;
      for (auto x : seq_values) seq.append(x);
      offsets.alternatives.push_back({std::move(seq), RankList::from_sequence(group)});
    }
    std::string v = per_task_value(offsets, "peer", "t");
    return relative ? (v == "0" ? "t" : "t+" + v) : v;
  }

  std::string members_set(const EventNode& e, const RankList& ranks, const std::string& var) {
    auto c = codegen_support::uniform_of(field(e, Field::Comm));
    if (c && *c == 0) return "ALL TASKS " + var;
    RankList all;
    for (auto r : ranks.to_vector()) {
      const ValueSeq* cs = field(e, Field::Comm).for_rank(r);
      if (!cs || cs->empty()) continue;
      if (const CommEntry* entry = trace_->comms.find(cs->at(0), r)) {
        std::vector<std::int64_t> m = entry->members.to_vector();
        std::sort(m.begin(), m.end());
        all = all.unite(RankList::from_sequence(m));
      }
    }
    if (all.empty()) all = ranks;
    return is_everyone(all, trace_->nranks) ? "ALL TASKS " + var
                                            : "TASKS " + var + " SUCH THAT " + rank_condition(all, var, trace_->nranks);
  }

  std::string bytes(const EventNode& e, Field f) {
    std::string v = per_task_value(field(e, f), "message size", "t");
    return v;
  }

  std::string translate(const EventNode& e, const RankList& ranks, const std::string& tasks) {
    const std::string tag = " USING TAG ";
    switch (op_kind(e.op)) {
      case OpKind::BlockingSend:
      case OpKind::NonblockingSend:
        return tasks + (op_kind(e.op) == OpKind::NonblockingSend ? " ASYNCHRONOUSLY" : "") + " SEND A " +
               bytes(e, Field::Bytes) + " BYTE MESSAGE" + tag + per_task_value(field(e, Field::Tag), "tag", "t") +
               " TO UNSUSPECTING TASK " + absolute(e, ranks, Field::Peer, true);
      case OpKind::BlockingRecv:
      case OpKind::NonblockingRecv:
        return tasks + (op_kind(e.op) == OpKind::NonblockingRecv ? " ASYNCHRONOUSLY" : "") + " RECEIVE A " +
               bytes(e, Field::Bytes) + " BYTE MESSAGE" + tag + per_task_value(field(e, Field::Tag), "tag", "t") +
               " FROM TASK " + absolute(e, ranks, Field::Peer, true);
      case OpKind::SendRecv:
        return tasks + " ASYNCHRONOUSLY SEND A " + bytes(e, Field::Bytes) + " BYTE MESSAGE" + tag +
               per_task_value(field(e, Field::Tag), "tag", "t") + " TO UNSUSPECTING TASK " +
               absolute(e, ranks, Field::Peer, true) + " then\n" + indent() + tasks + " ASYNCHRONOUSLY RECEIVE A " +
               bytes(e, Field::Bytes2) + " BYTE MESSAGE" + tag + per_task_value(field(e, Field::Tag2), "tag", "t") +
               " FROM TASK " + absolute(e, ranks, Field::Peer2, true) + " then\n" + indent() + tasks +
               " AWAIT COMPLETION";
      case OpKind::Completion:
        if (e.op == Op::Wait || e.op == Op::Waitall || e.op == Op::Waitany || e.op == Op::Waitsome)
          return tasks + " AWAIT COMPLETION";
        return "";  // Test*: no waiting
      case OpKind::Collective:
      case OpKind::NonblockingCollective:
        return collective(e, ranks);
      case OpKind::PersistentSend:
      case OpKind::PersistentRecv:
      case OpKind::Start:
        note("persistent requests (MPI_" + std::string(op_name(e.op)) +
             ") are not expressed: coNCePTuaL has no persistent operations; use the C back end");
        return "";
      default:
        return "";  // Init/Finalize (the frame), communicator management (absolute ranks), Other
    }
  }

  std::string collective(const EventNode& e, const RankList& ranks) {
    const std::string op(op_name(e.op));
    const std::string base = op_kind(e.op) == OpKind::NonblockingCollective ? op.substr(1) : op;
    auto lower = [](std::string s) {
      for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    };
    const std::string b = lower(base);
    const std::string group = members_set(e, ranks, "t");
    const std::string group_u = members_set(e, ranks, "u");
    auto root = [&] { return absolute(e, ranks, Field::Root, false); };
    // a multicast has one size: the mean over the receivers where they differ (Table 4.1)
    auto mean_bytes = [&](Field f) {
      std::string v = bytes(e, f);
      if (v.find('t') == std::string::npos) return v;
      double sum = 0, n = 0;
      for (auto r : ranks.to_vector())
        if (const ValueSeq* seq = field(e, f).for_rank(r))
          for (std::uint64_t k = 0; k < seq->size(); ++k, ++n) sum += static_cast<double>(seq->at(k));
      note("MPI_" + op + " sends different sizes to different tasks: a MULTICAST of their mean (Table 4.1)");
      return std::to_string(std::llround(n > 0 ? sum / n : 0));
    };
    if (b == "barrier") return group + " SYNCHRONIZE";
    if (b == "bcast" || b == "scatter" || b == "scatterv")
      return "TASK " + root() + " MULTICASTS A " + mean_bytes(b == "bcast" ? Field::Bytes : Field::Bytes2) +
             " BYTE MESSAGE TO " + group_u;
    if (b == "reduce" || b == "gather" || b == "gatherv")
      return group + " REDUCE " + bytes(e, Field::Bytes) + " BYTES TO TASK " + root();
    if (b == "allreduce" || b == "scan" || b == "exscan")
      return group + " REDUCE " + bytes(e, Field::Bytes) + " BYTES TO " + group_u;
    if (b == "allgather" || b == "allgatherv")
      return group + " REDUCE " + bytes(e, Field::Bytes) + " BYTES TO TASK 0 then\n" + indent() +
             "TASK 0 MULTICASTS A " + mean_bytes(Field::Bytes2) + " BYTE MESSAGE TO " + group_u;
    if (b == "alltoall" || b == "alltoallv" || b == "alltoallw") {
      if (b != "alltoall") note("MPI_" + op + " is a MULTICAST of its mean per-peer size (Table 4.1)");
      std::string size = bytes(e, Field::Bytes);
      if (b != "alltoall") size = "(" + size + ")/num_tasks";
      return group + " MULTICAST A " + size + " BYTE MESSAGE TO " + group_u;
    }
    if (b == "reduce_scatter" || b == "reduce_scatter_block")
      return group + " REDUCE " + bytes(e, Field::Bytes2) + " BYTES TO " + group_u;
    note("MPI_" + op + " has no coNCePTuaL counterpart and is left out");
    return "";
  }

  CodegenOptions options_;
  const Trace* trace_ = nullptr;
  std::vector<std::string> lines_;
  std::vector<std::string> notes_;
  std::vector<LoopFrame> loops_;
  std::vector<std::pair<std::string, const ElasticValue*>> limits_;
  const RankList* group_ = nullptr;  ///< ranks of the statement being written, when per group
};

}  // namespace

std::vector<std::string> unaligned_collectives(const Trace& trace) {
  std::vector<std::string> out;
  collect_unaligned(trace, trace.nodes, out);
  return out;
}

std::string generate_conceptual(const Trace& trace, const CodegenOptions& options) {
  if (trace.nranks < 1) throw UsageError("cannot generate a benchmark from a trace without ranks");
  Trace work = has_wildcards(trace) ? resolve_wildcards(trace) : trace.clone();
  std::vector<std::string> unaligned = unaligned_collectives(work);
  if (!unaligned.empty()) align_siblings(work.nodes, work.nranks);
  ConceptualBackend backend(options);
  traverse(work, backend);
  std::string text = backend.finish();
  for (const auto& u : unaligned_collectives(work))
    text.insert(text.find('\n') + 1, "# note: unaligned collective (Algorithm 2 found no partner): " + u + "\n");
  return text;
}

}  // namespace scalatrace
