// import_model(): a foreign trace read straight into a model must be the
// model load_trace() reads back from the file import_trace() writes, field
// for field, and write_model() must write it back as itself, on every kind of input loupe imports: the real Kineto
// traces, a JAX trace, an Nsight Systems export, a PyTorch memory snapshot and a pprof memory profile.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "import/import_test_util.h"
#include "import/nsys_export_writer.h"
#include "loupe/prof/import.h"
#include "loupe/prof/trace_reader.h"
#include "loupe/prof/trace_tables.h"
#include "loupe/prof/trace_writer.h"
#include "profiler/test_files.h"

namespace {

using loupe::prof::TraceModel;
namespace fs = std::filesystem;

// Every track of one table: the same keys, and every column equal.
template <typename Track>
void expect_same_tracks(const std::vector<Track>& a, const std::vector<Track>& b, const char* table) {
  ASSERT_EQ(a.size(), b.size()) << table;
  for (size_t i = 0; i < a.size(); ++i) {
    Track x = a[i], y = b[i];
    EXPECT_TRUE(x.columns() == y.columns()) << table << " track " << i;
  }
}

template <typename Track>
void expect_same_keys(const Track& x, const Track& y, const char* table);

#define LOUPE_KEY_EQ(name, type, check, init) EXPECT_EQ(x.name, y.name) << table << " key " #name;
#define LOUPE_SAME_KEYS(Row, Track, tbl, member)                                                       \
  template <>                                                                                          \
  void expect_same_keys(const loupe::prof::Track& x, const loupe::prof::Track& y, const char* table) { \
    LOUPE_COLUMNS_##tbl(LOUPE_KEY_EQ, LOUPE_IGNORE, LOUPE_IGNORE, LOUPE_IGNORE)                        \
  }
LOUPE_EVENT_TABLES(LOUPE_SAME_KEYS)
#undef LOUPE_SAME_KEYS
#undef LOUPE_KEY_EQ

void expect_same_model(const TraceModel& direct, const TraceModel& read) {
  EXPECT_EQ(direct.info.meta, read.info.meta);
  EXPECT_EQ(direct.info.producer, read.info.producer);
  EXPECT_EQ(direct.info.status, read.info.status);
  EXPECT_EQ(direct.info.format_major, read.info.format_major);
  EXPECT_EQ(direct.info.format_minor, read.info.format_minor);
  EXPECT_EQ(direct.info.origin_wall_ns, read.info.origin_wall_ns);
  EXPECT_EQ(direct.strings, read.strings);
  EXPECT_EQ(direct.devices, read.devices);
  EXPECT_EQ(direct.streams, read.streams);
  EXPECT_EQ(direct.threads, read.threads);
  EXPECT_EQ(direct.callsites, read.callsites);
  EXPECT_EQ(direct.start_ns, read.start_ns);
  EXPECT_EQ(direct.end_ns, read.end_ns);
  EXPECT_EQ(direct.total_events(), read.total_events());
#define LOUPE_SAME_TABLE(Row, Track, table, member)                                 \
  expect_same_tracks(direct.member, read.member, #table);                           \
  for (size_t i = 0; i < std::min(direct.member.size(), read.member.size()); ++i) { \
    expect_same_keys(direct.member[i], read.member[i], #table);                     \
  }
  LOUPE_EVENT_TABLES(LOUPE_SAME_TABLE)
#undef LOUPE_SAME_TABLE
}

// `dir`: where the imported file is written.
void expect_same_as_imported_file(const std::string& in, const loupe::test::TempDir& dir) {
  SCOPED_TRACE(in);
  std::string db = dir.file("t.db");
  loupe::prof::ImportResult written = loupe::prof::import_trace(in, db);
  loupe::prof::ImportResult built;
  TraceModel direct = loupe::prof::import_model(in, {}, &built);
  EXPECT_EQ(direct.path, in);
  EXPECT_GT(direct.total_events(), 0u);
  expect_same_model(direct, loupe::prof::load_trace(db));
  // And the model written again (as the cache of imported traces keeps
  // it) reads back as itself.
  std::string again = dir.file("again.db");
  loupe::prof::TraceWriter w(again, {.live = false});
  loupe::prof::write_model(direct, w);
  expect_same_model(direct, loupe::prof::load_trace(again));
  EXPECT_EQ(built.format, written.format);
  EXPECT_EQ(built.rows_written, written.rows_written);
  EXPECT_EQ(built.rows_by_table, written.rows_by_table);
  EXPECT_EQ(built.skipped_by_kind, written.skipped_by_kind);
  EXPECT_EQ(built.source_events, written.source_events);
}

std::vector<std::string> files_in(const std::string& dir, const std::string& ending) {
  std::vector<std::string> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.size() >= ending.size() && name.compare(name.size() - ending.size(), ending.size(), ending) == 0) {
      files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ImportModel, EveryRealKinetoTraceBuildsTheModelItsFileReadsBackAs) {
  std::vector<std::string> traces = files_in(LOUPE_FIXTURES_DIR, ".json.gz");
  std::vector<std::string> ours = files_in(LOUPE_REPO_FIXTURES "/kineto", ".json.gz");
  traces.insert(traces.end(), ours.begin(), ours.end());
  ASSERT_GE(ours.size(), 7u);
  loupe::test::TempDir dir;
  for (const std::string& t : traces) expect_same_as_imported_file(t, dir);
}

TEST(ImportModel, JaxTraceSnapshotAndPprofProfileBuildTheModelTheirFilesReadBackAs) {
  loupe::test::TempDir dir;
  expect_same_as_imported_file(LOUPE_IMPORT_FIXTURES "/jax_cpu_recompile.json.gz", dir);
  expect_same_as_imported_file(LOUPE_REPO_FIXTURES "/torch_memory/cpu_mlp_snapshot.pickle.gz", dir);
  expect_same_as_imported_file(LOUPE_REPO_FIXTURES "/jax_memory/cpu_profile.prof", dir);
  expect_same_as_imported_file(LOUPE_REPO_FIXTURES "/jax_profile/plugins/profile/2026_01_02_11_30_00/host0.xplane.pb",
                               dir);
}

TEST(ImportModel, NsightSystemsExportBuildsTheModelItsFileReadsBackAs) {
  loupe::test::TempDir dir;
  std::string path = dir.file("report.sqlite");
  loupe::test::write_small_nsys_export(path);
  expect_same_as_imported_file(path, dir);
}

TEST(ImportModel, AFileThatIsNoTraceIsRefusedAsTheImportRefusesIt) {
  loupe::test::TempDir dir;
  std::string path = dir.file("notes.txt");
  loupe::test::write_text(path, "hello");
  EXPECT_THROW(loupe::prof::import_model(path), loupe::prof::ImportError);
}

}  // namespace
