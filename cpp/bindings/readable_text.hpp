#pragma once
// Readable text of value sequences and rank lists for the Python reprs. The core's to_string()
// keeps the thesis notation ("[0x60]", "<2 0 2 6 2 2>") that dumps and keys use; a notebook user
// reads "0 (60 times)" and "0, 2, 6, 8" instead.
#include <cstddef>
#include <string>

#include "scalatrace/model/rank_list.hpp"
#include "scalatrace/model/value_seq.hpp"

/// "5", "0 (60 times)", "0 to 88 step 8", "(1, 0) 3 times", items joined by ", "; after
/// `max_items` items "... (N values)".
std::string readable_values(const scalatrace::ValueSeq& seq, std::size_t max_items = 12);

/// Ranks in the list's order (ascending for node ranklists; a communicator's members in
/// communicator order), consecutive ones joined: "0-8", "0, 2, 6, 8", "0-3, 8-11"; after `max_items` items
/// "... (N ranks)". Lists of more than 65536 ranks are described per descriptor
/// ("0 to 1048574 step 2") without expanding them.
std::string readable_ranks(const scalatrace::RankList& ranks, std::size_t max_items = 12);
