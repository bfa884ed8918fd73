// The policy file's owner and permissions: a policy anyone but root can write is refused.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "paratune/policies/policy.h"

namespace paratune::policies {
namespace {

class Security : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/paratune-policy-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/policy.toml";
    std::ofstream(path_) << "[defaults]\nmode = \"suggest\"\n";
    ASSERT_EQ(::chmod(path_.c_str(), 0644), 0);
  }
  void TearDown() override {
    ::unlink((dir_ + "/link.toml").c_str());
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  PolicyError::Kind refused(const std::string& path, uid_t owner, std::string* message) {
    try {
      check_policy_file_security(path, owner);
    } catch (const PolicyError& e) {
      *message = e.what();
      return e.kind();
    }
    *message = "(accepted)";
    return PolicyError::Kind::Invalid;
  }
  std::string dir_, path_;
};

const char* kWhy = "refused (a user-writable policy is a privilege escalation path)";

TEST_F(Security, OwnFileWithRightModeIsAccepted) {
  EXPECT_NO_THROW(check_policy_file_security(path_, ::geteuid()));
  const PolicyFile f = load_policy_secure(path_, ::geteuid());
  EXPECT_EQ(*resolve(f, "").mode, Mode::Suggest);
}

TEST_F(Security, WrongOwnerIsRefused) {
  // The file is ours; expect another owner (root, unless the tests run as root).
  const uid_t other = ::geteuid() == 0 ? 4242 : 0;
  std::string msg;
  EXPECT_EQ(refused(path_, other, &msg), PolicyError::Kind::Insecure);
  EXPECT_EQ(msg, path_ + ": owned by uid " + std::to_string(::geteuid()) + ", not uid " + std::to_string(other) +
                     ": " + kWhy);
  EXPECT_THROW(load_policy_secure(path_, other), PolicyError);
  if (::geteuid() != 0) {
    EXPECT_THROW(check_policy_file_security(path_), PolicyError);  // production: root
  }
}

TEST_F(Security, GroupOrWorldWritableIsRefused) {
  std::string msg;
  ASSERT_EQ(::chmod(path_.c_str(), 0664), 0);
  EXPECT_EQ(refused(path_, ::geteuid(), &msg), PolicyError::Kind::Insecure);
  EXPECT_EQ(msg, path_ + ": writable by group or others (mode 0664): " + kWhy);
  ASSERT_EQ(::chmod(path_.c_str(), 0646), 0);
  EXPECT_EQ(refused(path_, ::geteuid(), &msg), PolicyError::Kind::Insecure);
  EXPECT_EQ(msg, path_ + ": writable by group or others (mode 0646): " + kWhy);
}

TEST_F(Security, SymlinkIsRefused) {
  const std::string link = dir_ + "/link.toml";
  ASSERT_EQ(::symlink(path_.c_str(), link.c_str()), 0);
  std::string msg;
  EXPECT_EQ(refused(link, ::geteuid(), &msg), PolicyError::Kind::Insecure);
  EXPECT_EQ(msg, link + ": is a symbolic link: " + kWhy);
}

TEST_F(Security, DirectoryIsRefused) {
  std::string msg;
  EXPECT_EQ(refused(dir_, ::geteuid(), &msg), PolicyError::Kind::Insecure);
  EXPECT_EQ(msg, dir_ + ": not a regular file: " + kWhy);
}

TEST_F(Security, MissingFile) {
  std::string msg;
  EXPECT_EQ(refused(dir_ + "/none.toml", 0, &msg), PolicyError::Kind::Missing);
  EXPECT_EQ(msg, dir_ + "/none.toml: cannot open: No such file or directory");
}

TEST_F(Security, TooLargeIsRefused) {
  {
    std::ofstream out(path_);
    out << "[defaults]\n";
    for (size_t i = 0; i < kMaxPolicyBytes / 16 + 1; ++i) out << "# padding......\n";
  }
  try {
    load_policy(path_);
    FAIL() << "accepted";
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.kind(), PolicyError::Kind::Unreadable);
    EXPECT_EQ(std::string(e.what()), path_ + ": larger than 1048576 bytes: refused");
  }
}

TEST_F(Security, ParseErrorsNameTheFile) {
  std::ofstream(path_) << "[defaults]\nmode = \"on\"\n";
  try {
    load_policy_secure(path_, ::geteuid());
    FAIL() << "accepted";
  } catch (const PolicyError& e) {
    EXPECT_EQ(std::string(e.what()), path_ + ":2:8: defaults.mode: got \"on\"; valid: apply, suggest, off");
  }
}

}  // namespace
}  // namespace paratune::policies
