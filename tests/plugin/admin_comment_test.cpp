// set_admin_comment (plugin/admin_comment.h) against libslurm, as slurmstepd's libslurmfull provides it, without a
// slurmctld: whatever libslurm does — here it finds no configuration and retries for a minute —
// happens in the child; the caller gets a reason, in time, and lives on. The accepted update is tested on the real
// Slurm (tests/integration/test_admin_comment.sh).
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "admin_comment.h"

using namespace paratune::plugin;

TEST(AdminComment, NoJobIdIsAReasonNotARequest) {
  EXPECT_EQ(set_admin_comment(0, "paratune: x"), "Slurm did not give the job id");
}

TEST(AdminComment, LibslurmFailingInTheChildIsAReasonInTime) {
  ::setenv("SLURM_CONF", "/nonexistent/paratune-test/slurm.conf", 1);
  const auto start = std::chrono::steady_clock::now();
  const std::string problem = set_admin_comment(12345, "paratune: x", 1000);
  const auto took = std::chrono::steady_clock::now() - start;
  // libslurm retries a missing slurm.conf for up to 60 s ("retrying in 1sec up to 60sec"): the deadline ends it.
  EXPECT_NE(problem.find("did not finish within 1000 ms"), std::string::npos) << problem;
  EXPECT_LT(took, std::chrono::milliseconds(1000 + 1000)) << problem;  // the bound plus call_in_child's grace
  // Still here, and able to go on: a second call gives a reason again.
  EXPECT_FALSE(set_admin_comment(12345, "paratune: x", 1000).empty());
}

namespace {

// A loopback TCP port nothing listens on: bound, read back, closed.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return -1;
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

TEST(AdminComment, AnAbsentSlurmctldIsLibslurmsReason) {
  const int port = closed_port();
  ASSERT_GT(port, 0);
  const auto dir = std::filesystem::temp_directory_path() / ("paratune-admin-comment-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "slurm.conf") << "ClusterName=paratune-unit\nSlurmctldHost=localhost(127.0.0.1)\n"
                                    << "SlurmctldPort=" << port << "\nAuthType=auth/munge\nMessageTimeout=2\n"
                                    << "NodeName=n0 CPUs=1\nPartitionName=p Nodes=n0 Default=YES\n";
  ::setenv("SLURM_CONF", (dir / "slurm.conf").c_str(), 1);
  const std::string problem = set_admin_comment(12345, "paratune: x", 4000);
  std::filesystem::remove_all(dir);
  // libslurm gives up connecting within MessageTimeout (2 s here), inside the 4 s bound. The child's reason comes
  // back whole (libslurm's words for a refused connection), not cut to a size error.
  EXPECT_EQ(problem, "the update failed: Unable to contact slurm controller (connect failure)");
}
