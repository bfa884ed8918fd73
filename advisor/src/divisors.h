// Divisors of n in increasing order, shared by the search and the "nothing fits" diagnosis (obstacle.cpp).
#pragma once

#include <vector>

namespace paratune::advisor {

// O(sqrt n): a global batch of 2^30 must not mean a billion iterations.
inline std::vector<int> divisors(int n) {
  std::vector<int> low, high;
  for (int i = 1; i <= n / i; ++i) {
    if (n % i) continue;
    low.push_back(i);
    if (i != n / i) high.push_back(n / i);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

}  // namespace paratune::advisor
