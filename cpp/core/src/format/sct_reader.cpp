// The .sct reader: decode_trace checks the header, then reads the sections in order, each
// checked as it is read (never allocating beyond the input's size), then the rank segments.
// docs/format.md is the specification; the writer is sct_writer.cpp, the shared codec
// sct_codec.hpp, the value decoders sct_reader_values.cpp.
#include "scalatrace/format/format.hpp"

#include "format/neighbour_grid.hpp"
#include "format/scale_basis.hpp"
#include "format/sct_codec.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "scalatrace/compress/lossy.hpp"
#include "scalatrace/format/trace_validation.hpp"
#include "scalatrace/merge/timing_groups.hpp"
#include "scalatrace/support/entropy_coder.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/support/safe_file.hpp"
#include "scalatrace/support/wire.hpp"

namespace scalatrace {
namespace {

using namespace sct;

/// `n` columns of the node tree (version 11), each `uv length` then its bytes: a reader of
/// each, naming it in errors ("<what> 2 of the node tree").
std::vector<SectionReader> read_columns(SectionReader& r, std::size_t n, const std::string& what) {
  std::vector<SectionReader> columns;
  columns.reserve(n);
  for (std::size_t c = 0; c < n; ++c) {
    const std::size_t len = r.count((what + " byte").c_str());
    const std::size_t base = r.offset();
    columns.emplace_back(r.take(len), base);
    columns.back().set_section(what + " " + std::to_string(c) + " of the node tree");
  }
  return columns;
}

/// Everything decoded so far that later sections refer to, plus the expansion budget: tables
/// let one byte refer to a large entry, so copies are charged against a budget proportional
/// to the input size ("never allocates beyond the input's size" up to a constant factor).
struct TraceReader {
  /// Bin counts as two-byte codes: version 4 and later, unless header flag bit 1 (exact `uv`).
  bool fixed_width_counts = true;
  bool exact_sums = false;                      ///< header flag bit 3: histogram bins hold their sums
  std::uint32_t version = kTraceFormatVersion;  ///< of the file being read
  /// The scale basis (version 5, section 1): what scaled numbers are multiples of.
  std::vector<std::int64_t> basis;
  std::int64_t nranks = 0;
  std::size_t nsites = 0;
  std::size_t nnames = 0;
  std::vector<RankList> ranks;
  std::vector<ValueSeq> seqs;
  std::vector<ArraySeq> arrays;
  std::vector<ElasticValue> elastics;
  std::vector<std::uint64_t> elastic_cost;
  /// Neighbour grids (version 6, section 7), each with its ranks' classes.
  std::vector<neighbour_grid::GridClasses> grids;
  std::vector<ElasticArray> array_elastics;
  std::vector<std::uint64_t> array_elastic_cost;
  std::uint64_t budget = 0;
  /// Where each event's timing lies (reader offsets), for trace_byte_breakdown; null otherwise.
  std::vector<std::pair<std::size_t, std::size_t>>* timing_ranges = nullptr;
  /// Version 11 final files: the nodes and the events' timing are in columns; the events, in
  /// file order, wait for their timing here.
  bool columns = false;
  std::vector<EventNode*> events_awaiting_timing;

