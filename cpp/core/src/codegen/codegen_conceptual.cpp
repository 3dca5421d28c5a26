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
#include <array>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "codegen/codegen_await_points.hpp"
#include "codegen/codegen_support.hpp"
#include "scalatrace/codegen/codegen.hpp"
#include "scalatrace/read/cursor.hpp"

namespace scalatrace {
namespace {

using codegen_support::constant_of;
using codegen_support::is_everyone;

const ElasticValue& field(const EventNode& e, Field f) { return e.fields[static_cast<std::size_t>(f)]; }

std::string num(std::int64_t v) { return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v); }

/// A word character as the ECMAScript `\b` sees it: [A-Za-z0-9_].
bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// `text` with every whole-word occurrence of `word` replaced by `replacement` (what
/// std::regex_replace(text, std::regex("\\bword\\b"), replacement) gives for a word of word
/// characters, without instantiating <regex>: 7 s of compile CPU time).
std::string replace_whole_word(const std::string& text, const std::string& word, const std::string& replacement) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const bool starts_word = text.compare(i, word.size(), word) == 0 && (i == 0 || !is_word_char(text[i - 1])) &&
                             (i + word.size() == text.size() || !is_word_char(text[i + word.size()]));
    if (starts_word) {
      out += replacement;
      i += word.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

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
          const RankList ra = ranks(a);
          auto take = [&](auto& into, auto& from) {  // b's alternatives, each named by its ranks
            for (auto& alt : into.alternatives)
              if (alt.second.empty()) alt.second = ra;
            for (auto& alt : from.alternatives) {
              if (alt.second.empty()) alt.second = rb;
              into.alternatives.push_back(std::move(alt));
            }
          };
          for (std::size_t f = 0; f < kFieldCount; ++f) take(ea.fields[f], eb.fields[f]);
          // the arrays too: the merged node is walked by the cursor (await points, Starts)
          for (std::size_t f = 0; f < kArrayFieldCount; ++f) take(ea.arrays[f], eb.arrays[f]);
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

/// What the Start nodes of a trace start: per Start node, per started request (in the order
/// the Start lists them), an Isend / Irecv event node whose fields hold, per rank and per
/// occurrence of the Start, the parameters of the persistent request it started.
using StartedRequests = std::map<const Node*, std::vector<EventNode>>;

/// Per completion / MPI_Sendrecv node, per rank and occurrence: 1 where AWAIT COMPLETION may
/// wait (codegen_await_points.hpp).
using AwaitPoints = std::map<const Node*, ElasticValue>;

bool has_start(const std::vector<Node>& body) {
  for (const Node& n : body)
    if ((n.loop && has_start(n.loop->body)) || (n.event && op_kind(n.event->op) == OpKind::Start)) return true;
  return false;
}

/// Walks every rank's events (handle buffer as the collector records it) and collects the
/// parameters of the persistent requests each Start starts.
StartedRequests started_requests(const Trace& t, std::vector<std::string>& notes) {
  StartedRequests out;
  if (!has_start(t.nodes)) return out;
  // per Start node, per started position, per field: per rank the values over occurrences
  std::map<const Node*, std::vector<std::array<std::map<std::int64_t, ValueSeq>, kFieldCount>>> values;
  std::map<std::pair<const Node*, std::size_t>, Op> kinds;
  for (std::int64_t r = 0; r < t.nranks; ++r) {
    Cursor cursor(t, r, TimingMode::None);
    std::vector<std::optional<Event>> slots;
    Event e;
    while (cursor.next(e)) {
      const OpKind kind = op_kind(e.op);
      if (kind == OpKind::PersistentSend || kind == OpKind::PersistentRecv) {
        slots.push_back(e);
      } else if (op_creates_request(e.op)) {
        slots.push_back(std::nullopt);
      } else if (kind == OpKind::Start) {
        const Node* node = cursor.last_node();
        auto& positions = values[node];
        std::size_t j = 0;
        for (auto offset : e[ArrayField::Requests]) {
          if (offset < 1 || offset > static_cast<std::int64_t>(slots.size())) continue;
          const auto& init = slots[slots.size() - static_cast<std::size_t>(offset)];
          if (!init) continue;
          if (positions.size() <= j) positions.resize(j + 1);
          for (Field f : {Field::Comm, Field::Peer, Field::Tag, Field::Bytes, Field::DtSize})
            positions[j][static_cast<std::size_t>(f)][r].append((*init)[f]);
          const Op as = op_kind(init->op) == OpKind::PersistentRecv ? Op::Irecv : Op::Isend;
          auto [it, inserted] = kinds.try_emplace({node, j}, as);
          if (!inserted && it->second != as)
            notes.push_back(
                "an MPI_Start starts a send on some ranks and a receive on others at one position; "
                "the first rank's kind is used");
          ++j;
        }
      }
    }
  }
  for (auto& [node, positions] : values) {
    for (std::size_t j = 0; j < positions.size(); ++j) {
      EventNode started;
      started.op = kinds[{node, j}];
      started.site = node->event->site;
      if (j == 0) started.compute = node->event->compute;  // the computation before the Start
      for (Field f : {Field::Comm, Field::Peer, Field::Tag, Field::Bytes, Field::DtSize})
        started.fields[static_cast<std::size_t>(f)] =
            codegen_support::elastic_of(std::move(positions[j][static_cast<std::size_t>(f)]));
      out[node].push_back(std::move(started));
    }
  }
  return out;
}

/// An enclosing loop as the program writes it: always a FOR EACH loop, so that values,
/// presence and trip counts that change between iterations can be written as expressions of
/// the loop variables.
struct LoopFrame {
  std::string var;                      ///< FOR EACH variable ("" for a loop that never runs)
  const ElasticValue* trips = nullptr;  ///< the loop's trip counts
  std::size_t outside = 0;              ///< loops enclosing this one (its visits are counted there)
  bool bounded = false;                 ///< runs to the largest count; statements check var < count
  /// The loop node's presence sequence (pushed below as well), null without one.
  const ElasticValue* presence_seq = nullptr;
  /// LET variable bound (at the top of the loop body) to the index of the current iteration
  /// among all the loop's iterations, when that expression is the same for all the loop's
  /// ranks; "" otherwise. Expressions inside use it instead of repeating the expression (the
  /// compiler's parser recurses once per nesting level).
  std::string index_var;
  /// LET variable bound to the index of the current visit among the visits the loop is present
  /// (the prefix sum of its presence sequence), on the same terms; "" otherwise.
  std::string visit_var;
  int lets = 0;  ///< LET ... WHILE blocks opened in the body (closed with the loop)
};

/// A node with a presence sequence (the statement's own or an enclosing loop's).
struct PresenceFrame {
  const ElasticValue* presence = nullptr;
  std::size_t outside = 0;  ///< loops enclosing the node
};

/// The largest value of a sequence (runs are arithmetic: their ends are the extremes).
std::int64_t seq_max(const ValueSeq& seq) {
  std::int64_t most = 0;
  for (const auto& b : seq.blocks())
    for (const auto& r : b.runs)
      if (r.count > 0) most = std::max({most, r.first, r.first + r.stride * static_cast<std::int64_t>(r.count - 1)});
  return most;
}

class ConceptualBackend final : public CodegenBackend {
 public:
  ConceptualBackend(const CodegenOptions& o, const StartedRequests& started, const AwaitPoints& awaits)
      : options_(o), started_(started), awaits_(awaits) {}

  void begin(const Trace& t) override { trace_ = &t; }

  void enter_loop(const Node& node, const LoopNode& loop, int depth) override {
    LoopFrame frame;
    frame.trips = &loop.trips;
    frame.outside = loops_.size();
    if (!node.presence.empty()) {
      presence_.push_back({&node.presence, loops_.size()});
      frame.presence_seq = &node.presence;
    }
    std::int64_t most = 0;
    const auto uniform = codegen_support::uniform_of(loop.trips);
    if (uniform) {
      most = *uniform;
    } else {
      for (const auto& [seq, r] : loop.trips.alternatives) most = std::max(most, seq_max(seq));
      frame.bounded = true;  // trip counts differ between ranks or visits
    }
    if (most <= 0) {
      open("FOR 0 REPETITIONS {");
    } else {
      frame.var = "i" + std::to_string(depth + 1);
      open("FOR EACH " + frame.var + " IN {0, ..., " + std::to_string(most - 1) + "} {");
    }
    loops_.push_back(frame);
    bind_iteration_index(node, depth);
  }

  void leave_loop(const Node&, const LoopNode&, int) override {
    const int lets = loops_.back().lets;
    if (loops_.back().presence_seq != nullptr) presence_.pop_back();
    loops_.pop_back();
    for (int k = 0; k < lets; ++k) close();  // the LET ... WHILE blocks
    close();
  }

  void event(const Node& node, const EventNode& e, int) override {
    const RankList all = codegen_support::ranks_of(node, trace_->nranks);
    if (!node.presence.empty()) presence_.push_back({&node.presence, loops_.size()});
    event_presence_ = node.presence.empty() ? nullptr : &node.presence;
    if (op_is_collective(e.op)) {
      collective_event(e, all);
    } else if (op_kind(e.op) == OpKind::Completion || op_kind(e.op) == OpKind::SendRecv) {
      awaiting_event(node, e, all);
    } else if (op_kind(e.op) == OpKind::Start) {  // the sends / receives it starts
      if (auto it = started_.find(&node); it != started_.end())
        for (const EventNode& started : it->second) {
          std::vector<std::int64_t> present;
          const ElasticValue& comm = field(started, Field::Comm);
          for (auto r : all.to_vector())
            if (comm.for_rank(r)) present.push_back(r);
          if (present.empty()) continue;
          for (const RankList& ranks : rank_groups(started, RankList::from_sequence(present))) {
            std::string text = point_to_point(started, ranks);
            if (!text.empty()) emit(ranks, started, source_set(ranks), text);
          }
        }
    } else {
      for (const RankList& ranks : rank_groups(e, all)) {
        std::string text = point_to_point(e, ranks);
        if (!text.empty()) emit(ranks, e, source_set(ranks), text);
      }
    }
    if (!node.presence.empty()) presence_.pop_back();
    event_presence_ = nullptr;
  }

  void add_note(const std::string& n) { note(n); }

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
    // requests the trace completed with Test calls (or never completed) are awaited here:
    // coNCePTuaL requires every asynchronous operation to be awaited
    out << "all tasks await completion then\n"
        << "all tasks synchronize then\n"
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

  void note(const std::string& n) {
    if (std::find(notes_.begin(), notes_.end(), n) == notes_.end()) notes_.push_back(n);
  }

  /// Writes one statement for `ranks` (sharing their parameters): the computation before the
  /// call, then the call, under the conditions of the enclosing loops and presence sequences.
  void emit(const RankList& ranks, const EventNode& e, const std::string& tasks, const std::string& text) {
    auto cond = conditions(ranks.at(0));
    if (!cond) return;  // never present for these ranks
    std::string s = text;
    const double us = static_cast<double>(codegen_support::mean_compute_ns(e)) / 1000.0;
    if (options_.computation && codegen_support::mean_compute_ns(e) >= options_.min_compute_ns &&
        std::llround(us) > 0) {
      const std::string compute = tasks + " COMPUTE FOR " + std::to_string(std::llround(us)) + " MICROSECONDS";
      s = s.empty() ? compute : compute + " then\n" + indent() + "  " + s;
    }
    if (s.empty()) return;  // a call left out without computation before it
    if (ranks.size() == 1) s = replace_whole_word(s, "t", "(" + std::to_string(ranks.at(0)) + ")");
    if (cond->empty()) {
      statement(s);
    } else if (s.find(" then\n") == std::string::npos) {
      statement("IF " + *cond + " THEN " + s);
    } else {
      statement("IF " + *cond + " THEN {\n" + indent() + "  " + s + "\n" + indent() + "}");
    }
  }

  // ---- which iterations a statement runs in ----

  /// Binds the innermost loop's present-visit index (with a presence sequence) and then its
  /// iteration index to LET variables, each when all the loop's ranks share its expression and
  /// it is more than what it is computed from.
  void bind_iteration_index(const Node& node, int depth) {
    LoopFrame& l = loops_.back();
    if (l.var.empty() || loops_.size() < 2) return;
    const auto ranks = codegen_support::ranks_of(node, trace_->nranks).to_vector();
    auto shared_over_ranks = [&](const std::function<std::optional<std::string>(std::int64_t)>& expr) {
      std::optional<std::string> shared;
      for (auto r : ranks) {
        auto x = expr(r);
        if (!x || (shared && *shared != *x)) return std::optional<std::string>();
        shared = x;
      }
      return shared;
    };
    auto bind = [&](const std::string& name, const std::string& value) {
      open("LET " + name + " BE " + value + " WHILE {");
      ++l.lets;
    };
    if (l.presence_seq != nullptr) {
      std::optional<std::string> outer;  // the visit index, shared as well
      auto visit = shared_over_ranks([&](std::int64_t r) -> std::optional<std::string> {
        auto at = occurrence(r, loops_.size() - 1);
        if (!at) return std::nullopt;
        outer = at;
        return present_visits(l.presence_seq, r, *at);
      });
      if (visit && outer && *visit != *outer) {
        l.visit_var = "v" + std::to_string(depth + 1);
        bind(l.visit_var, *visit);
      }
    }
    auto index = shared_over_ranks([&](std::int64_t r) { return occurrence(r, loops_.size()); });
    if (!index || *index == l.var) return;
    l.index_var = "n" + std::to_string(depth + 1);
    bind(l.index_var, *index);
  }

  /// Trip count of loop frame k for `rank` if it is one constant.
  std::optional<std::int64_t> constant_trips(std::size_t k, std::int64_t rank) const {
    const ValueSeq* seq = loops_[k].trips->for_rank(rank);
    return seq ? constant_of(*seq) : std::nullopt;
  }

  /// Index of the current visit of a node enclosed by the first `frames` loops, for `rank`,
  /// as an expression of the loop variables (the iterations of the innermost of them the rank
  /// ran before this one); nullopt if none can be written.
  ///
  /// A loop's k-th visit reads its k-th trip count, and a loop or event with a presence
  /// sequence (approximate loop matching) reads its values only on the visits it is present:
  /// the index of its values is then the number of present visits before this one, the prefix
  /// sum of its presence sequence (the cursor's semantics, read/cursor.cpp).
  std::optional<std::string> occurrence(std::int64_t rank, std::size_t frames) const {
    if (frames == 0) return std::string("0");
    std::string expr;
    for (std::size_t k = 0; k < frames; ++k) {
      const LoopFrame& l = loops_[k];
      if (l.var.empty()) return std::nullopt;
      if (k == 0) {
        expr = l.var;
        continue;
      }
      if (!l.index_var.empty()) {
        expr = l.index_var;
        continue;
      }
      auto visit = l.visit_var.empty() ? present_visits(l.presence_seq, rank, expr) : l.visit_var;
      if (!visit) return std::nullopt;
      if (auto trips = constant_trips(k, rank)) {
        expr = "(" + *visit + ")*" + std::to_string(*trips) + "+" + l.var;
        continue;
      }
      // the trip count changes between visits: iterations of the earlier visits, summed
      const ValueSeq* seq = l.trips->for_rank(rank);
      auto before = seq ? prefix_sum(*seq, *visit) : std::nullopt;
      if (!before) return std::nullopt;
      expr = "(" + *before + ")+" + l.var;
    }
    return expr;
  }

  /// The index among a node's present visits of its visit `visit` (an expression): `visit`
  /// itself without a presence sequence, else the present visits before it.
  static std::optional<std::string> present_visits(const ElasticValue* presence, std::int64_t rank,
                                                   const std::string& visit) {
    if (presence == nullptr || presence->alternatives.empty()) return visit;
    const ValueSeq* seq = presence->for_rank(rank);
    if (seq == nullptr || seq->empty()) return visit;  // present at every visit (cursor)
    if (auto c = constant_of(*seq); c && *c == 1) return visit;
    return prefix_sum(*seq, visit);
  }

  /// Sum of the first `v` values of a sequence of runs, as an expression of `v` (per block its
  /// complete periods and the runs of the last one; within an arithmetic run a + s*j, the first
  /// x values sum to a*x + s*(x*(x-1)/2), exact in integers: x*(x-1) is even).
  static std::optional<std::string> prefix_sum(const ValueSeq& seq, const std::string& v) {
    std::string out;
    int open = 0;
    std::uint64_t start = 0;
    std::int64_t total = 0;  // sum of the blocks before
    for (const auto& b : seq.blocks()) {
      std::uint64_t period = 0;
      std::int64_t block_sum = 0;
      for (const auto& r : b.runs) {
        period += r.count;
        block_sum += run_sum(r, static_cast<std::int64_t>(r.count));
      }
      const std::string local = start == 0 ? "(" + v + ")" : "((" + v + ")-" + std::to_string(start) + ")";
      const std::string within = b.repeat > 1 ? "(" + local + " MOD " + std::to_string(period) + ")" : local;
      std::string expr = num(total);
      if (b.repeat > 1) expr += "+(" + local + "/" + std::to_string(period) + ")*" + num(block_sum);
      // the runs of the current period: one branch per run
      std::string runs;
      int runs_open = 0;
      std::uint64_t offset = 0;
      std::int64_t sum = 0;
      for (const auto& r : b.runs) {
        const std::string x = "(" + within + (offset ? "-" + std::to_string(offset) : "") + ")";
        std::string at = num(sum) + "+" + num(r.first) + "*" + x;
        if (r.stride != 0 && r.count > 1) at += "+" + num(r.stride) + "*((" + x + "*(" + x + "-1))/2)";
        offset += r.count;
        sum += run_sum(r, static_cast<std::int64_t>(r.count));
        if (&r == &b.runs.back()) {
          runs += at;
        } else {
          runs += "(" + at + " IF " + within + " < " + std::to_string(offset) + " OTHERWISE ";
          ++runs_open;
        }
      }
      runs += std::string(static_cast<std::size_t>(runs_open), ')');
      expr += "+" + runs;
      start += period * b.repeat;
      total += block_sum * static_cast<std::int64_t>(b.repeat);
      if (&b == &seq.blocks().back()) {
        out += expr;
      } else {
        out += "(" + expr + " IF " + v + " < " + std::to_string(start) + " OTHERWISE ";
        ++open;
      }
    }
    out += std::string(static_cast<std::size_t>(open), ')');
    return out;
  }

  /// Sum of the first `x` values of an arithmetic run.
  static std::int64_t run_sum(const ValueRun& r, std::int64_t x) {
    return r.first * x + (r.count > 1 ? r.stride * (x * (x - 1) / 2) : 0);
  }

  /// A sequence that repeats the innermost loop's iterations: an expression of its variable.
  std::optional<std::string> periodic_value(const ValueSeq& seq, std::int64_t rank) const {
    if (loops_.empty() || loops_.back().var.empty() || seq.size() > 100000) return std::nullopt;
    auto period = constant_trips(loops_.size() - 1, rank);
    if (!period || *period < 1 || seq.size() % static_cast<std::uint64_t>(*period) != 0) return std::nullopt;
    const auto p = static_cast<std::uint64_t>(*period);
    for (std::uint64_t k = p; k < seq.size(); ++k)
      if (seq.at(k) != seq.at(k % p)) return std::nullopt;
    ValueSeq period_values;  // one period, indexed by the innermost loop variable alone
    for (std::uint64_t k = 0; k < p; ++k) period_values.append(seq.at(k));
    return sequence_value(period_values, loops_.back().var);
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
      const std::string shifted = start == 0 ? *occ : "(" + *occ + ")-" + std::to_string(start);
      const std::string local = b.repeat > 1 ? "(" + shifted + ") MOD " + std::to_string(period) : shifted;
      // within a block: one branch per run, the last one unconditional
      std::string block;
      int block_open = 0;
      std::uint64_t offset = 0;
      for (const auto& r : b.runs) {
        std::string v = num(r.first);
        if (r.stride != 0 && r.count > 1)
          v = "(" + v + "+" + num(r.stride) + "*(" + local + (offset ? "-" + std::to_string(offset) : "") + "))";
        offset += r.count;
        if (&r == &b.runs.back()) {
          block += v;
        } else {
          block += "(" + v + " IF " + local + " < " + std::to_string(offset) + " OTHERWISE ";
          ++block_open;
        }
      }
      block += std::string(static_cast<std::size_t>(block_open), ')');
      start += period * b.repeat;
      if (&b == &seq.blocks().back()) {
        out += block;
      } else {  // later blocks start after this one's occurrences
        out += "(" + block + " IF " + *occ + " < " + std::to_string(start) + " OTHERWISE ";
        ++open;
      }
    }
    out += std::string(static_cast<std::size_t>(open), ')');
    return out;
  }

  /// `rank`'s value of `v` at the current visit of a node inside the first `frames` loops,
  /// whose presence sequence (if any) is `presence`.
  std::optional<std::string> value_at(const ValueSeq& seq, std::int64_t rank, std::size_t frames,
                                      const ElasticValue* presence = nullptr) const {
    if (seq.empty()) return std::nullopt;
    if (auto c = constant_of(seq)) return num(*c);
    const auto at = occurrence(rank, frames);
    if (!at) return std::nullopt;
    const auto index = present_visits(presence, rank, *at);
    if (frames == loops_.size() && index == at)  // present at every visit
      if (auto p = periodic_value(seq, rank)) return p;
    return sequence_value(seq, index);
  }

  /// `rank`'s value of `v` for the statement being written; the mean with a note (and so a
  /// warning) when it changes between iterations in a way the loop variables cannot express.
  std::string value_of(const ElasticValue& v, std::int64_t rank, const std::string& what) {
    const ValueSeq* seq = v.for_rank(rank);
    if (!seq || seq->empty()) return "0";
    if (auto x = value_at(*seq, rank, loops_.size(), event_presence_)) return *x;
    note(what + " varies between iterations in a way the loop variables cannot express; its mean is used");
    double sum = 0;
    for (std::uint64_t k = 0; k < seq->size(); ++k) sum += static_cast<double>(seq->at(k));
    return num(std::llround(sum / static_cast<double>(seq->size())));
  }

  /// The condition (on loop variables) under which `rank` runs the current statement: the
  /// trip counts of bounded loops and the presence sequences. "" always; nullopt never.
  std::optional<std::string> conditions(std::int64_t rank) {
    std::vector<std::string> parts;
    for (std::size_t k = 0; k < loops_.size(); ++k) {
      const LoopFrame& l = loops_[k];
      if (!l.bounded || l.var.empty()) continue;
      const ValueSeq* seq = l.trips->for_rank(rank);
      if (!seq || seq->empty()) return std::nullopt;
      const auto x =
          l.visit_var.empty() ? value_at(*seq, rank, l.outside, l.presence_seq) : sequence_value(*seq, l.visit_var);
      if (x) {
        parts.push_back(l.var + " < " + *x);
      } else {
        note("the trip count of loop " + l.var +
             " changes between visits in a way the loop variables cannot "
             "express; the largest count is used");
      }
    }
    for (const PresenceFrame& p : presence_) {
      const ValueSeq* seq = p.presence->for_rank(rank);
      if (seq == nullptr) continue;  // a merged node's rank without a sequence: present at every visit (cursor)
      if (seq->empty()) return std::nullopt;
      if (auto c = constant_of(*seq)) {
        if (*c == 0) return std::nullopt;
        continue;
      }
      if (auto x = value_at(*seq, rank, p.outside)) {
        parts.push_back("(" + *x + ") = 1");
      } else {
        note(
            "a call made only on some iterations follows no pattern of the loop variables; it is made on "
            "every iteration");
      }
    }
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? " /\\ " : "") + parts[i];
    return out;
  }

