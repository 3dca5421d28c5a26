#pragma once
// Test support: one rank's events read back from a merged trace against its recording.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scalatrace/model/recording.hpp"
#include "scalatrace/model/trace.hpp"
#include "scalatrace/read/cursor.hpp"

namespace scalatrace::test_support {

/// The cursor's views of a rank's events (what the simulator reads: arrays referring to the
/// trace) equal its copies, timing included, and stay valid after the walk went on.
inline void expect_views_equal_copies(const Trace& t, std::int64_t rank) {
  Cursor copies(t, rank), views(t, rank);
  std::vector<Event> events;
  std::vector<EventView> seen;
  Event e;
  EventView v;
  while (copies.next(e)) {
    events.push_back(e);
    ASSERT_TRUE(views.next(v)) << "rank " << rank << ": views end after " << seen.size();
    seen.push_back(v);
  }
  ASSERT_FALSE(views.next(v)) << "rank " << rank << ": views go on after " << seen.size();
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event back = seen[i].to_event();
    ASSERT_TRUE(back.same_call(events[i]))
        << "rank " << rank << " event " << i << ": " << describe(back) << " vs " << describe(events[i]);
    ASSERT_EQ(back.compute_ns, events[i].compute_ns);
    ASSERT_EQ(back.duration_ns, events[i].duration_ns);
  }
}

/// Compares one rank's events from the merged trace with its recording (sites by frames and
/// modules, names by text, everything but timing).
inline void expect_rank_equal(const Trace& merged, const RankRecording& rec) {
  expect_views_equal_copies(merged, rec.rank);
  std::vector<Event> got = expand(merged, rec.rank);
  ASSERT_EQ(got.size(), rec.events.size()) << "rank " << rec.rank;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const Event& a = got[i];
    const Event& b = rec.events[i];
    SCOPED_TRACE("rank " + std::to_string(rec.rank) + " event " + std::to_string(i));
    ASSERT_EQ(a.op, b.op);
    const CallSite& sa = merged.sites.sites.at(a.site);
    const CallSite& sb = rec.sites.sites.at(b.site);
    ASSERT_EQ(sa.frames.size(), sb.frames.size());
    for (std::size_t k = 0; k < sa.frames.size(); ++k) {
      ASSERT_EQ(sa.frames[k].offset, sb.frames[k].offset);
      ASSERT_EQ(merged.sites.modules.at(sa.frames[k].module), rec.sites.modules.at(sb.frames[k].module));
    }
    for (std::size_t f = 0; f < kFieldCount; ++f) {
      if (static_cast<Field>(f) == Field::NameId && a.op == Op::Other) {
        ASSERT_EQ(merged.names.at(static_cast<std::size_t>(a.fields[f])),
                  rec.names.at(static_cast<std::size_t>(b.fields[f])));
        continue;
      }
      ASSERT_EQ(a.fields[f], b.fields[f]) << field_name(static_cast<Field>(f));
    }
    ASSERT_EQ(a.arrays, b.arrays);
  }
}

}  // namespace scalatrace::test_support
