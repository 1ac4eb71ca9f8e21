// docs/trace-format.md and trace_tables.h describe the same event tables:
// each table's heading lists its columns in SQL order, `id` after the
// time, and marks the columns that are not INTEGER with their type.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "loupe/prof/trace_tables.h"

namespace {

// "name" or "name REAL": a column as a heading writes it.
using Columns = std::vector<std::string>;

std::string sql_suffix(const std::string& check) {
  if (check == "real") return " REAL";
  if (check == "text") return " TEXT";
  return "";
}

#define LOUPE_DOC_KEY(name, type, check, init) cols.push_back(#name + sql_suffix(#check));
#define LOUPE_DOC_SPAN(start, dur) \
  cols.push_back(#start);          \
  cols.push_back("id");            \
  cols.push_back(#dur);
#define LOUPE_DOC_POINT(time) \
  cols.push_back(#time);      \
  cols.push_back("id");
#define LOUPE_DOC_TABLE(Row, Track, table, member)                                       \
  {                                                                                      \
    Columns& cols = tables[#table];                                                      \
    LOUPE_COLUMNS_##table(LOUPE_DOC_KEY, LOUPE_DOC_SPAN, LOUPE_DOC_POINT, LOUPE_DOC_KEY) \
  }

std::map<std::string, Columns> described() {
  std::map<std::string, Columns> tables;
  LOUPE_EVENT_TABLES(LOUPE_DOC_TABLE)
  return tables;
}

// Every "### `table(a, b REAL, ...)`" heading of the document.
std::map<std::string, Columns> documented(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::map<std::string, Columns> tables;
  const std::regex heading(R"(^### `(\w+)\((.*)\)`$)");
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, heading)) continue;
    Columns& cols = tables[m[1]];
    std::stringstream list(m[2]);
    std::string col;
    while (std::getline(list, col, ',')) cols.push_back(col.substr(col.find_first_not_of(' ')));
  }
  return tables;
}

TEST(TraceTables, TheFormatDocumentListsEveryColumn) {
  std::map<std::string, Columns> docs = documented(LOUPE_TRACE_FORMAT_DOC);
  std::map<std::string, Columns> code = described();
  ASSERT_EQ(code.size(), 11u);
  for (const auto& [table, columns] : code) {
    ASSERT_TRUE(docs.count(table)) << "docs/trace-format.md has no heading for " << table;
    EXPECT_EQ(docs[table], columns) << table;
  }
}

}  // namespace