  // ---- task sets ----

  static int alternative_of(const ElasticValue& v, std::int64_t rank) {
    if (v.alternatives.size() <= 1) return 0;
    for (std::size_t a = 0; a < v.alternatives.size(); ++a)
      if (v.alternatives[a].second.empty() || v.alternatives[a].second.contains(rank)) return static_cast<int>(a);
    return -1;
  }

  /// Groups of ranks that share every parameter, trip count and presence sequence: one
  /// statement each. Peers on other communicators are grouped by their world offsets.
  std::vector<RankList> rank_groups(const EventNode& e, const RankList& ranks, const ElasticValue* extra = nullptr) {
    std::map<std::vector<std::int64_t>, std::vector<std::int64_t>> by;
    std::map<std::vector<std::int64_t>, std::int64_t> offset_ids;
    const auto comm = codegen_support::uniform_of(field(e, Field::Comm));
    for (auto r : ranks.to_vector()) {
      std::vector<std::int64_t> signature;
      for (const auto& f : e.fields) signature.push_back(alternative_of(f, r));
      for (const auto& l : loops_) signature.push_back(alternative_of(*l.trips, r));
      for (const auto& p : presence_) signature.push_back(alternative_of(*p.presence, r));
      if (extra != nullptr) signature.push_back(alternative_of(*extra, r));
      if (!comm || *comm != 0)
        for (Field f : {Field::Peer, Field::Peer2}) {
          const auto offsets = world_offsets(e, r, f).to_vector();
          signature.push_back(
              offset_ids.try_emplace(offsets, static_cast<std::int64_t>(offset_ids.size())).first->second);
        }
      by[signature].push_back(r);
    }
    std::vector<RankList> out;
    for (auto& [sig, members] : by) out.push_back(RankList::from_sequence(members));
    std::sort(out.begin(), out.end(), [](const RankList& a, const RankList& b) { return a.at(0) < b.at(0); });
    return out;
  }

