// Writes the binary seed inputs of the fuzz corpora: small loupe traces and
// a small Nsight Systems export. Run once; the results are committed under
// tests/fuzz/corpus/.   make_seeds CORPUS_DIR
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "import/nsys_export_writer.h"
#include "loupe/prof/trace_writer.h"

using namespace loupe::prof;

namespace {

void small_trace(const std::string& path, const char* status) {
  WriterOptions o;
  o.page_size = 512;
  TraceWriter w(path, o);
  StringId k = w.intern("gemm"), s = w.intern("step"), f = w.intern("f"), sig = w.intern("f32[4]");
  w.put(DeviceRow{
      .id = 0, .name = "gpu", .kind = DeviceKind::cuda, .memory_capacity = 1 << 30, .copy_bandwidth = 1 << 30});
  w.put(StreamRow{.device = 0, .stream = 0, .name = "compute"});
  w.put(ThreadRow{.id = 0, .process = 1, .os_tid = 1, .name = "main", .dropped_events = 0});
  w.put(CallSiteRow{.id = 1, .file = w.intern("x.cpp"), .line = 3, .function = f});
  for (int i = 0; i < 6; ++i) {
    w.add(HostSpanRow{
        .thread = 0, .start = i * 100, .dur = 90, .name = s, .kind = SpanKind::user, .depth = 0, .callsite = 1});
    w.add(LaunchRow{.thread = 0,
                    .start = i * 100 + 5,
                    .dur = 5,
                    .name = k,
                    .device = 0,
                    .stream = 0,
                    .correlation = uint64_t(i + 1)});
    w.add(DeviceOpRow{.device = 0,
                      .stream = 0,
                      .start = i * 100 + 20,
                      .dur = 50,
                      .kind = DeviceOpKind::kernel,
                      .name = k,
                      .bytes = 0,
                      .copy_kind = CopyKind::none,
                      .correlation = uint64_t(i + 1)});
    w.add(TransferRow{.thread = 0,
                      .start = i * 100 + 80,
                      .dur = 10,
                      .device = 0,
                      .direction = CopyKind::device_to_host,
                      .bytes = 4,
                      .synchronous = true,
                      .implicit = true,
                      .host_memory = HostMemory::pageable,
                      .callsite = 1,
                      .correlation = 0});
    w.add(MemoryEventRow{.device = 0,
                         .time = i * 100 + 30,
                         .kind = MemoryEventKind::alloc,
                         .bytes = 64,
                         .address = uint64_t(i + 1),
                         .allocated = 64 * (i + 1),
                         .reserved = 1024,
                         .callsite = 1});
    w.add(StepRow{.thread = 0, .start = i * 100, .dur = 100, .number = i});
  }
  CompileRow c;
  c.function = f;
  c.signature = sig;
  c.reason = "first compile";
  c.dur = 40;
  w.add(c);
  w.add(CounterRow{.name = w.intern("loss"), .time = 50, .value = 1.5});
  w.add(InstantRow{.thread = 0, .time = 60, .name = s, .kind = SpanKind::user});
  w.set_meta("status", status);
  w.close();
}

void small_nsys(const std::string& path) {
  loupe::test::NsysExportWriter w(path);
  w.create_schema();
  int64_t tid = loupe::test::NsysExportWriter::global_tid(100, 101);
  for (int i = 0; i < 4; ++i) {
    w.runtime(i * 1000, i * 1000 + 10, tid, i + 1, "cudaLaunchKernel_v7000");
    w.kernel(i * 1000 + 50, i * 1000 + 400, 0, 7, i + 1, "gemm");
  }
  w.close();
}

// A job of two ranks packed as the job_folder target reads its input: each
// file a 4-byte little-endian length and its bytes, the index first.
void small_job(const std::string& path, const std::string& scratch) {
  std::string index = R"({"format": "loupe job", "version": 1, "generation": 1, "world_size": 2, "backend": "nccl",
    "ranks": [{"rank": 0, "trace": "rank-00000.g1.db"}, {"rank": 1, "trace": "rank-00001.g1.db"}]})";
  std::string packed;
  auto section = [&](const std::string& bytes) {
    uint32_t n = uint32_t(bytes.size());
    packed.append(reinterpret_cast<const char*>(&n), 4);
    packed += bytes;
  };
  section(index);
  for (int rank = 0; rank < 2; ++rank) {
    small_trace(scratch, "complete");
    std::ifstream in(scratch, std::ios::binary);
    section(std::string(std::istreambuf_iterator<char>(in), {}));
  }
  std::ofstream(path, std::ios::binary) << packed;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir / "trace_reader");
  std::filesystem::create_directories(dir / "nsys_import");
  small_trace((dir / "trace_reader" / "complete.db").string(), "complete");
  small_trace((dir / "trace_reader" / "recording.db").string(), "recording");
  small_nsys((dir / "nsys_import" / "empty_export.sqlite").string());
  std::filesystem::create_directories(dir / "job_folder");
  small_job((dir / "job_folder" / "two-ranks").string(), (dir / "job_folder" / "scratch.db").string());
  std::filesystem::remove(dir / "job_folder" / "scratch.db");
  return 0;
}
