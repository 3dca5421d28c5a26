#pragma once
// Publishing a directory in one step: swapping two paths atomically (Linux renameat2 with
// RENAME_EXCHANGE), so a complete new directory takes the place of an old one with no moment at
// which the path is missing or half-written. Used by the Python package's multi-file exports
// (scalatrace._files.publish_directory; docs/reliability.md, "What the package writes").
#include <string>

namespace scalatrace {

/// Exchanges `a` and `b` atomically (both must exist, on one file system): afterwards `a` names
/// what `b` named and `b` what `a` named, and the directory entries are fsynced. Returns false,
/// changing nothing, if the kernel or the file system cannot exchange them (no renameat2,
/// RENAME_EXCHANGE unsupported, two file systems, a mount point: EINVAL, ENOSYS, EOPNOTSUPP,
/// EXDEV, EBUSY); throws Error naming both paths and
/// the system's reason on any other failure.
bool exchange_paths(const std::string& a, const std::string& b);

}  // namespace scalatrace