  /// Members of a communicator a rank names, in communicator rank order.
  RankList members_of(std::int64_t comm, std::int64_t rank) const {
    if (comm == 0) return RankList::range(0, trace_->nranks);
    if (comm == 1) return RankList::single(rank);
    if (const CommEntry* entry = trace_->comms.find(comm, rank)) return entry->members;
    return {};
  }

  /// A rank's peers (relative to its communicator) as world offsets, occurrence by occurrence.
  ValueSeq world_offsets(const EventNode& e, std::int64_t rank, Field which) const {
    ValueSeq out;
    const ValueSeq* cs = field(e, Field::Comm).for_rank(rank);
    const ValueSeq* vs = field(e, which).for_rank(rank);
    if (!cs || !vs || cs->empty()) return out;
    if (auto c = constant_of(*cs); c && *c == 0) return *vs;
    for (std::uint64_t k = 0; k < vs->size() && k < 100000; ++k) {
      const std::int64_t v = vs->at(k);
      if (v == kAnySource || v == kProcNull) {
        out.append(v);
        continue;
      }
      const RankList members = members_of(cs->at(std::min<std::uint64_t>(k, cs->size() - 1)), rank);
      const std::int64_t at = members.index_of(rank) + v;
      out.append(at >= 0 && at < members.size() ? members.at(at) - rank : 0);
    }
    return out;
  }