  void charge(SectionReader& r, std::uint64_t units) {
    if (units > budget) r.fail("implausible expansion of shared table entries");
    budget -= units;
  }
  std::uint64_t index(SectionReader& r, std::size_t table_size, const char* what) {
    std::uint64_t i = r.uv();
    if (i > table_size)
      r.fail(std::string(what) + " index " + std::to_string(i) + " out of range (table has " +
             std::to_string(table_size) + ")");
    return i;
  }
  RankList rank_ref(SectionReader& r) {
    std::uint64_t i = index(r, ranks.size(), "ranklist");
    if (i == 0) return {};
    charge(r, ranks[i - 1].descriptors().size() + 1);
    return ranks[i - 1];
  }
  /// The neighbour grids before the elastic values (version 6; TraceWriter::put_grids).
  void read_grids(SectionReader& r, std::int64_t nranks) {
    namespace ng = neighbour_grid;
    const std::size_t n = r.count("neighbour grid", 4);
    if (n > ng::kMaxGrids) r.fail("more than " + std::to_string(ng::kMaxGrids) + " neighbour grids");
    for (std::size_t i = 0; i < n; ++i) {
      if (nranks < 2 || nranks > ng::kMaxRanks)
        r.fail("neighbour grid over " + std::to_string(nranks) + " ranks (2 to " + std::to_string(ng::kMaxRanks) +
               " allowed)");
      const std::uint64_t ndims = r.uv();
      if (ndims < 1 || ndims > ng::kMaxDims) r.fail("neighbour grid with " + std::to_string(ndims) + " dimensions");
      ng::Grid g;
      std::int64_t outer = nranks;
      for (std::uint64_t k = 0; k + 1 < ndims; ++k) {
        const std::int64_t stride = get_scaled(r, basis);
        if (stride < 1 || stride >= outer || outer % stride != 0 || outer / stride < 2)
          r.fail("neighbour grid stride " + std::to_string(stride) + " does not divide " + std::to_string(outer));
        g.dims.push_back(outer / stride);
        outer = stride;
      }
      if (outer < 2) r.fail("neighbour grid with an innermost dimension below 2");
      g.dims.push_back(outer);
      const std::uint64_t reach = r.uv();
      if (reach < 1 || reach > static_cast<std::uint64_t>(ng::kMaxReach))
        r.fail("neighbour grid reach " + std::to_string(reach) + " (1 to " + std::to_string(ng::kMaxReach) + ")");
      const std::uint64_t ndirs = r.uv();
      if (ndirs < 1 || ndirs > ng::kMaxDirections)
        r.fail("neighbour grid with " + std::to_string(ndirs) + " directions (1 to " +
               std::to_string(ng::kMaxDirections) + ")");
      std::uint64_t codes = 1;
      for (std::uint64_t k = 0; k < ndims; ++k) codes *= 2 * reach + 1;
      for (std::uint64_t k = 0; k < ndirs; ++k) {
        const std::uint64_t code = r.uv();
        if (code >= codes) r.fail("neighbour grid direction code " + std::to_string(code) + " out of range");
        const ng::Direction d = ng::direction_from_code(code, g.dims.size(), static_cast<int>(reach));
        if (std::find(g.directions.begin(), g.directions.end(), d) != g.directions.end())
          r.fail("neighbour grid direction repeated");
        g.directions.push_back(d);
      }
      grids.emplace_back(std::move(g));
    }
  }
  /// An elastic value stated over a neighbour grid (after its 0 alternatives; version 6).
  ElasticValue read_grid_value(SectionReader& r, std::uint64_t& cost) {
    namespace ng = neighbour_grid;
    ng::GridValue v;
    v.grid = static_cast<std::size_t>(r.uv());
    if (v.grid == grids.size() && version >= 11) return read_rank_affine_value(r, cost);
    if (v.grid >= grids.size()) r.fail("neighbour grid index " + std::to_string(v.grid) + " out of range");
    const ng::GridClasses& classes = grids[v.grid];
    const std::uint64_t form = r.uv();
    if (form >= ng::kFormCount) r.fail("unknown neighbour grid form " + std::to_string(form));
    v.form = static_cast<ng::Form>(form);
    const std::size_t ndirs = classes.grid().directions.size();
    if (v.form == ng::Form::Filtered) {
      const std::uint64_t s = r.uv();
      if (s >= seqs.size())
        r.fail("sequence index " + std::to_string(s) + " out of range (table has " + std::to_string(seqs.size()) + ")");
      if (seqs[s].size() != ndirs)
        r.fail("neighbour grid template of " + std::to_string(seqs[s].size()) + " values for " + std::to_string(ndirs) +
               " directions");
      v.values = seqs[s].to_vector();
    }
    v.repeat = r.uv();
    if (v.repeat < 1 || v.repeat > (std::uint64_t{1} << 56))
      r.fail("neighbour grid repeat count " + std::to_string(v.repeat) + " out of range");
    ElasticValue e = ng::expand(v, classes);
    for (const auto& [seq, rl] : e.alternatives) {
      if (seq.empty()) r.fail("neighbour grid value gives rank " + std::to_string(rl.at(0)) + " no values");
      const std::uint64_t c = seq_cost(seq) + rl.descriptors().size() + 1;
      charge(r, c);
      cost += c;
    }
    return e;
  }
  /// Version 11: an elastic value in rank-affine form (after its 0 alternatives and the grid
  /// index one past the last grid): `sv slope`, `sv intercept`, `uv repeat`, ranklist ref; each
  /// rank r of the ranklist (strictly increasing) is an alternative of its own whose value is
  /// slope * r + intercept, `repeat` times.
  ElasticValue read_rank_affine_value(SectionReader& r, std::uint64_t& cost) {
    const std::int64_t slope = r.sv(), intercept = r.sv();
    const std::uint64_t repeat = r.uv();
    if (repeat < 1 || repeat > (std::uint64_t{1} << 56))
      r.fail("rank-affine value repeat count " + std::to_string(repeat) + " out of range");
    const RankList ranks = rank_ref(r);
    if (ranks.empty()) r.fail("rank-affine value without ranks");
    ElasticValue e;
    std::int64_t previous = -1;
    for (const std::int64_t rank : ranks.to_vector()) {
      if (rank <= previous) r.fail("rank-affine value over ranks not in increasing order");
      previous = rank;
      const __int128 value = static_cast<__int128>(slope) * rank + intercept;
      if (value > std::numeric_limits<std::int64_t>::max() || value < std::numeric_limits<std::int64_t>::min())
        r.fail("rank-affine value out of range");
      charge(r, 3);
      cost += 3;
      e.alternatives.emplace_back(ValueSeq::constant(static_cast<std::int64_t>(value), repeat), RankList::single(rank));
    }
    return e;
  }
  /// An elastic array stated over a neighbour grid (after its 0 alternatives; version 6).
  ElasticArray read_grid_array(SectionReader& r, std::uint64_t& cost) {
    namespace ng = neighbour_grid;
    ng::GridArray v;
    v.grid = static_cast<std::size_t>(r.uv());
    if (v.grid >= grids.size()) r.fail("neighbour grid index " + std::to_string(v.grid) + " out of range");
    v.first_per_direction = r.sv();
    v.first_base = r.sv();
    v.stride = r.sv();
    v.length_per_direction = r.sv();
    v.length_base = r.sv();
    v.repeat_per_direction = r.sv();
    v.repeat_base = r.sv();
    const auto max_length = static_cast<std::int64_t>(std::min<std::uint64_t>(budget, std::uint64_t{1} << 24));
    auto e = ng::expand_array(v, grids[v.grid], max_length);
    if (!e)
      r.fail("neighbour grid array: a rank's length below 0 or above " + std::to_string(max_length) +
             ", or its repeat count below 1");
    for (const auto& [seq, rl] : e->alternatives) {
      const std::uint64_t c = seq_cost(seq) + rl.descriptors().size() + 1;
      charge(r, c);
      cost += c;
    }
    return std::move(*e);
  }
  template <class Seq>
  void read_elastic_table(SectionReader& r, const std::vector<Seq>& pool, std::vector<Elastic<Seq>>& out,
                          std::vector<std::uint64_t>& costs, const char* what, bool grid_forms) {
    std::size_t n = r.count(what, 3);
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      Elastic<Seq> e;
      std::size_t na = r.count("elastic alternative", 2);
      std::uint64_t cost = 1;
      if (na == 0 && grid_forms) {
        if constexpr (std::is_same_v<Seq, ValueSeq>)
          e = read_grid_value(r, cost);
        else
          e = read_grid_array(r, cost);
        out.push_back(std::move(e));
        costs.push_back(cost);
        continue;
      }
      if (na == 0) r.fail("elastic value without alternatives");
      for (std::size_t k = 0; k < na; ++k) {
        std::uint64_t s = r.uv();
        if (s >= pool.size())
          r.fail("sequence index " + std::to_string(s) + " out of range (table has " + std::to_string(pool.size()) +
                 ")");
        RankList rl = rank_ref(r);
        std::uint64_t c = seq_cost(pool[s]) + rl.descriptors().size() + 1;
        charge(r, c);
        cost += c;
        e.alternatives.emplace_back(pool[s], std::move(rl));
      }
      out.push_back(std::move(e));
      costs.push_back(cost);
    }
  }
  static std::uint64_t seq_cost(const ValueSeq& s) {
    std::uint64_t c = 1;
    for (const auto& b : s.blocks()) c += 1 + b.runs.size();
    return c;
  }
  static std::uint64_t seq_cost(const ArraySeq& s) {
    std::uint64_t c = 1;
    for (const auto& run : s.runs()) c += 1 + run.values.size();
    return c;
  }
  ElasticValue elastic_ref(SectionReader& r) {
    std::uint64_t i = index(r, elastics.size(), "elastic value");
    if (i == 0) return {};
    charge(r, elastic_cost[i - 1]);
    return elastics[i - 1];
  }
  ElasticArray array_elastic_ref(SectionReader& r) {
    std::uint64_t i = index(r, array_elastics.size(), "elastic array");
    if (i == 0) return {};
    charge(r, array_elastic_cost[i - 1]);
    return array_elastics[i - 1];
  }

