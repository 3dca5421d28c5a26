#include "capture/library_frames.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <climits>
#include <string>

namespace scalatrace::pmpi {
namespace {

std::string_view base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

struct Scan {
  bool (*wanted)(std::string_view) = nullptr;
  std::string_view exact_path;  // also wanted: this object (the MPI library found by symbol)
  std::vector<CodeRange>* out = nullptr;
};

int collect_code(dl_phdr_info* info, std::size_t, void* data) {
  const auto* scan = static_cast<const Scan*>(data);
  const std::string_view path = info->dlpi_name ? info->dlpi_name : "";
  if (path.empty()) return 0;  // the executable: always the user's
  if (!scan->wanted(path) && path != scan->exact_path) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
      scan->out->push_back(CodeRange{info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz});
  }
  return 0;
}

int find_own(dl_phdr_info* info, std::size_t, void* data) {
  auto* range = static_cast<CodeRange*>(data);
  const auto self = reinterpret_cast<std::uintptr_t>(&find_own);
  CodeRange r{UINTPTR_MAX, 0};
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    r.lo = std::min<std::uintptr_t>(r.lo, info->dlpi_addr + ph.p_vaddr);
    r.hi = std::max<std::uintptr_t>(r.hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (!r.contains(self)) return 0;
  *range = r;
  return 1;
}

/// Path of the object that defines the MPI library's PMPI_Comm_rank (found past the collector,
/// which may define some PMPI_ functions itself): catches MPI libraries with unusual names.
std::string mpi_library_path() {
  Dl_info info{};
  void* fn = dlsym(RTLD_NEXT, "PMPI_Comm_rank");
  if (fn && dladdr(fn, &info) && info.dli_fname) return info.dli_fname;
  return {};
}

}  // namespace

bool is_mpi_library(std::string_view path) {
  const std::string_view name = base_name(path);
  return name.starts_with("libmpi") || name.starts_with("libpmpi");
}

bool is_mpi_fortran_library(std::string_view path) {
  const std::string_view name = base_name(path);
  return name.starts_with("libmpichfort") || name.starts_with("libmpifort") || name.starts_with("libmpi_mpifh") ||
         name.starts_with("libmpi_usempi");
}

std::vector<CodeRange> code_ranges_of(bool (*wanted)(std::string_view path)) {
  std::vector<CodeRange> out;
  Scan scan{wanted, {}, &out};
  dl_iterate_phdr(collect_code, &scan);
  return out;
}

const LibraryFrames& LibraryFrames::get() {
  static const LibraryFrames frames;
  return frames;
}

LibraryFrames::LibraryFrames() {
  dl_iterate_phdr(find_own, &own_);
  const std::string by_symbol = mpi_library_path();
  Scan scan{is_mpi_library, by_symbol, &mpi_};
  dl_iterate_phdr(collect_code, &scan);
}

}  // namespace scalatrace::pmpi