  std::string source_set(const RankList& ranks) const {
    if (is_everyone(ranks, trace_->nranks)) return "ALL TASKS t";
    if (ranks.size() == 1) return "TASK " + std::to_string(ranks.at(0));
    return "TASKS t SUCH THAT " + rank_condition(ranks, "t", trace_->nranks);
  }

  /// Receivers are a target set: the language accepts no ALL TASKS there.
  std::string target_set(const RankList& ranks, const std::string& var) const {
    if (ranks.size() == 1) return "TASK " + std::to_string(ranks.at(0));
    if (is_everyone(ranks, trace_->nranks)) return "TASKS " + var + " SUCH THAT " + var + " >= 0";
    return "TASKS " + var + " SUCH THAT " + rank_condition(ranks, var, trace_->nranks);
  }

  // ---- point-to-point ----

  /// The peer of the group's statement: "t+offset" (an expression of the loop variables when
  /// it changes between iterations); nullopt for MPI_PROC_NULL / unresolved wildcards.
  std::optional<std::string> peer(const EventNode& e, const RankList& ranks, Field which) {
    const std::int64_t r = ranks.at(0);
    const ValueSeq offsets = world_offsets(e, r, which);
    for (std::uint64_t k = 0; k < offsets.size() && k < 100000; ++k)
      if (offsets.at(k) == kProcNull || offsets.at(k) == kAnySource) {
        note("MPI_" + std::string(op_name(e.op)) +
             " with MPI_PROC_NULL or an unresolved MPI_ANY_SOURCE peer is left out");
        return std::nullopt;
      }
    ElasticValue v;
    v.alternatives.push_back({offsets, RankList()});
    const std::string x = value_of(v, r, "peer");
    return x == "0" ? "t" : "t+" + x;
  }

