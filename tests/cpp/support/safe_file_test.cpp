// Output files are never written through planted links, never replace device nodes or FIFOs,
// and a full disk is reported with its reason, leaving nothing behind (issue 10, items 1-2);
// directories are exchanged in one step (issue 32).
#include "scalatrace/support/safe_file.hpp"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "error_text.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/format/raw.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/support/path_exchange.hpp"

namespace scalatrace {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void spit(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

using test_support::error_of;

class SafeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("scalatrace_safe_file_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (mounted_) ::umount(dir_.c_str());
    fs::remove_all(dir_);
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  /// A 64 KiB tmpfs over dir_ (a real full disk); false where mounting is not permitted.
  bool mount_tiny_tmpfs() {
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=64k") != 0) return false;
    mounted_ = true;
    return true;
  }
  fs::path dir_;
  bool mounted_ = false;
};

TEST_F(SafeFileTest, WritesAndReplacesARegularFileLeavingNoTemporaryFile) {
  const fs::path out = dir_ / "t.sct";
  write_file_safely(out.string(), "first");
  write_file_safely(out.string(), "second version");
  EXPECT_EQ(slurp(out), "second version");
  EXPECT_EQ(names(), std::vector<std::string>{"t.sct"});
}

TEST_F(SafeFileTest, SymlinkPlantedAtTheOldFixedTemporaryNameIsNotFollowed) {
  // The old writer opened "<out>.tmp" with O_TRUNC and followed a symlink planted there.
  const fs::path victim = dir_ / "victim";
  spit(victim, "precious");
  fs::create_symlink(victim, dir_ / "t.sct.tmp");
  write_file_safely((dir_ / "t.sct").string(), "trace bytes");
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_TRUE(fs::is_symlink(dir_ / "t.sct.tmp"));
  EXPECT_FALSE(fs::is_symlink(dir_ / "t.sct"));
  EXPECT_EQ(slurp(dir_ / "t.sct"), "trace bytes");
}

TEST_F(SafeFileTest, SymlinkAtTheTargetIsRefusedAndLeftAlone) {
  const fs::path victim = dir_ / "victim";
  spit(victim, "precious");
  fs::create_symlink(victim, dir_ / "t.sct");
  const std::string err = error_of([&] { write_file_safely((dir_ / "t.sct").string(), "x"); });
  EXPECT_NE(err.find("symbolic link"), std::string::npos) << err;
  EXPECT_NE(err.find("refusing to replace"), std::string::npos) << err;
  EXPECT_TRUE(fs::is_symlink(dir_ / "t.sct"));
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_EQ(names(), (std::vector<std::string>{"t.sct", "victim"}));
}

TEST_F(SafeFileTest, FifoAtTheTargetIsRefusedAndLeftAlone) {
  const fs::path fifo = dir_ / "pipe.sct";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string err = error_of([&] { write_file_safely(fifo.string(), "x"); });
  EXPECT_NE(err.find("FIFO"), std::string::npos) << err;
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(names(), std::vector<std::string>{"pipe.sct"});
  // Reading it neither blocks nor pretends it is a trace.
  const std::string read_err = error_of([&] { read_trace_file(fifo.string()); });
  EXPECT_NE(read_err.find("FIFO"), std::string::npos) << read_err;
  EXPECT_THROW(read_raw(fifo.string()), FormatError);
}

TEST_F(SafeFileTest, DeviceNodeAtTheTargetIsRefusedAndLeftAlone) {
  // A private copy of /dev/full's device node (major 1, minor 7): SCALATRACE_OUT=/dev/full as
  // root must not replace the node. Needs CAP_MKNOD.
  const fs::path dev = dir_ / "full";
  if (::mknod(dev.c_str(), S_IFCHR | 0600, makedev(1, 7)) != 0)
    GTEST_SKIP() << "cannot create a device node here (not root)";
  const std::string err = error_of([&] { write_file_safely(dev.string(), "trace"); });
  EXPECT_NE(err.find("character device"), std::string::npos) << err;
  EXPECT_TRUE(fs::is_character_file(dev));
  EXPECT_EQ(names(), std::vector<std::string>{"full"});
}

TEST_F(SafeFileTest, DirectoryAtTheTargetIsRefused) {
  fs::create_directories(dir_ / "d.sct");
  const std::string err = error_of([&] { write_file_safely((dir_ / "d.sct").string(), "x"); });
  EXPECT_NE(err.find("directory"), std::string::npos) << err;
  EXPECT_EQ(names(), std::vector<std::string>{"d.sct"});
}

TEST_F(SafeFileTest, MissingDirectoryIsReportedWithTheSystemReason) {
  const std::string err = error_of([&] { write_file_safely((dir_ / "no" / "such" / "t.sct").string(), "x"); });
  EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err;
}

TEST_F(SafeFileTest, UncommittedWriterRemovesItsTemporaryFile) {
  {
    SafeFileWriter w((dir_ / "t.sct").string());
    w.write("partial");
    EXPECT_TRUE(fs::exists(w.temp_path()));
    EXPECT_EQ(fs::path(w.temp_path()).parent_path(), dir_);
  }
  EXPECT_TRUE(names().empty());
}

TEST_F(SafeFileTest, FullDiskIsReportedAndLeavesNothing) {
  if (!mount_tiny_tmpfs()) GTEST_SKIP() << "cannot mount a 64 KiB tmpfs here (not root)";
  spit(dir_ / "t.sct", "old trace");
  const std::string big(256 * 1024, 'x');
  const std::string err = error_of([&] { write_file_safely((dir_ / "t.sct").string(), big); });
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
  EXPECT_EQ(names(), std::vector<std::string>{"t.sct"});
  EXPECT_EQ(slurp(dir_ / "t.sct"), "old trace");  // the previous file is untouched
}

TEST_F(SafeFileTest, RawStreamOnAFullDiskFailsWithTheReasonAndLeavesNothing) {
  if (!mount_tiny_tmpfs()) GTEST_SKIP() << "cannot mount a 64 KiB tmpfs here (not root)";
  RawWriter w;
  w.open((dir_ / "rank-0.straw").string(), 0, 1);
  std::string err;
  try {
    Event e;
    e.op = Op::Send;
    e.arrays[0].assign(64, 123456789);
    for (int i = 0; i < 200000; ++i) w.append(e);
    w.close({}, CallSiteTable{}, CommTable{}, {});
  } catch (const Error& ex) {
    err = ex.what();
  }
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
  EXPECT_FALSE(w.is_open());
  EXPECT_TRUE(names().empty());  // no truncated stream that could pass for a written one
}

TEST_F(SafeFileTest, ReadingReportsTheSystemReason) {
  const std::string missing = error_of([&] { read_regular_file((dir_ / "x").string(), "trace file"); });
  EXPECT_NE(missing.find("No such file or directory"), std::string::npos) << missing;
  spit(dir_ / "x", "hello");
  EXPECT_EQ(read_regular_file((dir_ / "x").string(), "trace file"), "hello");
  if (::geteuid() != 0) {  // root reads everything
    fs::permissions(dir_ / "x", fs::perms::none);
    const std::string denied = error_of([&] { read_regular_file((dir_ / "x").string(), "trace file"); });
    EXPECT_NE(denied.find("Permission denied"), std::string::npos) << denied;
  }
}

// Two paths swapped in one atomic step (renameat2 RENAME_EXCHANGE): how the Python package
// replaces an export directory as a whole (issue 32; docs/reliability.md, "What the package
// writes").

ino_t inode(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_ino;
}

TEST_F(SafeFileTest, ExchangedDirectoriesTradePlaces) {
  fs::create_directory(dir_ / "old");
  fs::create_directory(dir_ / "new");
  spit(dir_ / "old" / "index.txt", "old\n");
  spit(dir_ / "new" / "index.txt", "new\n");
  const ino_t old_inode = inode(dir_ / "old"), new_inode = inode(dir_ / "new");
  if (!exchange_paths((dir_ / "new").string(), (dir_ / "old").string()))
    GTEST_SKIP() << "this file system cannot exchange paths";
  // The very directories swapped names: nothing was copied, and neither name was ever absent.
  EXPECT_EQ(inode(dir_ / "old"), new_inode);
  EXPECT_EQ(inode(dir_ / "new"), old_inode);
  EXPECT_EQ(slurp(dir_ / "old" / "index.txt"), "new\n");
  EXPECT_EQ(slurp(dir_ / "new" / "index.txt"), "old\n");
}

TEST_F(SafeFileTest, ExchangeWithAMissingPathIsAnErrorWithTheReasonAndChangesNothing) {
  fs::create_directory(dir_ / "new");
  const std::string err = error_of([&] { exchange_paths((dir_ / "new").string(), (dir_ / "gone").string()); });
  if (err.empty()) GTEST_SKIP() << "this file system cannot exchange paths (nothing was done)";
  EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err;
  EXPECT_NE(err.find("gone"), std::string::npos) << err;
  EXPECT_TRUE(fs::is_directory(dir_ / "new"));
  EXPECT_FALSE(fs::exists(dir_ / "gone"));
}

}  // namespace
}  // namespace scalatrace