  void check_ids(SectionReader& r, const ElasticValue& v, std::size_t limit, const char* what) {
    for (const auto& [seq, rl] : v.alternatives)
      for (const auto& b : seq.blocks())
        for (const auto& run : b.runs) {
          // A run's values are first, first+stride, ..., first+(count-1)*stride.
          __int128 last = static_cast<__int128>(run.first) +
                          static_cast<__int128>(run.stride) * static_cast<__int128>(run.count - 1);
          __int128 lo = std::min<__int128>(run.first, last), hi = std::max<__int128>(run.first, last);
          if (lo < 0 || hi >= static_cast<__int128>(limit))
            r.fail(std::string(what) + " out of range (table has " + std::to_string(limit) + ")");
        }
  }

  /// Where a node's numbers are read: version 11 final files, five columns (NodeColumn);
  /// before, and in traces passed between processes, all from the node tree's reader.
  struct NodeReaders {
    SectionReader& structure;  ///< flags, ranklist ref, loop body counts
    SectionReader& op;
    SectionReader& site;
    SectionReader& mask;  ///< field masks (and the version 7 counts)
    SectionReader& refs;  ///< presence, trip counts, site ids, fields, lossy fields
  };

  Node node(NodeReaders& c, std::size_t depth) {
    SectionReader& r = c.structure;
    if (depth > kMaxDepth) r.fail("loops nested deeper than " + std::to_string(kMaxDepth));
    charge(r, 4);
    Node n;
    std::uint8_t flags = r.u8();
    if (flags & ~(kNodeLoop | kNodeHasPresence)) r.fail("unknown node flags " + std::to_string(flags));
    n.ranks = rank_ref(r);
    if (flags & kNodeHasPresence) {
      n.presence = elastic_ref(c.refs);
      if (n.presence.empty()) c.refs.fail("presence flag without a presence sequence");
    }
    if (flags & kNodeLoop) {
      n.loop = std::make_unique<LoopNode>();
      n.loop->trips = elastic_ref(c.refs);
      if (n.loop->trips.empty()) c.refs.fail("loop without trip counts");
      std::size_t nb = r.count("loop body node", 2);
      n.loop->body.reserve(nb);
      for (std::size_t i = 0; i < nb; ++i) n.loop->body.push_back(node(c, depth + 1));
      return n;
    }
    n.event = std::make_unique<EventNode>();
    EventNode& e = *n.event;
    std::uint64_t op = c.op.uv();
    if (op >= kOpCount) c.op.fail("unknown operation " + std::to_string(op));
    e.op = static_cast<Op>(op);
    std::uint64_t site = c.site.uv();
    if (site >= nsites)
      c.site.fail("call-site id " + std::to_string(site) + " out of range (table has " + std::to_string(nsites) + ")");
    e.site = static_cast<std::uint32_t>(site);
    e.site_ids = elastic_ref(c.refs);
    check_ids(c.refs, e.site_ids, nsites, "call-site id");
    if (version >= 8) {
      read_field_mask(c.mask, c.refs, e);
    } else {
      std::uint64_t nf = r.uv();
      if (nf > kFieldCount)
        r.fail("event with " + std::to_string(nf) + " fields (this reader knows " + std::to_string(kFieldCount) + ")");
      for (std::size_t f = 0; f < nf; ++f) e.fields[f] = elastic_ref(r);
      std::uint64_t na = r.uv();
      if (na > kArrayFieldCount)
        r.fail("event with " + std::to_string(na) + " array fields (this reader knows " +
               std::to_string(kArrayFieldCount) + ")");
      for (std::size_t f = 0; f < na; ++f) e.arrays[f] = array_elastic_ref(r);
    }
    if (e.op == Op::Other)
      check_ids(c.refs, e.fields[static_cast<std::size_t>(Field::NameId)], nnames, "function-name id");
    if (columns) {
      events_awaiting_timing.push_back(&e);
      return n;
    }
    const std::size_t timing_start = r.offset();
    read_timing(r, e);
    if (timing_ranges) timing_ranges->emplace_back(timing_start, r.offset());
    return n;
  }