  std::string tag_clause(const EventNode& e, const RankList& ranks, Field which) {
    const ValueSeq* seq = field(e, which).for_rank(ranks.at(0));
    if (seq)
      for (std::uint64_t k = 0; k < seq->size() && k < 100000; ++k)
        if (seq->at(k) == kAnyTag) {
          note("an MPI_ANY_TAG receive that matches no message is written without a tag");
          return "";
        }
    const std::string tag = value_of(field(e, which), ranks.at(0), "tag");
    return tag == "0" ? "" : " USING TAG " + tag;
  }

  std::string point_to_point(const EventNode& e, const RankList& ranks) {
    const std::int64_t r = ranks.at(0);
    const OpKind kind = op_kind(e.op);
    auto bytes = [&](Field f) { return value_of(field(e, f), r, "message size"); };
    auto send = [&](bool async, Field peer_f, Field bytes_f, Field tag_f) -> std::string {
      auto to = peer(e, ranks, peer_f);
      if (!to) return "";
      return source_set(ranks) + (async ? " ASYNCHRONOUSLY" : "") + " SEND A " + bytes(bytes_f) + " BYTE MESSAGE" +
             tag_clause(e, ranks, tag_f) + " TO UNSUSPECTING TASK " + *to;
    };
    auto receive = [&](bool async, Field peer_f, Field bytes_f, Field tag_f) -> std::string {
      auto from = peer(e, ranks, peer_f);
      if (!from) return "";
      return target_set(ranks, "t") + (async ? " ASYNCHRONOUSLY" : "") + " RECEIVE A " + bytes(bytes_f) +
             " BYTE MESSAGE" + tag_clause(e, ranks, tag_f) + " FROM TASK " + *from;
    };
    switch (kind) {
      case OpKind::BlockingSend:
      case OpKind::NonblockingSend:
        return send(kind == OpKind::NonblockingSend, Field::Peer, Field::Bytes, Field::Tag);
      case OpKind::BlockingRecv:
      case OpKind::NonblockingRecv:
        return receive(kind == OpKind::NonblockingRecv, Field::Peer, Field::Bytes, Field::Tag);
      case OpKind::SendRecv: {  // its send and receive; awaiting_event() adds the wait
        const std::string s = send(true, Field::Peer, Field::Bytes, Field::Tag);
        const std::string v = receive(true, Field::Peer2, Field::Bytes2, Field::Tag2);
        std::string out;
        for (const std::string& part : {s, v})
          if (!part.empty()) out += (out.empty() ? "" : " then\n" + indent() + "  ") + part;
        return out;
      }
      case OpKind::PersistentSend:
      case OpKind::PersistentRecv:
      case OpKind::Start:
        return "";  // each MPI_Start is the asynchronous sends / receives it starts (event())
      case OpKind::Probe:
        note("MPI_" + std::string(op_name(e.op)) + " has no coNCePTuaL counterpart and is left out");
        return "";
      default:
        return "";  // Init/Finalize (the frame), communicator management (task sets), Other
    }
  }

