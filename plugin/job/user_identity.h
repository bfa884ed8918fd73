// Becoming the job's user for good inside a forked child, before it touches anything the user controls (their
// scenario file, their report, their plan directory). slurmstepd itself never changes identity (other threads);
// in user_init it runs with the user's effective uid but root's real uid, which a child could take back — so the
// child sets real, effective and saved ids, and the user's supplementary groups (a file readable only through a
// group stays readable), and checks that root cannot be regained.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace paratune::job {

struct JobUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups (Slurm's S_JOB_SUPPLEMENTARY_GIDS); may be empty
  bool known = false;         // uid and gid came from Slurm: without them nothing is done on the user's behalf
};

// Real, effective and saved uid/gid become the user's, supplementary groups the user's. A process that is not
// privileged (neither real nor effective uid 0: tests, the CLI) is left as it is. Throws std::runtime_error on
// any failure, and when `user` is not known (a default of uid 0 would make the "drop" a drop to root; a job that
// really is root's stays root's).
void become_user_for_good(const JobUser& user);

// The supplementary groups of `name` from the group database (getgrouplist), for when Slurm gives none.
std::vector<gid_t> groups_of(const std::string& name, gid_t primary);

}  // namespace paratune::job
