// The arithmetic behind "one user cannot poison the calibration" (robust.h): the per-user share cap, the weighted
// median and the trimming cut. Expected values worked by hand from the definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "paratune/tuning/calibration_diff.h"
#include "paratune/tuning/robust.h"

using namespace paratune::tuning;

namespace {

std::vector<double> user_totals(const std::vector<size_t>& of, const std::vector<double>& w, size_t users) {
  std::vector<double> t(users, 0);
  for (size_t i = 0; i < of.size(); ++i) t[of[i]] += w[i];
  return t;
}

std::vector<size_t> jobs_of(const std::vector<size_t>& counts) {
  std::vector<size_t> of;
  for (size_t u = 0; u < counts.size(); ++u) of.insert(of.end(), counts[u], u);
  return of;
}

}  // namespace

TEST(Robust, NoBindingCapLeavesEveryWeightAtOne) {
  // Jobs 4, 4, 2 under a cap of 1/2: the largest users hold 40 % each, under the cap, so nothing changes.
  const auto of = jobs_of({4, 4, 2});
  for (double w : user_share_weights(of, 0.5)) EXPECT_EQ(w, 1.0);
}

TEST(Robust, OneHeavyUserIsCappedToTheShare) {
  // mallory 20 jobs, three others 4 each, cap 1/3: t = (1/3) * 12 / (1 - 1/3) = 6, and 6 is a third of 6 + 12.
  const auto of = jobs_of({20, 4, 4, 4});
  const auto w = user_share_weights(of, 1.0 / 3);
  const auto t = user_totals(of, w, 4);
  EXPECT_NEAR(t[0], 6.0, 1e-12);
  EXPECT_NEAR(t[0] / (t[0] + t[1] + t[2] + t[3]), 1.0 / 3, 1e-12);
  for (size_t u = 1; u < 4; ++u) EXPECT_EQ(t[u], 4.0);  // the others keep weight 1 per job
}

TEST(Robust, TwoUsersAreCappedAtHalfEach) {
  // A cap of 1/3 cannot hold with two users: the effective cap is 1/2, so 6 and 4 jobs weigh 4 and 4.
  EXPECT_DOUBLE_EQ(effective_share_cap(2, 1.0 / 3), 0.5);
  const auto of = jobs_of({6, 4});
  const auto t = user_totals(of, user_share_weights(of, 1.0 / 3), 2);
  EXPECT_NEAR(t[0], 4.0, 1e-12);
  EXPECT_NEAR(t[1], 4.0, 1e-12);
}

TEST(Robust, TwoHeavyUsersAreCappedTogether) {
  // 10, 10, 1, 1 at cap 1/3: k = 1 gives t = (1/3)*12/(2/3) = 6 < 10 (the second user would be over it); k = 2 gives
  // t = (1/3)*2/(1/3) = 2, between 10 and 1: both heavy users weigh 2, a third each of 6.
  const auto of = jobs_of({10, 10, 1, 1});
  const auto t = user_totals(of, user_share_weights(of, 1.0 / 3), 4);
  EXPECT_NEAR(t[0], 2.0, 1e-12);
  EXPECT_NEAR(t[1], 2.0, 1e-12);
  EXPECT_EQ(t[2], 1.0);
}

TEST(Robust, WeightedMedianAndAnEvenSplit) {
  EXPECT_EQ(weighted_median({3, 1, 2}, {1, 1, 1}), 2);
  EXPECT_EQ(weighted_median({1, 10}, {3, 1}), 1);          // three quarters of the weight at 1
  EXPECT_EQ(weighted_median({0, 0, -0.5, -0.5}, {1, 1, 1, 1}), -0.25);  // two equal halves: the midpoint
  EXPECT_EQ(weighted_median({}, {}), 0);
}

TEST(Robust, TrimCutHasAFloorAndFollowsTheSpread) {
  // Residuals within 1 %: the floor decides.
  EXPECT_DOUBLE_EQ(trim_cut({0.01, -0.01, 0.0, 0.005}, {1, 1, 1, 1}, 3, 0.4), 0.4);
  // A wide honest spread (MAD 0.2): 3 x 1.4826 x 0.2.
  EXPECT_NEAR(trim_cut({-0.2, 0.2, -0.2, 0.2, 0.0}, {1, 1, 1, 1, 1}, 3, 0.4), 3 * 1.4826 * 0.2, 1e-12);
}

TEST(CalibrationDiff, SaysWhatChangesAndOmitsWhatDoesNot) {
  paratune::advisor::Calibration a, b;
  a.entries.push_back({"h100-sxm5-80gb", "infiniband", "megatron", 1.0, 1.0, 10, 0, 0, 0});
  a.entries.push_back({"a100-sxm4-80gb", "roce", "", 0.9, 1.0, 10, 0, 0, 0});
  b.entries.push_back({"h100-sxm5-80gb", "infiniband", "megatron", 0.8314, 1.0, 12, 0, 0, 0});
  b.entries.push_back({"b200", "infiniband", "fsdp", 0.7, 0.9, 6, 6, 0, 0});
  b.memory.push_back({"h100-sxm5-80gb", "megatron", 15.5, 1, 0});
  const auto lines = calibration_changes(a, b);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "h100-sxm5-80gb/infiniband/megatron: compute_scale 1.000 -> 0.831 (12 jobs)");
  EXPECT_EQ(lines[1], "b200/infiniband/fsdp: new entry, compute_scale 0.700, network_scale 0.900 (6 jobs)");
  EXPECT_EQ(lines[2], "a100-sxm4-80gb/roce/any: entry removed (the shipped parameters apply)");
  EXPECT_EQ(lines[3], "memory h100-sxm5-80gb/megatron: head-room 0.0 GiB -> 15.5 GiB (new entry)");
  EXPECT_EQ(calibration_changes(b, b), std::vector<std::string>{"unchanged"});
}