  // ---- waiting: AWAIT COMPLETION where the traced run had completed the task's requests ----

  /// A Wait* / Test* call or an MPI_Sendrecv. AWAIT COMPLETION waits for all of the task's
  /// outstanding requests, so it is written only on the occurrences after which the traced run
  /// had completed all of them (codegen_await_points.hpp): the benchmark then waits for nothing
  /// the traced run had not received or sent by that point, whatever order its requests
  /// complete in. Elsewhere the call is left out (an MPI_Sendrecv keeps its asynchronous send
  /// and receive) and its requests are awaited at the next such point, at the latest at the end.
  void awaiting_event(const Node& node, const EventNode& e, const RankList& all) {
    static const ElasticValue kNowhere;
    const auto it = awaits_.find(&node);
    const ElasticValue& flags = it == awaits_.end() ? kNowhere : it->second;
    const bool sendrecv = op_kind(e.op) == OpKind::SendRecv;
    const std::string op = "MPI_" + std::string(op_name(e.op));
    for (const RankList& ranks : rank_groups(e, all, &flags)) {
      const std::int64_t r = ranks.at(0);
      const std::string tasks = source_set(ranks);
      const ValueSeq* seq = flags.for_rank(r);
      const auto always = seq != nullptr ? constant_of(*seq) : std::nullopt;
      std::optional<std::string> when;  // "" on every occurrence, a condition, or nullopt: never
      if (always) {
        if (*always == 1) when = "";
      } else if (seq != nullptr && !seq->empty()) {
        when = value_at(*seq, r, loops_.size(), event_presence_);
        if (when) {
          *when = "(" + *when + ") = 1";
        } else {
          note(op +
               ": the calls after which the traced run had completed all of the task's requests follow no "
               "pattern of the loop variables; its AWAIT COMPLETION is left out and the requests are awaited "
               "later");
        }
      }
      if (sendrecv) {
        note(always && *always == 1
                 ? "MPI_Sendrecv is an asynchronous send and receive followed by AWAIT COMPLETION, which also "
                   "completes the task's other outstanding requests"
                 : "MPI_Sendrecv is an asynchronous send and receive; its AWAIT COMPLETION, which waits for all "
                   "of the task's requests, is written only where the traced run had no other request "
                   "outstanding (elsewhere they are awaited later)");
      } else if (!always || *always != 1) {
        note(op +
             " leaves some of the task's requests outstanding on some calls in the traced run; AWAIT "
             "COMPLETION, which waits for all of them, is written only on the calls after which the traced run "
             "had completed all (the requests of the other calls are awaited there)");
      }
      std::string text = sendrecv ? point_to_point(e, ranks) : "";
      if (when) {
        const std::string await = (when->empty() ? "" : "IF " + *when + " THEN ") + tasks + " AWAIT COMPLETION";
        text += (text.empty() ? "" : " then\n" + indent() + "  ") + await;
      }
      emit(ranks, e, tasks, text);  // an empty text keeps the computation before the call
    }
  }

