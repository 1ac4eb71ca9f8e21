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
  w.put(DeviceRow{0, "gpu", DeviceKind::cuda, 1 << 30, 1 << 30});
  w.put(StreamRow{0, 0, "compute"});
  w.put(ThreadRow{0, 1, 1, "main", 0});
  w.put(CallSiteRow{1, w.intern("x.cpp"), 3, f});
  for (int i = 0; i < 6; ++i) {
    w.add(HostSpanRow{0, i * 100, 90, s, SpanKind::user, 0, 1});
    w.add(LaunchRow{0, i * 100 + 5, 5, k, 0, 0, uint64_t(i + 1)});
    w.add(DeviceOpRow{0, 0, i * 100 + 20, 50, DeviceOpKind::kernel, k, 0, CopyKind::none, uint64_t(i + 1)});
    w.add(TransferRow{0, i * 100 + 80, 10, 0, CopyKind::device_to_host, 4, true, true, HostMemory::pageable, 1, 0});
    w.add(MemoryEventRow{0, i * 100 + 30, MemoryEventKind::alloc, 64, uint64_t(i + 1), 64 * (i + 1), 1024, 1});
    w.add(StepRow{0, i * 100, 100, i});
  }
  CompileRow c;
  c.function = f;
  c.signature = sig;
  c.reason = "first compile";
  c.dur = 40;
  w.add(c);
  w.add(CounterRow{w.intern("loss"), 50, 1.5});
  w.add(InstantRow{0, 60, s, SpanKind::user});
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
