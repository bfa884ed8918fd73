#include <gtest/gtest.h>

#include "paratune/planner/job_env.h"

using namespace paratune::planner;
using Vars = std::map<std::string, std::string>;

TEST(Inject, NeverOverwritesTheUsersValue) {
  MapEnvironment env(Vars{{"NCCL_IB_HCA", "foo"}});
  auto out = inject(env, {{"NCCL_IB_HCA", "mlx5_0:1", "r"}, {"PARATUNE_TP", "8", "r"}});
  EXPECT_EQ(*env.get("NCCL_IB_HCA"), "foo");
  EXPECT_EQ(*env.get("PARATUNE_TP"), "8");
  ASSERT_EQ(out.kept.size(), 1u);
  EXPECT_EQ(out.kept[0].name, "NCCL_IB_HCA");
  EXPECT_EQ(out.kept[0].value, "foo");
  ASSERT_EQ(out.set.size(), 1u);
  EXPECT_EQ(out.set[0].name, "PARATUNE_TP");
}

TEST(Inject, ForcedVariablesReplaceTheUsersValue) {
  MapEnvironment env(Vars{{"NCCL_IB_HCA", "foo"}});
  auto out = inject(env, {{"NCCL_IB_HCA", "mlx5_0:1", "site policy"}}, {"NCCL_IB_HCA"});
  EXPECT_EQ(*env.get("NCCL_IB_HCA"), "mlx5_0:1");
  EXPECT_TRUE(out.kept.empty());
}

TEST(Inject, EmptyUserValueStillCountsAsSet) {
  MapEnvironment env(Vars{{"NCCL_SOCKET_IFNAME", ""}});
  auto out = inject(env, {{"NCCL_SOCKET_IFNAME", "ib0", "r"}});
  EXPECT_EQ(*env.get("NCCL_SOCKET_IFNAME"), "");
  EXPECT_EQ(out.kept.size(), 1u);
}
