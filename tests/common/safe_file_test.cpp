#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "temp_dir.h"

#include "paratune/common/safe_file.h"

using namespace paratune::common;
using paratune::fixtures::TempDir;

namespace {

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A file with exactly this content and mode (chmod: the umask does not decide).
void make_file(const std::string& p, const std::string& content, mode_t mode) {
  std::ofstream(p) << content;
  ASSERT_EQ(::chmod(p.c_str(), mode), 0) << p;
}

struct stat stat_of(const std::string& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st;
}

// What `f` threw ("" if it threw nothing): the refusals must say why, not just fail.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The ownership tests hand files to another uid (chown), which only root can do; CI runs them as root.
#define REQUIRE_ROOT()                                                         \
  do {                                                                         \
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (chown to another uid)"; \
  } while (0)

constexpr uid_t kNobody = 65534;
constexpr size_t kLimit = 1 << 10;

}  // namespace

TEST(SafeFile, AtomicWriteReplacesContent) {
  TempDir t;
  auto fd = ensure_directory(t.path + "/d", 0755, ::geteuid());
  write_file_atomic(fd.get(), "plan.json", "{\"a\":1}\n", 0644);
  write_file_atomic(fd.get(), "plan.json", "{\"a\":2}\n", 0644);
  EXPECT_EQ(slurp(t.path + "/d/plan.json"), "{\"a\":2}\n");
}

TEST(SafeFile, DirectoryThatIsASymlinkIsRefused) {
  TempDir t;
  ASSERT_EQ(::mkdir((t.path + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((t.path + "/real").c_str(), (t.path + "/link").c_str()), 0);
  EXPECT_THROW(ensure_directory(t.path + "/link", 0755, ::geteuid()), std::exception);
}

TEST(SafeFile, DirectoryOwnedBySomeoneElseIsRefused) {
  TempDir t;
  EXPECT_THROW(ensure_directory(t.path, 0755, ::geteuid() + 12345), std::runtime_error);
}

TEST(SafeFile, AppendDoesNotFollowASymlink) {
  TempDir t;
  auto fd = ensure_directory(t.path, 0755, ::geteuid());
  std::ofstream(t.path + "/victim") << "precious\n";
  ASSERT_EQ(::symlink((t.path + "/victim").c_str(), (t.path + "/tuning.jsonl").c_str()), 0);
  EXPECT_THROW(append_line(fd.get(), "tuning.jsonl", "{}", 0644), std::exception);
  EXPECT_EQ(slurp(t.path + "/victim"), "precious\n");
}

TEST(SafeFile, ConcurrentAppendsKeepLinesWhole) {
  TempDir t;
  auto fd = ensure_directory(t.path, 0755, ::geteuid());
  const std::string payload(3000, 'x');  // longer than PIPE_BUF
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      for (int j = 0; j < 50; ++j) append_line(fd.get(), "log", std::to_string(i) + ":" + payload, 0644);
    });
  for (auto& th : threads) th.join();
  std::ifstream in(t.path + "/log");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    ASSERT_EQ(line.size(), payload.size() + 2) << "line " << n;
  }
  EXPECT_EQ(n, 400);
}

TEST(SafeFile, ReadBoundedStopsAtTheLimitAndRefusesNonRegularFiles) {
  TempDir t;
  std::ofstream(t.path + "/big") << std::string(10000, 'y');
  bool truncated = false;
  EXPECT_EQ(read_bounded(t.path + "/big", 100, &truncated).size(), 100u);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(read_bounded(t.path + "/big", 20000, &truncated).size(), 10000u);
  EXPECT_FALSE(truncated);
  ASSERT_EQ(::mkfifo((t.path + "/fifo").c_str(), 0644), 0);
  EXPECT_THROW(read_bounded(t.path + "/fifo", 100), std::runtime_error);  // and does not block
  ASSERT_EQ(::symlink((t.path + "/big").c_str(), (t.path + "/link").c_str()), 0);
  EXPECT_THROW(read_bounded(t.path + "/link", 100), std::exception);
}

// --- ensure_directory on the root side: the directory's mode, not only its owner ---

