// The nested rank test of `loupe diff` with several runs a side, against
// SciPy's figures for the tests it reduces to (written down from SciPy
// 1.15: stats.t.sf, stats.ttest_ind on stats.rankdata).
#include "loupe/prof/rank_test.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace loupe::prof {
namespace {

using Runs = std::vector<std::vector<double>>;

TEST(RankTest, StudentTailMatchesScipy) {
  EXPECT_NEAR(student_t_upper_tail(2.0, 4), 0.05805826175840775, 1e-12);
  EXPECT_NEAR(student_t_upper_tail(-1.3, 7.5), 0.8839366105921957, 1e-12);
  EXPECT_NEAR(student_t_upper_tail(3.5, 100), 0.00034821385867813396, 1e-12);
  EXPECT_NEAR(student_t_upper_tail(0.7, 1), 0.3055998877857853, 1e-12);
  EXPECT_DOUBLE_EQ(student_t_upper_tail(0, 3), 0.5);
}

// Steps vary more than runs: the run effect is nil and all steps count,
// the t form of the rank-sum test (ttest_ind on the pooled ranks: t 3.2897,
// 18 degrees of freedom, p 0.004073).
TEST(RankTest, WithoutARunEffectEveryStepCounts) {
  Runs base = {{10, 12, 11, 13, 9}, {11, 10, 12, 14, 9}};
  Runs head = {{12, 13, 15, 11, 14}, {13, 16, 12, 14, 15}};
  RankTest r = nested_rank_test(base, head);
  ASSERT_TRUE(r.tested);
  EXPECT_FALSE(r.runs_vary_more);
  EXPECT_DOUBLE_EQ(r.degrees_of_freedom, 18);
  EXPECT_NEAR(r.t, 3.2896938899494206, 1e-9);
  EXPECT_NEAR(r.p_value, 0.004072899077978879, 1e-9);
  EXPECT_NEAR(r.p_increase, r.p_value / 2, 1e-12);
  EXPECT_NEAR(r.p_decrease, 1 - r.p_value / 2, 1e-9);
}

// Each run's steps are alike and runs of one side differ by more than the
// sides do on average: the runs are the units (balanced, so the test is
// ttest_ind on the runs' mean ranks: t 1.8708, 4 degrees of freedom,
// p 0.1347), where a rank-sum test over the steps as if independent
// would call it a change (Mann-Whitney p 0.0062).
TEST(RankTest, RunsThatDifferAreTheUnits) {
  Runs base = {{10, 10.1, 10.2}, {12, 12.1, 12.2}, {11, 11.1, 11.2}};
  Runs head = {{13, 13.1, 13.2}, {11.5, 11.6, 11.7}, {14, 14.1, 14.2}};
  RankTest r = nested_rank_test(base, head);
  ASSERT_TRUE(r.tested);
  EXPECT_TRUE(r.runs_vary_more);
  EXPECT_DOUBLE_EQ(r.degrees_of_freedom, 4);
  EXPECT_NEAR(r.t, 1.8708286933869707, 1e-9);
  EXPECT_NEAR(r.p_value, 0.13470193531896713, 1e-9);
}

TEST(RankTest, IdenticalAndFullyApartSides) {
  Runs same = {{5, 5, 5}, {5, 5, 5}};
  RankTest r = nested_rank_test(same, same);
  EXPECT_TRUE(r.tested);
  EXPECT_DOUBLE_EQ(r.p_value, 1);
  // Every step of base below every step of head, all alike within a side.
  RankTest apart = nested_rank_test(Runs{{3, 3}, {3, 3}}, Runs{{6, 6}, {6, 6}});
  EXPECT_TRUE(std::isinf(apart.t) && apart.t > 0);
  EXPECT_DOUBLE_EQ(apart.p_increase, 0);
  EXPECT_DOUBLE_EQ(apart.p_decrease, 1);
  // Too little to test.
  EXPECT_FALSE(nested_rank_test(Runs{{1}}, Runs{{2}}).tested);
  EXPECT_FALSE(nested_rank_test(Runs{{1, 2, 3}}, Runs{{}}).tested);
}

}  // namespace
}  // namespace loupe::prof
