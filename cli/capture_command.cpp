// loupe capture [-o trace.db] [--duration S] -- PROGRAM ARGS...
// Records an unmodified CUDA program: CUDA loads libloupe_inject.so into it
// (CUDA_INJECTION64_PATH), which records CUPTI's activity and the program's
// NVTX ranges; loupe forwards the program's exit code and signals, then
// shows what was recorded.
#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <filesystem>

#include "child_process.h"
#include "commands.h"
#include "loupe/prof/output_file.h"
#include "loupe/prof/trace_query.h"

namespace loupe::cli {

namespace {

struct CaptureArgs {
  std::string out = "trace.db";
  double duration = 0;
  std::vector<std::string> program;
};

// The options of `loupe capture`.
void add_options(CLI::App& cmd, CaptureArgs& args) {
  cmd.description("Record an unmodified CUDA program (PyTorch, JAX, CUDA C++) with CUPTI");
  cmd.add_option("-o,--out", args.out, "trace file to write (default trace.db)");
  cmd.add_option("--duration", args.duration, "stop recording after this many seconds")->check(CLI::PositiveNumber);
  cmd.add_option("PROGRAM", args.program, "the program and its arguments, after --")->required();
}

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return std::filesystem::path(buf).parent_path().string();
}

// CUPTI's library, for NVTX_INJECTION64_PATH: the one this loupe was built
// against if it is still there, else the one the dynamic loader finds (the
// CUDA toolkit may sit elsewhere on the machine that runs the capture).
// Empty when there is none: NVTX ranges are then not recorded.
std::string find_cupti_library() {
  std::error_code ec;
  if (*LOUPE_CUPTI_LIBRARY && std::filesystem::exists(LOUPE_CUPTI_LIBRARY, ec)) return LOUPE_CUPTI_LIBRARY;
  for (const char* name : {"libcupti.so.13", "libcupti.so"}) {
    void* handle = ::dlopen(name, RTLD_LAZY | RTLD_LOCAL);
    if (handle == nullptr) continue;
    link_map* map = nullptr;
    std::string path;
    if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) path = map->l_name;
    ::dlclose(handle);
    if (!path.empty()) return path;
  }
  return "";
}

// The injection library sits in lib/ beside bin/ in a build or an install.
std::string find_injection_library() {
  for (const char* rel : {"/../lib/libloupe_inject.so", "/libloupe_inject.so"}) {
    std::string p = self_dir() + rel;
    if (::access(p.c_str(), R_OK) == 0) return std::filesystem::canonical(p).string();
  }
  return "";
}

int run_capture(const CaptureArgs& args) {
  std::string inject = find_injection_library();
  if (inject.empty()) {
    throw std::runtime_error(
        "libloupe_inject.so was not found next to loupe: this loupe was built without the CUDA toolkit");
  }
  std::string out = std::filesystem::absolute(args.out).string();
  prof::check_output_path(out);  // before the program starts
  std::vector<std::string> add = {"CUDA_INJECTION64_PATH=" + inject, "LOUPE_TRACE=" + out};
  // NVTX ranges (PyTorch's record_function, XLA's ranges) reach CUPTI
  // when NVTX is injected with CUPTI itself.
  if (std::string cupti = find_cupti_library(); !cupti.empty()) {
    add.push_back("NVTX_INJECTION64_PATH=" + cupti);
  } else {
    std::fprintf(stderr, "loupe: CUPTI's library was not found: NVTX ranges will not be recorded\n");
  }
  if (args.duration > 0) add.push_back(fmt::format("LOUPE_CAPTURE_DURATION={}", args.duration));
  std::vector<std::string> env = child_environment(
      {"CUDA_INJECTION64_PATH=", "LOUPE_TRACE=", "LOUPE_CAPTURE_DURATION=", "NVTX_INJECTION64_PATH="}, add);

  // The previous trace stays until the program's capture replaces it.
  std::optional<FileVersion> before = file_version(out);
  int status = run_child(args.program, env);
  int code = exit_code_of(status);
  std::optional<FileVersion> after = file_version(out);
  if (!after || after == before) {
    fmt::print(stderr, "loupe: '{}' never initialized CUDA: nothing was recorded (exit code {})\n", args.program[0],
               code);
  } else {
    std::fflush(stdout);
    try {
      prof::TraceSummary s = prof::summarize_trace(out);
      uint64_t total = 0;
      for (const auto& c : s.counts) total += c.rows;
      fmt::print(stderr, "loupe: recorded {} events of '{}' into {} (exit code {}); see `loupe info {}`\n", total,
                 args.program[0], out, code, out);
    } catch (const std::exception& e) {
      fmt::print(stderr, "loupe: {}\n", e.what());
    }
  }
  return end_like(status, code);
}

}  // namespace

Command add_capture_command(CLI::App& app) { return make_command(app, "capture", add_options, run_capture); }

}  // namespace loupe::cli