TEST(SafeFile, RootDirectoryWritableByGroupOrOthersIsRefused) {
  REQUIRE_ROOT();
  TempDir t;
  const std::string d = t.path + "/log";
  ASSERT_EQ(::mkdir(d.c_str(), 0755), 0);
  // 1777: the sticky bit (as on /tmp) does not stop a user from planting the name root is about to open.
  for (mode_t bad : {0777, 0775, 0757, 01777, 0770}) {
    ASSERT_EQ(::chmod(d.c_str(), bad), 0);
    const std::string why = error_of([&] { ensure_directory(d, 0755, 0); });
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(bad));
    EXPECT_TRUE(contains(why, d) && contains(why, std::string("mode ") + octal) &&
                contains(why, "group/world-writable"))
        << std::oct << bad << ": " << why;
    EXPECT_EQ(stat_of(d).st_mode & 07777, bad) << "a refused directory is left as the admin made it";
  }
  // Control: the same directory, not writable by others, is accepted as it is.
  for (mode_t good : {0755, 0750, 0700, 02755, 01755}) {
    ASSERT_EQ(::chmod(d.c_str(), good), 0);
    EXPECT_NO_THROW(ensure_directory(d, 0755, 0)) << std::oct << good;
    EXPECT_EQ(stat_of(d).st_mode & 07777, good) << "an existing directory keeps its mode";
  }
}

TEST(SafeFile, CreatedRootDirectoryHasExactlyTheRequestedMode) {
  REQUIRE_ROOT();
  TempDir t;
  // A setgid parent hands its bit down to a new directory, a tight umask takes bits away: neither may decide.
  ASSERT_EQ(::chmod(t.path.c_str(), 02755), 0);
  const mode_t old_umask = ::umask(077);
  UniqueFd fd;
  const std::string why = error_of([&] { fd = ensure_directory(t.path + "/log", 0755, 0); });
  ::umask(old_umask);
  ASSERT_EQ(why, "");
  EXPECT_EQ(stat_of(t.path + "/log").st_mode & 07777, 0755u);
  struct stat by_fd {};
  ASSERT_EQ(::fstat(fd.get(), &by_fd), 0);
  EXPECT_EQ(by_fd.st_ino, stat_of(t.path + "/log").st_ino) << "the descriptor is the directory that was made";
}