  // ---- collectives: one statement per communicator instance, over its task set ----

  void collective_event(const EventNode& e, const RankList& all) {
    std::map<std::vector<std::int64_t>, std::pair<RankList, std::vector<std::int64_t>>> instances;
    for (auto r : all.to_vector()) {
      const ValueSeq* cs = field(e, Field::Comm).for_rank(r);
      if (!cs || cs->empty()) continue;
      if (!cs->is_constant())
        note("MPI_" + std::string(op_name(e.op)) + " at call site " + std::to_string(e.site) +
             " uses different communicators on different iterations; the first is used");
      const RankList members = members_of(cs->at(0), r);
      if (members.empty()) continue;
      auto sorted = members.to_vector();
      std::sort(sorted.begin(), sorted.end());
      auto& inst = instances[sorted];
      inst.first = members;
      inst.second.push_back(r);
    }
    for (const auto& [sorted, inst] : instances) {
      const RankList present = RankList::from_sequence(inst.second);
      const RankList members = RankList::from_sequence(sorted);
      std::string text = collective(e, inst.first, members, present);
      if (!text.empty()) emit(present, e, source_set(present), text);
    }
  }

  /// One value of a collective's parameter for all of `present`: the members agree, else
  /// their mean (noted).
  std::string agreed_value(const EventNode& e, Field f, const RankList& present, const std::string& what) {
    const ValueSeq* first = field(e, f).for_rank(present.at(0));
    bool same = true;
    double sum = 0, n = 0;
    for (auto r : present.to_vector()) {
      const ValueSeq* seq = field(e, f).for_rank(r);
      if (!seq || !first || !(*seq == *first)) same = false;
      if (seq)
        for (std::uint64_t k = 0; k < seq->size() && k < 100000; ++k, ++n) sum += static_cast<double>(seq->at(k));
    }
    if (same) return value_of(field(e, f), present.at(0), what);
    note(what + " differs between the members; their mean is used (Table 4.1)");
    return num(std::llround(n > 0 ? sum / n : 0));
  }

  /// Reduction data as the language allows: DOUBLEWORDS or INTEGERS.
  std::string items(const EventNode& e, Field f, const RankList& present) {
    const std::string b = agreed_value(e, f, present, "MPI_" + std::string(op_name(e.op)) + " size");
    bool by8 = true, by4 = true;
    for (auto r : present.to_vector())
      if (const ValueSeq* seq = field(e, f).for_rank(r))
        for (std::uint64_t k = 0; k < seq->size() && k < 100000; ++k) {
          by8 &= seq->at(k) % 8 == 0;
          by4 &= seq->at(k) % 4 == 0;
        }
    const bool constant = b.find_first_not_of("0123456789") == std::string::npos;
    if (constant && b == "0") return "0 INTEGERS";
    if (by8) return (constant ? std::to_string(std::stoll(b) / 8) : "(" + b + ")/8") + " DOUBLEWORDS";
    if (by4) return (constant ? std::to_string(std::stoll(b) / 4) : "(" + b + ")/4") + " INTEGERS";
    note("MPI_" + std::string(op_name(e.op)) +
         " reduces a size that is no multiple of 4 bytes; rounded up to INTEGERS");
    return (constant ? std::to_string((std::stoll(b) + 3) / 4) : "((" + b + ")+3)/4") + " INTEGERS";
  }

  /// World ranks the root takes, and the condition on the loop variables for each.
  std::vector<std::pair<std::int64_t, std::string>> roots(const EventNode& e, const RankList& order,
                                                          const RankList& present) {
    const std::int64_t r = present.at(0);
    const ValueSeq* seq = field(e, Field::Root).for_rank(r);
    if (!seq || seq->empty()) return {{order.at(0), ""}};
    ValueSeq world;
    std::set<std::int64_t> distinct;
    for (std::uint64_t k = 0; k < seq->size() && k < 100000; ++k) {
      const std::int64_t v = seq->at(k);
      const std::int64_t w = v >= 0 && v < order.size() ? order.at(v) : order.at(0);
      world.append(w);
      distinct.insert(w);
    }
    if (distinct.size() == 1) return {{*distinct.begin(), ""}};
    auto x = value_at(world, r, loops_.size(), event_presence_);
    if (!x || distinct.size() > 16) {
      note("the root of MPI_" + std::string(op_name(e.op)) +
           " changes between iterations in a way the loop variables cannot express; the first is used");
      return {{world.at(0), ""}};
    }
    // a root that changes per iteration: one statement per root value (a task expression with
    // IF/OTHERWISE in it meets a precedence bug in the compiler's C output)
    std::vector<std::pair<std::int64_t, std::string>> out;
    for (auto w : distinct) out.push_back({w, "(" + *x + ") = " + std::to_string(w)});
    return out;
  }

  std::string others(const RankList& members, const std::string& var, const std::string& except) const {
    if (is_everyone(members, trace_->nranks)) return "ALL OTHER TASKS";
    return "TASKS " + var + " SUCH THAT (" + rank_condition(members, var, trace_->nranks) + ") /\\ " + var + " <> " +
           except;
  }

