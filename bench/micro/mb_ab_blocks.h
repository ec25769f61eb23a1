#pragma once

// The interleaved blocks of mb_rsa_ab and mb_ec_ab: per round, OpenSSL's block, then A's and B's
// in alternating order, so that all three see the same moment of the machine. Each callback runs
// one block and returns seconds per operation. Not part of the CMake build.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

namespace mb_ab {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// time_blocks runs |rounds| rounds and prints ops/s, B's speed over A's and each against OpenSSL,
// as totals and as medians of the blocks, under the heading |what|.
inline void time_blocks(const char* what, int rounds, const std::function<double()>& openssl,
                        const std::function<double()>& a_block,
                        const std::function<double()>& b_block) {
  double total_a = 0, total_b = 0, total_o = 0;
  std::vector<double> b_over_a, a_over_o, b_over_o;
  for (int r = 0; r < rounds; ++r) {
    const double o = openssl();
    double a = 0, b = 0;
    if (r % 2 == 0) {
      a = a_block();
      b = b_block();
    } else {
      b = b_block();
      a = a_block();
    }
    total_a += a;
    total_b += b;
    total_o += o;
    b_over_a.push_back(a / b);
    a_over_o.push_back(o / a);
    b_over_o.push_back(o / b);
  }
  std::printf("%s, %d rounds: ops/s OpenSSL %.0f, A %.0f, B %.0f\n", what, rounds, rounds / total_o,
              rounds / total_a, rounds / total_b);
  std::printf("  speed B/A        %.4f (median of blocks %.4f)\n", total_a / total_b,
              median(b_over_a));
  std::printf("  A / OpenSSL      %.3f (median of blocks %.3f)\n", total_o / total_a,
              median(a_over_o));
  std::printf("  B / OpenSSL      %.3f (median of blocks %.3f)\n", total_o / total_b,
              median(b_over_o));
}

}  // namespace mb_ab
