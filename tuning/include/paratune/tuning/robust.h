// The arithmetic that keeps one user from steering a calibration fit (docs/calibration.md, "One user cannot
// poison it"): per-user weight caps, weighted medians and the trimming cut of a trimmed fit. Pure.
#pragma once

#include <cstddef>
#include <vector>

namespace paratune::tuning {

// Weights for samples whose users are `user_of[i]` (small integers) such that no user's total weight is more than
// `max_share` of the whole -- or 1/users when fewer users than 1/max_share make the cap impossible (two users:
// half each at most). Users under the cap keep weight 1 per sample; a user over it has every sample scaled down
// by the same factor (water-filling: the capped users end with equal totals t = share x total). Without a
// binding cap every weight is exactly 1, so an honest history is fitted exactly as without caps.
std::vector<double> user_share_weights(const std::vector<size_t>& user_of, double max_share);

// The cap user_share_weights applies for `users` distinct users: max(max_share, 1 / users).
double effective_share_cap(size_t users, double max_share);

// The weighted median of `values`: the smallest value at which the cumulative weight reaches half the total, or
// the midpoint of it and the next when it reaches exactly half; 0 for no values.
double weighted_median(const std::vector<double>& values, const std::vector<double>& weights);

// Where a trimmed fit cuts: a residual farther than this from the weighted median residual is trimmed.
// max(floor, k x 1.4826 x weighted MAD): k robust standard deviations of the residuals (1.4826 x MAD estimates a
// normal sigma), never below `floor`, so that a history whose honest spread is tiny does not trim honest jobs.
double trim_cut(const std::vector<double>& residuals, const std::vector<double>& weights, double k, double floor);

}  // namespace paratune::tuning
