// Strings a stranger's trace may hold: control characters, NUL bytes,
// invalid UTF-8 and enormous names. What reaches a terminal is escaped,
// what is JSON is valid UTF-8, and nothing grows without bound.
#include <nlohmann/json.hpp>

#include "hostile_util.h"

namespace loupe::hostile {
namespace {

class HostileContent : public loupe::test::TempDirTest {
 protected:
  std::string trace = synth_trace(dir, "t.db", 5000);

  // Renames the kernel with the most launches to `sql_text` (an SQL
  // expression) and returns how many device ops carry that name.
  int64_t rename_top_kernel(const std::string& sql_text) {
    std::string top = "(SELECT name FROM device_ops WHERE kind = 0 GROUP BY name ORDER BY count(*) DESC LIMIT 1)";
    int64_t n = query_int(trace, "SELECT count(*) FROM device_ops WHERE name = " + top);
    tamper(trace, "UPDATE strings SET text = " + sql_text + " WHERE id = " + top);
    return n;
  }
};

bool has_control_bytes(const std::string& s) {
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
  }
  return false;
}

// Defect 9: a NUL byte in a string cut the printed row short.
TEST_F(HostileContent, ANulByteDoesNotCutTheRow) {
  int64_t kernels = rename_top_kernel("'ab' || char(0) || 'cd'");
  RunResult sql = loupe({"sql", trace, "SELECT text, 42 FROM strings WHERE text LIKE 'ab%'"});
  ASSERT_EQ(sql.exit_code, 0) << sql.err;
  EXPECT_NE(sql.out.find("ab\\x00cd  42"), std::string::npos) << sql.out;
  RunResult csv = loupe({"sql", trace, "SELECT text, 42 FROM strings WHERE text LIKE 'ab%'", "--csv"});
  EXPECT_NE(csv.out.find("ab\\x00cd,42\n"), std::string::npos) << csv.out;
  RunResult summary = loupe({"summary", trace});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  // The name ends its row (names come last), whole, after its figures.
  size_t at = summary.out.find("ab\\x00cd\n");
  ASSERT_NE(at, std::string::npos) << summary.out;
  size_t start = summary.out.rfind('\n', at) + 1;
  std::string row = summary.out.substr(start, summary.out.find('\n', at) - start);
  EXPECT_NE(row.find(" kernel "), std::string::npos) << row;
  EXPECT_NE(row.find(" " + std::to_string(kernels) + " "), std::string::npos) << row;
}

// Defect 12: escape sequences in names reached the terminal raw: OSC 52
// writes the clipboard, ESC[2J clears the screen, CR/LF forge lines.
TEST_F(HostileContent, EscapeSequencesNeverReachTheTerminal) {
  const std::string evil =
      "char(27) || ']52;c;ZWNobyBwd25lZA==' || char(7) || char(27) || '[2J' || char(13) || char(10) || "
      "'FORGED LINE' || char(155) || 'x'";
  rename_top_kernel(evil);
  tamper(trace, "UPDATE devices SET name = " + evil + "; UPDATE meta SET value = " + evil +
                    " WHERE key = 'producer'; UPDATE threads SET name = " + evil + ";");
  for (const auto& args : std::vector<std::vector<std::string>>{{"info", trace},
                                                                {"summary", trace},
                                                                {"summary", trace, "--csv"},
                                                                {"sql", trace, "SELECT name FROM devices"},
                                                                {"sql", trace, "SELECT name FROM devices", "--csv"},
                                                                {"analyze", trace},
                                                                {"analyze", trace, "--format", "markdown"},
                                                                {"diff", trace, trace}}) {
    RunResult r = loupe(args);
    ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_FALSE(has_control_bytes(r.out)) << args[0] << " " << args.back();
    EXPECT_FALSE(has_control_bytes(r.err)) << args[0];
    EXPECT_EQ(r.out.find("\nFORGED LINE"), std::string::npos) << args[0] << " " << args.back();
  }
  RunResult info = loupe({"info", trace});
  EXPECT_NE(info.out.find("\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2J\\r\\nFORGED LINE"), std::string::npos) << info.out;
}

// Error messages quote the file: they are escaped too.
TEST_F(HostileContent, ErrorMessagesAreEscaped) {
  tamper(trace,
         "UPDATE sqlite_schema SET sql = replace(sql, 'dur INTEGER', 'dur \"' || char(27) || '[2J\"') "
         "WHERE name = 'host_spans'");
  RunResult r = loupe({"info", trace});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(has_control_bytes(r.err)) << r.err;
  EXPECT_NE(r.err.find("\\x1b[2J"), std::string::npos) << r.err;
}

// Defect 13: invalid UTF-8 made `summary --json` fail with a raw library
// error, and `export` wrote JSON that is not UTF-8.
TEST_F(HostileContent, JsonOutputIsValidUtf8) {
  rename_top_kernel("CAST(X'66fffe80c0af' AS TEXT) || 'tail'");
  RunResult summary = loupe({"summary", trace, "--json"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  nlohmann::json doc;
  ASSERT_NO_THROW(doc = nlohmann::json::parse(summary.out));
  bool found = false;
  for (const auto& row : doc["device_ops"])
    found |= row["name"] == "f\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDtail";
  EXPECT_TRUE(found) << summary.out.substr(0, 500);
  EXPECT_NE(summary.err.find("invalid UTF-8"), std::string::npos) << summary.err;

  std::string json = dir.file("t.json");
  RunResult exported = loupe({"export", trace, "--chrome", json});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.out.find("invalid UTF-8"), std::string::npos) << exported.out;
  EXPECT_NO_THROW(nlohmann::json::parse(read_file(json)));

  for (const char* format : {"json"}) {
    RunResult r = loupe({"analyze", trace, "--format", format});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NO_THROW(nlohmann::json::parse(r.out));
  }
}

// Defect 14: export had no bound; a 100 MB name used by 1,352 kernels
// became 135 GB of JSON. Long names are cut, and the export says so.
TEST_F(HostileContent, ExportCutsEnormousNames) {
  int64_t kernels = rename_top_kernel("'k' || hex(zeroblob(50000))");  // a 100,001-byte name
  ASSERT_GT(kernels, 100);
  std::string json = dir.file("t.json");
  RunResult r = loupe({"export", trace, "--chrome", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(std::filesystem::file_size(json), 10'000'000u);
  EXPECT_NE(r.out.find("1 name longer than"), std::string::npos) << r.out;
  auto doc = nlohmann::json::parse(read_file(json));
  size_t cut = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e.contains("name") && e["name"].get<std::string>().rfind("k000", 0) == 0) {
      ++cut;
      EXPECT_NE(e["name"].get<std::string>().find("bytes cut"), std::string::npos);
    }
  }
  EXPECT_EQ(cut, size_t(kernels));
  // Text output cuts long names too.
  RunResult summary = loupe({"summary", trace});
  ASSERT_EQ(summary.exit_code, 0);
  EXPECT_LT(summary.out.size(), 100'000u);
  EXPECT_NE(summary.out.find("bytes cut"), std::string::npos);
}

}  // namespace
}  // namespace loupe::hostile
