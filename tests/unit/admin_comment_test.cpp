// set_admin_comment (plugin/admin_comment.h) against libslurm, as slurmstepd's libslurmfull provides it, without a
// slurmctld: whatever libslurm does — here it finds no configuration and retries for a minute —
// happens in the child; the caller gets a reason, in time, and lives on. The accepted update is tested on the real
// Slurm (tests/integration/test_admin_comment.sh).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "admin_comment.h"

using namespace paratune::plugin;

TEST(AdminComment, NoJobIdIsAReasonNotARequest) {
  EXPECT_EQ(set_admin_comment(0, "paratune: x"), "Slurm did not give the job id");
}

TEST(AdminComment, LibslurmFailingInTheChildIsAReasonInTime) {
  ::setenv("SLURM_CONF", "/nonexistent/paratune-test/slurm.conf", 1);
  const auto start = std::chrono::steady_clock::now();
  const std::string problem = set_admin_comment(12345, "paratune: x", 2000);
  const auto took = std::chrono::steady_clock::now() - start;
  // libslurm retries a missing slurm.conf for up to 60 s ("retrying in 1sec up to 60sec"): the deadline ends it.
  EXPECT_NE(problem.find("did not finish within 2000 ms"), std::string::npos) << problem;
  EXPECT_LT(took, std::chrono::milliseconds(2000 + 1000)) << problem;  // the bound plus call_in_child's grace
  // Still here, and able to go on: a second call gives a reason again.
  EXPECT_FALSE(set_admin_comment(12345, "paratune: x", 2000).empty());
}