  /// Version 11: the timing columns after the nodes (each `uv length`, then its bytes), read
  /// for each event in file order; every column must be consumed exactly.
  void read_timing_columns(SectionReader& r) {
    const std::size_t start = r.offset();
    std::vector<SectionReader> columns = read_columns(r, kTimingColumnCount, "timing column");
    for (EventNode* e : events_awaiting_timing) read_timing_from_columns(columns, *e);
    for (auto& c : columns)
      if (!c.done()) c.fail("unexpected bytes at the end of the timing column");
    if (timing_ranges) timing_ranges->emplace_back(start, r.offset());
  }

  /// One event's timing from the columns (version 11): `uv 4 * ngroups + 2 * explicit + firsts`;
  /// per group its ranklist, then compute, duration (its last bin's count implied by the
  /// compute histogram's unless `explicit`) and, with firsts, the first-occurrence histogram.
  void read_timing_from_columns(std::span<SectionReader> columns, EventNode& e) {
    SectionReader& groups_column = columns[kColumnGroups];
    const std::uint64_t code = groups_column.uv();
    const bool firsts = (code & 1) != 0, explicit_counts = (code & 2) != 0;
    const std::uint64_t ngroups = code >> 2;
    if (ngroups > EventNode::kMaxTimingGroups || ngroups == 1)
      groups_column.fail("event with " + std::to_string(ngroups) + " timing groups (0 or 2.." +
                         std::to_string(EventNode::kMaxTimingGroups) + ")");
    auto one = [&](Histogram& compute, Histogram& duration, Histogram& first) {
      compute = get_hist_columns(columns, 0);
      duration = get_hist_columns(columns, explicit_counts ? 0 : compute.count());
      if (!explicit_counts && compute.count() == 0 && !duration.bins().empty())
        columns[kColumnLayouts].fail("duration histogram of an event without compute times");
      first = Histogram(compute.sub_bins());
      if (firsts) {
        first = get_hist_columns(columns, 0);
        check_first_compute(columns[kColumnLayouts], first, compute);
      }
    };
    if (ngroups == 0) {
      one(e.compute, e.duration, e.first_compute);
      return;
    }
    for (std::uint64_t g = 0; g < ngroups; ++g) {
      TimingGroup group;
      group.ranks = rank_ref(groups_column);
      if (group.ranks.empty()) groups_column.fail("timing group without ranks");
      one(group.compute, group.duration, group.first_compute);
      add_timing_group(groups_column, e, std::move(group), g == 0);
    }
  }

  /// A group's histograms merged into the node's (the first group's are its copy).
  static void add_timing_group(SectionReader& r, EventNode& e, TimingGroup&& group, bool first_group) {
    if (first_group) {
      e.compute = group.compute;
      e.duration = group.duration;
      e.first_compute = group.first_compute;
    } else {
      if (group.compute.sub_bins() != e.compute.sub_bins() || group.duration.sub_bins() != e.duration.sub_bins())
        r.fail("timing groups with different bins per octave");
      e.compute.merge(group.compute);
      e.duration.merge(group.duration);
      e.first_compute.merge(group.first_compute);
    }
    e.timing_groups.push_back(std::move(group));
  }

  /// An event's timing: its groups' (or the node's) compute, duration and first-occurrence
  /// histograms.
  void read_timing(SectionReader& r, EventNode& e) {
    std::uint64_t ngroups = r.uv();
    bool firsts = false;
    if (version >= 7) {
      firsts = (ngroups & 1) != 0;
      ngroups >>= 1;
    }
    if (ngroups > EventNode::kMaxTimingGroups || ngroups == 1)
      r.fail("event with " + std::to_string(ngroups) + " timing groups (0 or 2.." +
             std::to_string(EventNode::kMaxTimingGroups) + ")");
    if (ngroups == 0) {
      e.compute = hist(r);
      e.duration = hist(r);
      e.first_compute = firsts ? get_first_compute(r, e.compute) : Histogram(e.compute.sub_bins());
      return;
    }
    for (std::uint64_t g = 0; g < ngroups; ++g) {
      TimingGroup group;
      group.ranks = rank_ref(r);
      if (group.ranks.empty()) r.fail("timing group without ranks");
      group.compute = hist(r);
      group.duration = hist(r);
      group.first_compute = firsts ? get_first_compute(r, group.compute) : Histogram(group.compute.sub_bins());
      add_timing_group(r, e, std::move(group), g == 0);
    }
  }

  /// Version 8: one mask of the stored fields (bits 0..17) and arrays (bits 18..21), then
  /// their references, each non-zero.
  void read_field_mask(SectionReader& mask_reader, SectionReader& r, EventNode& e) {
    std::uint64_t mask = mask_reader.uv();
    const bool lossy = version >= 9 && (mask & kLossyMaskBit) != 0;
    if (lossy) mask &= ~kLossyMaskBit;
    if (mask >> (kFieldCount + kArrayFieldCount))
      r.fail("event field mask " + std::to_string(mask) + " names unknown fields");
    for (std::size_t f = 0; f < kFieldCount + kArrayFieldCount; ++f) {
      if (((mask >> f) & 1) == 0) continue;
      if (f < kFieldCount) {
        e.fields[f] = elastic_ref(r);
        if (e.fields[f].empty()) r.fail("event field flagged as stored without a value");
      } else {
        e.arrays[f - kFieldCount] = array_elastic_ref(r);
        if (e.arrays[f - kFieldCount].empty()) r.fail("event array flagged as stored without a value");
      }
    }
    if (lossy) read_lossy(r, e);
  }

