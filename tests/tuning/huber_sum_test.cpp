// The calibration fit's loss in O(configurations x log jobs) (tuning/src/huber_sum.h) against its definition,
// the per-job sum of w_i H(|log achieved_i - log predicted_c(i)|), H squared up to delta and linear beyond.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "huber_sum.h"

namespace {

using paratune::tuning::detail::HuberSum;

double by_definition(const std::vector<double>& la, const std::vector<size_t>& of, const std::vector<double>& w,
                     const std::vector<double>& lp, double delta) {
  double sum = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    const double r = std::fabs(la[i] - lp[of[i]]);
    sum += w[i] * (r <= delta ? r * r : delta * (2 * r - delta));
  }
  return sum;
}

// Jobs of three configurations spread around log step times 0.3, -1.2 and 2.0, with unequal weights (a capped
// user's jobs weigh less), in no order.
struct Jobs {
  std::vector<double> la, w;
  std::vector<size_t> of;
};

Jobs some_jobs() {
  Jobs j;
  const double centre[3] = {0.3, -1.2, 2.0};
  for (int i = 0; i < 3000; ++i) {
    const size_t c = size_t((i * 7) % 3);
    // A deterministic spread of about +-0.4 with a few far-off jobs (a sick node: x1.8).
    double x = centre[c] + 0.4 * std::sin(i * 0.91) * std::cos(i * 0.37);
    if (i % 97 == 0) x += std::log(1.8);
    j.la.push_back(x);
    j.of.push_back(c);
    j.w.push_back(i % 5 == 0 ? 0.35 : 1.0);
  }
  return j;
}

TEST(HuberSum, EqualsThePerJobSumForPredictionsInsideAndOutsideTheJobs) {
  const Jobs j = some_jobs();
  const double delta = 0.1;
  const HuberSum sum(j.la, j.of, 3, j.w, delta);
  // Predictions at the centres, off by a little, off by more than every job's spread (all linear, below and
  // above), and exactly delta from a job (the boundary, where both branches agree).
  const std::vector<std::vector<double>> predictions = {
      {0.3, -1.2, 2.0}, {0.35, -1.1, 1.93}, {3.0, -4.0, 5.0}, {-3.0, 2.0, -1.0}, {j.la[0] + delta, -1.2, 2.0}};
  for (const auto& lp : predictions) {
    const double want = by_definition(j.la, j.of, j.w, lp, delta);
    EXPECT_NEAR(sum(lp), want, 1e-12 * want) << lp[0] << " " << lp[1] << " " << lp[2];
  }
}

TEST(HuberSum, FollowsEachConfigurationsOwnPrediction) {
  const Jobs j = some_jobs();
  const HuberSum sum(j.la, j.of, 3, j.w, 0.1);
  // Moving one configuration's prediction changes the sum by what its jobs contribute, and only by that.
  const std::vector<double> base = {0.3, -1.2, 2.0}, moved = {0.3, -0.7, 2.0};
  const double change = sum(moved) - sum(base);
  EXPECT_NEAR(change, by_definition(j.la, j.of, j.w, moved, 0.1) - by_definition(j.la, j.of, j.w, base, 0.1), 1e-9);
  EXPECT_GT(change, 1.0);  // control: the move is not lost
}

TEST(HuberSum, ConfigurationsWithoutJobsAndNoJobsAddNothing) {
  const HuberSum none({}, {}, 2, {}, 0.1);
  EXPECT_EQ(none({0.5, -0.5}), 0.0);
  const HuberSum one({1.0}, {1}, 2, {2.0}, 0.1);  // configuration 0 holds no job
  EXPECT_NEAR(one({100.0, 1.05}), 2.0 * 0.05 * 0.05, 1e-15);
  EXPECT_NEAR(one({100.0, 1.5}), 2.0 * 0.1 * (2 * 0.5 - 0.1), 1e-15);
}

}  // namespace