  std::string collective(const EventNode& e, const RankList& order, const RankList& members, const RankList& present) {
    const std::string op(op_name(e.op));
    const std::string base = op_kind(e.op) == OpKind::NonblockingCollective ? op.substr(1) : op;
    std::string b = base;
    for (auto& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (op_kind(e.op) == OpKind::NonblockingCollective)
      note("MPI_" + op + " is written as its blocking counterpart (the language has no nonblocking collectives)");
    if (members.size() < 2) {
      note("MPI_" + op + " on a communicator of one task is left out (it moves no data)");
      return "";
    }
    if (!(present == members))
      note("MPI_" + op + " at call site " + std::to_string(e.site) +
           " is not called by every member of its communicator in the trace; the members that call it form "
           "the task set");
    const std::string group = source_set(present);
    const std::string all_u = target_set(present, "u");
    auto rooted = [&](const std::function<std::string(std::int64_t)>& make) {
      std::string out;
      for (const auto& [w, cond] : roots(e, order, present)) {
        std::string s = make(w);
        if (!cond.empty()) s = "IF " + cond + " THEN " + s;
        out += (out.empty() ? "" : " then\n" + indent() + "  ") + s;
      }
      return out;
    };
    if (b == "barrier") return group + " SYNCHRONIZE";
    if (b == "bcast" || b == "scatter" || b == "scatterv") {
      const std::string size =
          agreed_value(e, b == "bcast" ? Field::Bytes : Field::Bytes2, present, "MPI_" + op + " message size");
      return rooted([&](std::int64_t w) {
        return "TASK " + std::to_string(w) + " MULTICASTS A " + size + " BYTE MESSAGE TO " +
               others(present, "u", std::to_string(w));
      });
    }
    if (b == "reduce" || b == "gather" || b == "gatherv") {
      if (b != "reduce") note("MPI_" + op + " is a REDUCE to its root (Table 4.1)");
      const std::string n = items(e, Field::Bytes, present);
      return rooted([&](std::int64_t w) { return group + " REDUCE " + n + " TO TASK " + std::to_string(w); });
    }
    if (b == "allreduce" || b == "scan" || b == "exscan" || b == "reduce_scatter" || b == "reduce_scatter_block") {
      if (b != "allreduce") note("MPI_" + op + " is a REDUCE to all its tasks (Table 4.1)");
      return group + " REDUCE " + items(e, b.rfind("reduce_scatter", 0) == 0 ? Field::Bytes2 : Field::Bytes, present) +
             " TO " + all_u;
    }
    if (b == "allgather" || b == "allgatherv") {
      note("MPI_" + op + " is a REDUCE to its first task and a MULTICAST from it (Table 4.1)");
      const std::string first = std::to_string(present.at(0));
      return group + " REDUCE " + items(e, Field::Bytes, present) + " TO TASK " + first + " then\n" + indent() +
             "  TASK " + first + " MULTICASTS A " + agreed_value(e, Field::Bytes2, present, "MPI_" + op + " size") +
             " BYTE MESSAGE TO " + others(present, "u", first);
    }
    if (b == "alltoall" || b == "alltoallv" || b == "alltoallw") {
      std::string size;
      if (b == "alltoall") {
        size = agreed_value(e, Field::Bytes, present, "MPI_" + op + " message size");
      } else {  // the mean per-peer size (Table 4.1)
        note("MPI_" + op + " is a MULTICAST of its mean per-peer size (Table 4.1)");
        double sum = 0, n = 0;
        for (auto r : present.to_vector())
          if (const ValueSeq* seq = field(e, Field::Bytes).for_rank(r))
            for (std::uint64_t k = 0; k < seq->size() && k < 100000; ++k, ++n) sum += static_cast<double>(seq->at(k));
        size = num(std::llround(n > 0 ? sum / n / static_cast<double>(members.size()) : 0));
      }
      return group + " MULTICAST A " + size + " BYTE MESSAGE TO " + others(present, "u", "t");
    }
    note("MPI_" + op + " has no coNCePTuaL counterpart and is left out");
    return "";
  }

  CodegenOptions options_;
  const StartedRequests& started_;
  const AwaitPoints& awaits_;
  const Trace* trace_ = nullptr;
  std::vector<std::string> lines_;
  std::vector<std::string> notes_;
  std::vector<LoopFrame> loops_;
  std::vector<PresenceFrame> presence_;
  const ElasticValue* event_presence_ = nullptr;  ///< presence sequence of the event being written
};

}  // namespace

std::vector<std::string> unaligned_collectives(const Trace& trace) {
  std::vector<std::string> out;
  collect_unaligned(trace, trace.nodes, out);
  return out;
}

std::string generate_conceptual(const Trace& trace, const CodegenOptions& options) {
  if (trace.nranks < 1) throw UsageError("cannot generate a benchmark from a trace without ranks");
  // coNCePTuaL has neither MPI_ANY_SOURCE nor MPI_ANY_TAG: both take the matched message's
  Trace work =
      has_wildcards(trace) || has_wildcard_tags(trace) ? resolve_wildcards(trace, nullptr, true) : trace.clone();
  std::vector<std::string> unaligned = unaligned_collectives(work);
  if (!unaligned.empty()) align_siblings(work.nodes, work.nranks);
  std::vector<std::string> start_notes;
  const StartedRequests started = started_requests(work, start_notes);
  const AwaitPoints awaits = codegen_await::await_points(work);
  ConceptualBackend backend(options, started, awaits);
  for (const auto& n : start_notes) backend.add_note(n);
  traverse(work, backend);
  std::string text = backend.finish();
  for (const auto& u : unaligned_collectives(work))
    text.insert(text.find('\n') + 1, "# note: unaligned collective (Algorithm 2 found no partner): " + u + "\n");
  return text;
}

}  // namespace scalatrace