  /// Version 9: the fields an event keeps as value histograms (lossy traces, docs/lossy.md).
  void read_lossy(SectionReader& r, EventNode& e) {
    const std::uint64_t mask = r.uv();
    if (mask == 0 || (mask >> kFieldCount) != 0)
      r.fail("lossy field mask " + std::to_string(mask) + " names no or unknown fields");
    for (std::size_t f = 0; f < kFieldCount; ++f) {
      if (((mask >> f) & 1) == 0) continue;
      const auto field = static_cast<Field>(f);
      if (!lossy_field_allowed(e.op, field))
        r.fail("lossy field " + std::string(field_name(field)) + " of a " + std::string(op_name(e.op)) +
               " (only point-to-point peers, tags and byte counts may be lossy)");
      if (!e.fields[f].empty()) r.fail("field " + std::string(field_name(field)) + " both stored and lossy");
      const std::size_t nbins = r.count("value histogram bins", 3);
      if (nbins == 0 || nbins > ValueHistogram::kMaxBins)
        r.fail("value histogram with " + std::to_string(nbins) + " bins (1.." +
               std::to_string(ValueHistogram::kMaxBins) + ")");
      std::vector<ValueBin> bins(nbins);
      for (std::size_t i = 0; i < nbins; ++i) {
        ValueBin& b = bins[i];
        b.lo = i == 0 ? r.sv() : static_cast<std::int64_t>(static_cast<std::uint64_t>(bins[i - 1].lo) + r.uv());
        const std::uint64_t width = r.uv();
        b.hi = static_cast<std::int64_t>(static_cast<std::uint64_t>(b.lo) + width);
        b.count = r.uv();
        if (b.hi < b.lo || (i > 0 && b.lo < bins[i - 1].lo)) r.fail("value histogram bin out of range");
      }
      try {
        e.lossy.push_back(LossyField{field, ValueHistogram::from_bins(std::move(bins))});
      } catch (const FormatError& err) {
        r.fail(err.what());
      }
    }
  }

  Histogram hist(SectionReader& r) {
    return version >= 8 ? get_hist_v8(r, !fixed_width_counts, exact_sums) : get_hist(r, fixed_width_counts);
  }

  /// A first-occurrence histogram (version 7): one value per rank, so never more values than
  /// the compute histogram it belongs to (up to the rounding of two-byte bin counts, at most
  /// 2^-11 of each), and in the same layout.
  Histogram get_first_compute(SectionReader& r, const Histogram& compute) {
    Histogram first = hist(r);
    check_first_compute(r, first, compute);
    return first;
  }
  static void check_first_compute(SectionReader& r, const Histogram& first, const Histogram& compute) {
    if (first.sub_bins() != compute.sub_bins())
      r.fail("first-occurrence compute histogram with other bins per octave than its compute times");
    if (first.count() > compute.count() + compute.count() / 1024)
      r.fail("first-occurrence compute histogram with more values (" + std::to_string(first.count()) +
             ") than its compute times (" + std::to_string(compute.count()) + ")");
  }
};

/// What the header says (docs/format.md, "Header"), checked: the payload's bytes (CRC
/// verified) and what follows them (rank segments, with header flag bit 0).
struct Header {
  std::uint32_t version = 0;
  std::uint32_t flags = 0;
  std::string_view payload;
  std::string_view trailer;
};

Header read_header(std::string_view bytes) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kTraceMagic, 8) != 0)
    throw FormatError("bad magic: not a scalatrace trace (.sct)");
  SectionReader r(bytes, 0);
  r.take(8);
  const std::uint64_t version = r.fixed(4);
  if (version < kOldestReadableFormatVersion || version > kTraceFormatVersion)
    throw FormatError("unsupported format version " + std::to_string(version) + " (this reader supports " +
                      std::to_string(kOldestReadableFormatVersion) + " to " + std::to_string(kTraceFormatVersion) +
                      ")");
  Header h;
  h.version = static_cast<std::uint32_t>(version);
  const std::uint64_t flags = r.fixed(4);
  if (flags & ~std::uint64_t{kKnownFlags}) throw FormatError("unknown header flags " + std::to_string(flags));
  h.flags = static_cast<std::uint32_t>(flags);
  const std::uint64_t length = r.fixed(8);
  const auto crc = static_cast<std::uint32_t>(r.fixed(4));
  const std::size_t have = bytes.size() - kHeaderSize;
  if (length > have)
    throw FormatError("truncated: header announces " + std::to_string(length) + " payload bytes, the file has " +
                      std::to_string(have));
  if ((flags & kFlagEntropyCoded) && h.version < 8)
    throw FormatError("header flag 4 (entropy-coded payload) in a version " + std::to_string(h.version) + " file");
  if ((flags & kFlagEntropyCoded) && (flags & kFlagExactCounts))
    throw FormatError("header flags 2 and 4 together (a trace passed between processes is never entropy-coded)");
  if ((flags & kFlagExactCounts) && h.version < 4)
    throw FormatError("header flag 2 (exact bin counts) in a version " + std::to_string(h.version) + " file");
  if ((flags & kFlagExactSums) && ((flags & kFlagExactCounts) == 0 || h.version < 8))
    throw FormatError("header flag 8 (exact bin sums) without flag 2 or in a version " + std::to_string(h.version) +
                      " file");
  if (length < have && (flags & kFlagRankSegments) == 0)
    throw FormatError("trailing bytes: header announces " + std::to_string(length) + " payload bytes, the file has " +
                      std::to_string(have));
  h.payload = bytes.substr(kHeaderSize, length);
  h.trailer = bytes.substr(kHeaderSize + length);
  if (wire::crc32(h.payload) != crc) throw FormatError("checksum mismatch: the trace file is corrupt");
  return h;
}

/// The payload's sections: the stored bytes, or what they decode to when entropy-coded
/// (bounded before decoding: entropy_decoded_limit). `decoded` keeps the bytes alive.
std::string_view payload_sections(const Header& h, std::string& decoded) {
  if ((h.flags & kFlagEntropyCoded) == 0) return h.payload;
  decoded = entropy::decode(h.payload, entropy_decoded_limit(h.payload.size()), payload_primer(h.version));
  return decoded;
}

