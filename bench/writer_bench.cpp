// Writer throughput into SQLite on one core, and bytes on disk per event
// with every index included: loupe's TraceWriter against the naive layout
// (a rowid table plus a separate (track, start) index, one row per INSERT),
// side by side on the same rows.
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "loupe/prof/trace_writer.h"

namespace prof = loupe::prof;

namespace {

constexpr int kEvents = 1'000'000;
constexpr int kCommitEvery = 100'000;  // ~ what a busy capture commits per flush

std::vector<prof::DeviceOpRow> make_rows() {
  std::vector<prof::DeviceOpRow> rows;
  rows.reserve(kEvents);
  int64_t t[8] = {};
  for (uint64_t i = 0; i < kEvents; ++i) {
    uint32_t track = uint32_t((i * 2654435761u) >> 29) & 7;  // 8 interleaved streams
    t[track] += int64_t(2'000 + (i * 7919) % 40'000);
    rows.push_back({.device = track / 4,
                    .stream = track % 4,
                    .start = t[track],
                    .dur = int64_t(3'000 + (i * 31) % 90'000),
                    .kind = prof::DeviceOpKind::kernel,
                    .name = prof::StringId(1 + i % 40),
                    .bytes = 0,
                    .copy_kind = prof::CopyKind::none,
                    .correlation = uint64_t(i + 1)});
  }
  return rows;
}

uint64_t file_bytes(const std::string& path) {
  uint64_t total = 0;
  for (const char* suffix : {"", "-wal"}) {
    struct stat st {};
    if (::stat((path + suffix).c_str(), &st) == 0) total += uint64_t(st.st_size);
  }
  return total;
}

void BM_TraceWriter(benchmark::State& state) {
  static const std::vector<prof::DeviceOpRow> rows = make_rows();
  std::string path = "/tmp/loupe-writer-bench-" + std::to_string(::getpid()) + ".db";
  uint64_t bytes = 0;
  for (auto _ : state) {
    prof::TraceWriter w(path, {});
    for (int i = 0; i < 40; ++i) w.intern("kernel_" + std::to_string(i));
    for (int i = 0; i < kEvents; ++i) {
      w.add(rows[size_t(i)]);
      if ((i + 1) % kCommitEvery == 0) w.commit();
    }
    w.close();
    bytes = file_bytes(path);
  }
  state.SetItemsProcessed(state.iterations() * kEvents);
  state.counters["bytes_per_event"] = double(bytes) / kEvents;
  for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
}

void exec(sqlite3* db, const char* sql) { sqlite3_exec(db, sql, nullptr, nullptr, nullptr); }

void BM_NaiveRowidTable(benchmark::State& state) {
  static const std::vector<prof::DeviceOpRow> rows = make_rows();
  std::string path = "/tmp/loupe-naive-bench-" + std::to_string(::getpid()) + ".db";
  uint64_t bytes = 0;
  for (auto _ : state) {
    ::unlink(path.c_str());
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    exec(db,
         "CREATE TABLE device_ops(id INTEGER PRIMARY KEY, device INTEGER, stream INTEGER, start INTEGER, "
         "dur INTEGER, kind INTEGER, name INTEGER, bytes INTEGER, copy_kind INTEGER, correlation INTEGER);"
         "CREATE INDEX device_ops_track ON device_ops(device, stream, start);");
    sqlite3_stmt* ins = nullptr;
    sqlite3_prepare_v2(db, "INSERT INTO device_ops VALUES (NULL,?,?,?,?,?,?,?,?,?)", -1, &ins, nullptr);
    exec(db, "BEGIN");
    for (int i = 0; i < kEvents; ++i) {
      const auto& r = rows[size_t(i)];
      sqlite3_bind_int64(ins, 1, r.device);
      sqlite3_bind_int64(ins, 2, r.stream);
      sqlite3_bind_int64(ins, 3, r.start);
      sqlite3_bind_int64(ins, 4, r.dur);
      sqlite3_bind_int64(ins, 5, int64_t(r.kind));
      sqlite3_bind_int64(ins, 6, r.name);
      sqlite3_bind_int64(ins, 7, r.bytes);
      sqlite3_bind_int64(ins, 8, int64_t(r.copy_kind));
      sqlite3_bind_int64(ins, 9, int64_t(r.correlation));
      sqlite3_step(ins);
      sqlite3_reset(ins);
      if ((i + 1) % kCommitEvery == 0) exec(db, "COMMIT; BEGIN");
    }
    exec(db, "COMMIT");
    sqlite3_finalize(ins);
    exec(db, "PRAGMA journal_mode=DELETE");
    sqlite3_close(db);
    bytes = file_bytes(path);
  }
  state.SetItemsProcessed(state.iterations() * kEvents);
  state.counters["bytes_per_event"] = double(bytes) / kEvents;
  ::unlink(path.c_str());
}

BENCHMARK(BM_TraceWriter)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3)->ReportAggregatesOnly();
BENCHMARK(BM_NaiveRowidTable)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3)->ReportAggregatesOnly();

}  // namespace

BENCHMARK_MAIN();
