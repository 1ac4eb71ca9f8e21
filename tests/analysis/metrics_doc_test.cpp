// docs/ci.md's table of metrics is the one the metric lists give
// (metrics.h): a metric added, renamed or budgeted fails here until the
// document says so.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "loupe/prof/metrics.h"

namespace {

TEST(MetricsDoc, CiMdHasTheTableTheListsGive) {
  std::ifstream in(LOUPE_CI_DOC);
  ASSERT_TRUE(in) << "cannot read " << LOUPE_CI_DOC;
  std::stringstream text;
  text << in.rdbuf();
  std::string table = loupe::prof::metrics_markdown();
  EXPECT_NE(text.str().find(table), std::string::npos) << LOUPE_CI_DOC << " should carry this table, as it is:\n\n"
                                                       << table;
}

}  // namespace