/// Section 1: the scale basis (version 5; before it, the rank count), then the metadata.
void read_metadata(SectionReader& r, Trace& t, TraceReader& tr) {
  std::uint64_t n = 0;
  if (tr.version >= 5) {
    // The scale basis: the rank count, then up to three grid strides, decreasing.
    const std::size_t k = r.u8();
    if (k == 0 || k > scale_basis::kMaxBasis) r.fail("scale basis of " + std::to_string(k) + " numbers");
    for (std::size_t i = 0; i < k; ++i) {
      const auto b = static_cast<std::int64_t>(r.fixed(kBasisNumberBytes));
      if (i > 0 && (b < 2 || b >= tr.basis.back()))
        r.fail("scale basis number " + std::to_string(b) + " (must decrease, from the rank count, and be at least 2)");
      tr.basis.push_back(b);
    }
    n = static_cast<std::uint64_t>(tr.basis.front());
  } else {
    n = r.uv();
  }
  if (n > static_cast<std::uint64_t>(kMaxRanks)) r.fail("rank count " + std::to_string(n));
  t.nranks = static_cast<std::int64_t>(n);
  tr.nranks = t.nranks;
  std::size_t m = r.count("metadata entry", 2);
  std::string previous;
  for (std::size_t i = 0; i < m; ++i) {
    std::string k;
    if (tr.version >= 4) {
      const std::uint64_t shared = r.uv();
      if (shared > previous.size())
        r.fail("metadata key shares " + std::to_string(shared) + " bytes with a previous key of " +
               std::to_string(previous.size()));
      tr.charge(r, shared);  // a shared prefix is a copy: bounded like table entries
      k = previous.substr(0, static_cast<std::size_t>(shared)) + get_text(r, "metadata key");
      if (!is_valid_utf8(k)) r.fail("metadata key is not valid UTF-8");
    } else {
      k = get_text(r, "metadata key");
    }
    t.metadata[k] = get_text(r, "metadata value");
    previous = std::move(k);
  }
}

/// Section 2 (version 8): modules, the calling-context tree, then call sites as tree nodes.
/// Version 11: the nodes' parent distances, modules and offsets (differences from the previous
/// offset in the same module) each in a run; a site's symbol as a reference to the distinct
/// symbols before it.
void read_call_site_tree(SectionReader& r, Trace& t, TraceReader& tr, std::size_t nm) {
  struct TreeNode {
    std::uint64_t parent;  // node id + 1 (0 = the root)
    Frame frame;
    std::size_t depth;
  };
  const bool v11 = tr.version >= 11;
  std::size_t nn = r.count("calling-context node", 3);
  std::vector<TreeNode> tree(nn);
  auto read_back = [&](std::size_t i) {
    const std::uint64_t back = r.uv();
    if (back == 0 || back > i + 1)
      r.fail("calling-context node " + std::to_string(i) + " with parent distance " + std::to_string(back));
    TreeNode& n = tree[i];
    n.parent = i + 1 - back;
    n.depth = n.parent == 0 ? 1 : tree[n.parent - 1].depth + 1;
    if (n.depth > kMaxFrames) r.fail("call site deeper than " + std::to_string(kMaxFrames) + " frames");
  };
  auto read_module = [&](std::size_t i) {
    const std::uint64_t mod = r.uv();
    if (mod >= nm) r.fail("module id " + std::to_string(mod) + " out of range");
    tree[i].frame.module = static_cast<std::uint32_t>(mod);
  };
  if (v11) {
    for (std::size_t i = 0; i < nn; ++i) read_back(i);
    for (std::size_t i = 0; i < nn; ++i) read_module(i);
    std::vector<std::uint64_t> previous_offset(nm, 0);
    for (std::size_t i = 0; i < nn; ++i) {
      std::uint64_t& previous = previous_offset[tree[i].frame.module];
      previous += static_cast<std::uint64_t>(r.sv());  // modulo 2^64, as written
      tree[i].frame.offset = previous;
    }
  } else {
    for (std::size_t i = 0; i < nn; ++i) {
      read_back(i);
      read_module(i);
      tree[i].frame.offset = r.uv();
    }
  }
  std::size_t ns = r.count("call site", 3);
  std::vector<std::string> symbols;
  for (std::size_t i = 0; i < ns; ++i) {
    const std::uint64_t node = r.uv();
    if (node > nn) r.fail("call site on calling-context node " + std::to_string(node) + " out of range");
    std::vector<Frame> frames;  // innermost first: from the node up to the root
    frames.reserve(node == 0 ? 0 : tree[node - 1].depth);
    tr.charge(r, node == 0 ? 0 : tree[node - 1].depth);
    for (std::uint64_t k = node; k != 0; k = tree[k - 1].parent) frames.push_back(tree[k - 1].frame);
    if (t.sites.intern(frames) != i) r.fail("duplicate call site " + std::to_string(i));
    if (v11) {
      const std::uint64_t ref = r.uv();
      if (ref > symbols.size())
        r.fail("symbol reference " + std::to_string(ref) + " out of range (" + std::to_string(symbols.size()) +
               " symbols so far)");
      if (ref == 0) {
        symbols.push_back(get_text(r, "symbol"));
        t.sites.sites[i].symbol = symbols.back();
      } else {
        tr.charge(r, symbols[ref - 1].size() / 8);
        t.sites.sites[i].symbol = symbols[ref - 1];
      }
    } else {
      t.sites.sites[i].symbol = get_text(r, "symbol");
    }
    t.sites.sites[i].location = get_text(r, "location");
  }
  tr.nsites = t.sites.sites.size();
}

/// Section 2: modules, then call sites (each interned once: no duplicates).
void read_call_sites(SectionReader& r, Trace& t, TraceReader& tr) {
  std::size_t nm = r.count("module");
  for (std::size_t i = 0; i < nm; ++i) {
    std::string path = get_text(r, "module path");
    if (t.sites.intern_module(path) != i) r.fail("duplicate module \"" + path + "\"");
  }
  if (tr.version >= 8) {
    read_call_site_tree(r, t, tr, nm);
    return;
  }
  std::size_t ns = r.count("call site", 3);
  for (std::size_t i = 0; i < ns; ++i) {
    std::size_t nf = r.count("frame", 2);
    std::vector<Frame> frames;
    frames.reserve(nf);
    for (std::size_t k = 0; k < nf; ++k) {
      Frame f;
      std::uint64_t mod = r.uv();
      if (mod >= nm) r.fail("module id " + std::to_string(mod) + " out of range");
      f.module = static_cast<std::uint32_t>(mod);
      f.offset = r.uv();
      frames.push_back(f);
    }
    if (t.sites.intern(frames) != i) r.fail("duplicate call site " + std::to_string(i));
    t.sites.sites[i].symbol = get_text(r, "symbol");
    t.sites.sites[i].location = get_text(r, "location");
  }
  tr.nsites = t.sites.sites.size();
}