TEST(SafeFile, UserDirectoryKeepsItsModeAndMayBeWritableByOthers) {
  // The job user's plan directory (owner not root): their modes are their business, as before.
  REQUIRE_ROOT();
  TempDir t;
  const std::string d = t.path + "/paratune-1";
  ASSERT_EQ(::mkdir(d.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(d.c_str(), 0777), 0);
  ASSERT_EQ(::chown(d.c_str(), kNobody, kNobody), 0);
  EXPECT_NO_THROW(ensure_directory(d, 0755, kNobody));
  EXPECT_EQ(stat_of(d).st_mode & 07777, 0777u);
}

// --- append_line: no planted hard link, nobody else's file ---

TEST(SafeFile, HardLinkedTuningLogIsRefusedAndLeftUntouched) {
  TempDir t;
  auto fd = ensure_directory(t.path, 0755, ::geteuid());
  // The "victim" stands for /etc/shadow: a second name for it in the log directory must not be appended to,
  // nor chmod'ed to the log's mode.
  make_file(t.path + "/victim", "precious\n", 0600);
  ASSERT_EQ(::link((t.path + "/victim").c_str(), (t.path + "/tuning.jsonl").c_str()), 0);
  const std::string why = error_of([&] { append_line(fd.get(), "tuning.jsonl", "{}", 0644); });
  EXPECT_TRUE(contains(why, "tuning.jsonl") && contains(why, "2 links")) << why;
  EXPECT_EQ(slurp(t.path + "/victim"), "precious\n");
  EXPECT_EQ(stat_of(t.path + "/victim").st_mode & 07777, 0600u);
}

TEST(SafeFile, TuningLogNotOwnedByRootIsRefusedWhenRunningAsRoot) {
  REQUIRE_ROOT();
  TempDir t;
  auto fd = ensure_directory(t.path, 0755, 0);
  make_file(t.path + "/tuning.jsonl", "{\"job_id\":\"1\"}\n", 0600);
  ASSERT_EQ(::chown((t.path + "/tuning.jsonl").c_str(), kNobody, kNobody), 0);
  const std::string why = error_of([&] { append_line(fd.get(), "tuning.jsonl", "{}", 0644, 0); });
  EXPECT_TRUE(contains(why, "tuning.jsonl") && contains(why, "owned by uid 65534")) << why;
  EXPECT_EQ(slurp(t.path + "/tuning.jsonl"), "{\"job_id\":\"1\"}\n");
  const auto st = stat_of(t.path + "/tuning.jsonl");
  EXPECT_EQ(st.st_uid, kNobody);
  EXPECT_EQ(st.st_gid, kNobody) << "no chgrp on a refused file";
  EXPECT_EQ(st.st_mode & 07777, 0600u) << "no chmod on a refused file";
  // Control: once it is root's again, the line goes in.
  ASSERT_EQ(::chown((t.path + "/tuning.jsonl").c_str(), 0, 0), 0);
  append_line(fd.get(), "tuning.jsonl", "{}", 0644);
  EXPECT_EQ(slurp(t.path + "/tuning.jsonl"), "{\"job_id\":\"1\"}\n{}\n");
}

// --- read_trusted_file (the calibration, read as root) ---

TEST(SafeFile, TrustedFileIsReadBack) {
  TempDir t;
  const std::string p = t.path + "/calibration.toml";
  make_file(p, "[model]\nscale = 1.25\n", 0644);
  EXPECT_EQ(read_trusted_file(p, kLimit, ::geteuid()), "[model]\nscale = 1.25\n");
  make_file(p, std::string(kLimit, 'c'), 0600);  // exactly the limit is not too large
  EXPECT_EQ(read_trusted_file(p, kLimit, ::geteuid()), std::string(kLimit, 'c'));
  make_file(p, "", 0444);
  EXPECT_EQ(read_trusted_file(p, kLimit, ::geteuid()), "");
}

TEST(SafeFile, TrustedFileNotOwnedByTheOwnerIsRefused) {
  REQUIRE_ROOT();
  TempDir t;
  const std::string p = t.path + "/calibration.toml";
  make_file(p, "[model]\n", 0644);
  ASSERT_EQ(::chown(p.c_str(), kNobody, kNobody), 0);
  const std::string why = error_of([&] { read_trusted_file(p, kLimit, 0); });
  EXPECT_TRUE(contains(why, p) && contains(why, "owned by uid 65534")) << why;
  // Control: the same file is fine for the uid that owns it, so the owner is what was refused.
  EXPECT_EQ(read_trusted_file(p, kLimit, kNobody), "[model]\n");
}

TEST(SafeFile, TrustedFileWritableByGroupOrOthersIsRefused) {
  TempDir t;
  const std::string p = t.path + "/calibration.toml";
  for (mode_t bad : {0664, 0646, 0666, 0620}) {
    make_file(p, "[model]\n", bad);
    const std::string why = error_of([&] { read_trusted_file(p, kLimit, ::geteuid()); });
    EXPECT_TRUE(contains(why, p) && contains(why, "writable by group or others")) << std::oct << bad << ": " << why;
  }
  make_file(p, "[model]\n", 0640);  // control: readable by the group is fine
  EXPECT_EQ(read_trusted_file(p, kLimit, ::geteuid()), "[model]\n");
}

TEST(SafeFile, TrustedFileThatIsASymlinkIsRefused) {
  TempDir t;
  make_file(t.path + "/real.toml", "[model]\n", 0644);
  ASSERT_EQ(::symlink((t.path + "/real.toml").c_str(), (t.path + "/calibration.toml").c_str()), 0);
  // The target itself would pass every check: only the link is refused.
  ASSERT_EQ(read_trusted_file(t.path + "/real.toml", kLimit, ::geteuid()), "[model]\n");
  const std::string why = error_of([&] { read_trusted_file(t.path + "/calibration.toml", kLimit, ::geteuid()); });
  EXPECT_TRUE(contains(why, t.path + "/calibration.toml")) << why;
}

TEST(SafeFile, TrustedFileThatIsADirectoryIsRefused) {
  TempDir t;
  const std::string d = t.path + "/calibration.toml";
  ASSERT_EQ(::mkdir(d.c_str(), 0755), 0);
  const std::string why = error_of([&] { read_trusted_file(d, kLimit, ::geteuid()); });
  EXPECT_TRUE(contains(why, d) && contains(why, "not a regular file")) << why;
}

TEST(SafeFile, TrustedFifoIsRefusedWithoutBlocking) {
  TempDir t;
  const std::string p = t.path + "/calibration.toml";
  ASSERT_EQ(::mkfifo(p.c_str(), 0644), 0);  // owned by us, not writable by others: only its type is wrong
  auto result = std::async(std::launch::async,
                           [&] { return error_of([&] { read_trusted_file(p, kLimit, ::geteuid()); }); });
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    // Blocked in open() or read(): give it a writer that closes at once, so that the test ends, and fail.
    UniqueFd writer(::open(p.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    writer = UniqueFd();
    FAIL() << "read_trusted_file blocked on a FIFO";
  }
  const std::string why = result.get();
  EXPECT_TRUE(contains(why, p) && contains(why, "not a regular file")) << why;
}

TEST(SafeFile, TrustedFileLargerThanTheLimitIsRefusedNotCut) {
  TempDir t;
  const std::string p = t.path + "/calibration.toml";
  make_file(p, std::string(kLimit + 1, 'c'), 0644);
  const std::string why = error_of([&] { read_trusted_file(p, kLimit, ::geteuid()); });
  EXPECT_TRUE(contains(why, p) && contains(why, "larger than " + std::to_string(kLimit))) << why;
}