/// Sections 3 to 10: names, the shared tables, communicators, the node tree.
void read_tables_and_nodes(std::uint64_t id, SectionReader& r, Trace& t, TraceReader& tr) {
  switch (id) {
    case kNames: {
      std::size_t n = r.count("name");
      t.names.reserve(n);
      for (std::size_t i = 0; i < n; ++i) t.names.push_back(get_text(r, "name"));
      tr.nnames = t.names.size();
      break;
    }
    case kRankLists: {
      std::size_t n = r.count("ranklist", 3);
      tr.ranks.reserve(n);
      for (std::size_t i = 0; i < n; ++i) tr.ranks.push_back(get_ranks(r, t.nranks, tr.version, tr.budget, tr.basis));
      break;
    }
    case kValueSeqs: {
      std::size_t n = r.count("value sequence");
      tr.seqs.reserve(n);
      for (std::size_t i = 0; i < n; ++i) tr.seqs.push_back(get_seq(r, tr.version, tr.basis));
      break;
    }
    case kArraySeqs: {
      std::size_t n = r.count("array sequence");
      tr.arrays.reserve(n);
      for (std::size_t i = 0; i < n; ++i) tr.arrays.push_back(get_array_seq(r, tr.version, tr.budget));
      break;
    }
    case kValueElastics:
      if (tr.version >= 6) tr.read_grids(r, t.nranks);
      tr.read_elastic_table(r, tr.seqs, tr.elastics, tr.elastic_cost, "elastic value", tr.version >= 6);
      break;
    case kArrayElastics:
      tr.read_elastic_table(r, tr.arrays, tr.array_elastics, tr.array_elastic_cost, "elastic array", tr.version >= 6);
      break;
    case kComms: {
      std::size_t n = r.count("communicator", 3);
      t.comms.entries.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        CommEntry e;
        e.id = r.sv();
        e.members = tr.rank_ref(r);
        e.holders = tr.rank_ref(r);
        if (tr.version >= 11 && e.members.empty() && e.holders.empty()) {
          // Version 11: a ranklist ref follows; non-zero, one entry per rank r of it (strictly
          // increasing), of members {r} held by {r} (a split with the rank as color).
          const RankList ranks = tr.rank_ref(r);
          std::int64_t previous = -1;
          for (const std::int64_t rank : ranks.to_vector()) {
            if (rank <= previous) r.fail("per-rank communicators over ranks not in increasing order");
            previous = rank;
            tr.charge(r, 3);
            t.comms.entries.push_back(CommEntry{e.id, RankList::single(rank), RankList::single(rank)});
          }
          if (!ranks.empty()) continue;
        }
        t.comms.entries.push_back(std::move(e));
      }
      break;
    }
    case kNodes: {
      std::size_t n = r.count("node", 2);
      t.nodes.reserve(n);
      if (!tr.columns) {
        TraceReader::NodeReaders one{r, r, r, r, r};
        for (std::size_t i = 0; i < n; ++i) t.nodes.push_back(tr.node(one, 0));
        break;
      }
      // Version 11 final files: the nodes in five columns, then the timing columns.
      std::vector<SectionReader> columns = read_columns(r, kNodeColumnCount, "node column");
      TraceReader::NodeReaders by_column{columns[kColumnStructure], columns[kColumnOps], columns[kColumnSites],
                                         columns[kColumnMasks], columns[kColumnRefs]};
      for (std::size_t i = 0; i < n; ++i) t.nodes.push_back(tr.node(by_column, 0));
      for (auto& c : columns)
        if (!c.done()) c.fail("unexpected bytes at the end of the node column");
      tr.read_timing_columns(r);
      break;
    }
  }
}

/// Section 11 (optional, after all others): each cluster's representative and members (checked
/// as a whole by validate_rank_clusters once the section is read).
void read_rank_clusters(SectionReader& r, Trace& t, TraceReader& tr) {
  std::size_t n = r.count("rank cluster", 2);
  if (n == 0) r.fail("empty rank-cluster list");
  for (std::size_t i = 0; i < n; ++i) {
    RankCluster c;
    c.representative = get_rank_number(r, tr.version, tr.basis);
    c.members = get_ranks(r, t.nranks, tr.version, tr.budget, tr.basis);
    t.clusters.push_back(std::move(c));
  }
}

}  // namespace

namespace {

/// Where decode_payload found each section and each event's timing (trace_byte_breakdown).
struct PayloadMap {
  std::string decoded;  ///< the payload's sections, when the file stores them entropy-coded
  std::vector<std::pair<std::uint64_t, std::pair<std::size_t, std::size_t>>> sections;  // id, [start, end)
  std::vector<std::pair<std::size_t, std::size_t>> timing;
};

/// Reads a whole file into `t`; with `map`, notes where its parts are (offsets in the payload's
/// sections: decoded bytes when coded, else from the payload's first byte). Returns the file's
/// size with its payload decoded.
std::size_t decode_into(std::string_view bytes, Trace& t, PayloadMap* map) {
  const Header h = read_header(bytes);
  TraceReader tr;
  if (map) tr.timing_ranges = &map->timing;
  tr.fixed_width_counts = h.version >= 4 && (h.flags & kFlagExactCounts) == 0;
  tr.exact_sums = (h.flags & kFlagExactSums) != 0;
  tr.version = h.version;
  tr.columns = h.version >= 11 && (h.flags & kFlagExactCounts) == 0;
  std::string local_decoded;
  std::string& decoded = map ? map->decoded : local_decoded;
  const std::string_view payload = payload_sections(h, decoded);
  tr.budget = 64 * static_cast<std::uint64_t>(bytes.size() + decoded.size()) + (std::uint64_t{1} << 20);
  // Offsets in messages are file offsets, or offsets in the decoded payload when it was coded.
  SectionReader outer(payload, (h.flags & kFlagEntropyCoded) ? 0 : kHeaderSize);
  outer.set_section("section list");
  std::uint64_t last_id = 0;
  bool seen[kLastKnownSection + 1] = {};
  auto require_before = [&](std::uint64_t id) {
    for (std::uint64_t before = kMetadata; before < id && before <= kLastKnownSection; ++before)
      if (!seen[before]) outer.fail(std::string("missing section: ") + section_name(before));
  };
  while (!outer.done()) {
    const std::size_t section_start = outer.offset();
    const std::uint64_t id = outer.uv();
    const std::size_t len = outer.count("section byte");
    const std::size_t base = outer.offset();
    if (map) map->sections.push_back({id, {section_start, base + len}});
    SectionReader r(outer.take(len), base);
    if (id <= last_id) outer.fail("section " + std::to_string(id) + " out of order");
    last_id = id;
    if (id > kLastKnownSection && id != kRankClusters) continue;  // later optional sections are skipped
    require_before(id);
    r.set_section(section_name(id));
    if (id == kRankClusters) {
      read_rank_clusters(r, t, tr);
    } else {
      seen[id] = true;
      if (id == kMetadata)
        read_metadata(r, t, tr);
      else if (id == kCallSites)
        read_call_sites(r, t, tr);
      else
        read_tables_and_nodes(id, r, t, tr);
    }
    if (!r.done()) r.fail("unexpected bytes at the end of the section");
    if (id == kRankClusters) validate_rank_clusters(t.clusters, t.nranks);
  }
  for (std::uint64_t id = kMetadata; id <= kLastKnownSection; ++id)
    if (!seen[id]) throw FormatError(std::string("missing section: ") + section_name(id));
  if (h.flags & kFlagRankSegments) read_rank_segments(t, h.trailer);
  if (map && (h.flags & kFlagEntropyCoded) == 0) {
    // Plain payloads: reader offsets count from the file's first byte; make them payload offsets.
    for (auto& [id, range] : map->sections) range = {range.first - kHeaderSize, range.second - kHeaderSize};
    for (auto& range : map->timing) range = {range.first - kHeaderSize, range.second - kHeaderSize};
  }
  return bytes.size() - h.payload.size() + payload.size();
}

}  // namespace

Trace decode_trace(std::string_view bytes) {
  Trace t;
  decode_into(bytes, t, nullptr);
  return t;
}

std::vector<ByteBreakdownPart> trace_byte_breakdown(std::string_view bytes) {
  Trace t;
  PayloadMap map;
  decode_into(bytes, t, &map);
  const Header h = read_header(bytes);
  const bool coded = (h.flags & kFlagEntropyCoded) != 0;
  const std::string_view payload = coded ? std::string_view(map.decoded) : h.payload;
  // What each payload byte costs in the file: coded, its share of the coded bytes (the
  // coder's cost of the byte, scaled so that the parts add up to the stored payload).
  std::vector<double> cost(payload.size(), 1.0);
  if (coded) {
    entropy::encode(payload, payload_primer(h.version), &cost);
    double total = 0;
    for (const double c : cost) total += c;
    const double scale = total > 0 ? static_cast<double>(h.payload.size()) / total : 0.0;
    for (double& c : cost) c *= scale;
  }
  std::vector<ByteBreakdownPart> parts;
  auto add = [&](const std::string& name, std::size_t plain, double stored) {
    for (auto& p : parts)
      if (p.part == name) {
        p.bytes += plain;
        p.stored_bytes += stored;
        return;
      }
    parts.push_back({name, plain, stored});
  };
  auto range_cost = [&](std::size_t a, std::size_t b) {
    double c = 0;
    for (std::size_t i = a; i < b && i < cost.size(); ++i) c += cost[i];
    return c;
  };
  add("header", kHeaderSize, static_cast<double>(kHeaderSize));
  std::size_t timing_index = 0;
  for (const auto& [id, range] : map.sections) {
    const auto [start, end] = range;
    if (id != kNodes) {
      add(section_name(id), end - start, range_cost(start, end));
      continue;
    }
    std::size_t timing_plain = 0;
    double timing_stored = 0;
    while (timing_index < map.timing.size() && map.timing[timing_index].first < end) {
      const auto [a, b] = map.timing[timing_index++];
      timing_plain += b - a;
      timing_stored += range_cost(a, b);
    }
    add("node tree", end - start - timing_plain, range_cost(start, end) - timing_stored);
    add("timing", timing_plain, timing_stored);
  }
  if (!h.trailer.empty()) add("rank segments", h.trailer.size(), static_cast<double>(h.trailer.size()));
  return parts;
}

Trace decode_trace_checked(std::string_view bytes) {
  Trace trace;
  const std::size_t decoded_bytes = decode_into(bytes, trace, nullptr);
  validate_trace(trace, default_walk_budget(decoded_bytes));
  return trace;
}

Trace read_trace_file(const std::string& path) {
  // The magic is checked on the first bytes, before the rest of a (possibly huge) file is read.
  const auto check_start = [&](std::string_view head) {
    if (head.size() >= 8 && std::memcmp(head.data(), kTraceMagic, 8) != 0)
      throw FormatError(path + ": bad magic: not a scalatrace trace (.sct)");
  };
  const std::string bytes = read_regular_file(path, "trace file", check_start, 8);
  try {
    return decode_trace_checked(bytes);
  } catch (const FormatError& e) {
    throw FormatError(path + ": " + e.what());
  }
}

}  // namespace scalatrace
