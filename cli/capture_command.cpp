// loupe capture [-o trace.db] [--duration S] [--memory] -- PROGRAM ARGS...
// Records an unmodified program. A CUDA program: CUDA loads
// libloupe_inject.so into it (CUDA_INJECTION64_PATH), which records
// CUPTI's activity and the program's NVTX ranges. A Python program with the
// loupe package installed: the sitecustomize.py put on its PYTHONPATH
// starts loupe.capture, which records its JAX and torch.compile
// compiles, host syncs and steps, and CUPTI's activity itself. loupe forwards the program's exit
// code and signals, then shows what was recorded.
#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
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
  bool memory = false;
  std::vector<std::string> program;
};

// The options of `loupe capture`.
void add_options(CLI::App& cmd, CaptureArgs& args) {
  cmd.description(
      "Record an unmodified program: its GPUs with CUPTI (PyTorch, JAX, CUDA C++), and a Python program's JAX and "
      "torch.compile compiles, host syncs and steps");
  cmd.add_option("-o,--out", args.out, "trace file to write (default trace.db)");
  cmd.add_option("--duration", args.duration, "stop recording after this many seconds")->check(CLI::PositiveNumber);
  cmd.add_flag("--memory", args.memory,
               "also record every tensor storage a Python program's PyTorch allocates and frees, with the line that "
               "allocated it (each PyTorch operation costs several microseconds more), and its JAX arrays live at "
               "each step's end");
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

// The folder of the sitecustomize.py that starts loupe.capture in Python
// programs: lib/loupe/python beside bin/ in a build or an install.
std::string find_python_site() {
  std::string dir = self_dir() + "/../lib/loupe/python";
  if (::access((dir + "/sitecustomize.py").c_str(), R_OK) != 0) return "";
  return std::filesystem::canonical(dir).string();
}

// The variables that set up both ways of recording.
std::vector<std::string> capture_variables(const std::string& out, const std::string& inject,
                                           const std::string& python_site) {
  std::vector<std::string> add;
  if (!inject.empty()) {
    add = {"CUDA_INJECTION64_PATH=" + inject, "LOUPE_TRACE=" + out};
    // NVTX ranges (PyTorch's record_function, XLA's ranges) reach CUPTI
    // when NVTX is injected with CUPTI itself.
    if (std::string cupti = find_cupti_library(); !cupti.empty()) {
      add.push_back("NVTX_INJECTION64_PATH=" + cupti);
    } else {
      std::fprintf(stderr, "loupe: CUPTI's library was not found: NVTX ranges will not be recorded\n");
    }
  }
  if (!python_site.empty()) {
    const char* path = std::getenv("PYTHONPATH");
    add.push_back("PYTHONPATH=" + python_site + (path && *path ? ":" + std::string(path) : ""));
    add.push_back("LOUPE_PYTHON_TRACE=" + out);
  }
  return add;
}

int run_capture(const CaptureArgs& args) {
  std::string inject = find_injection_library(), python_site = find_python_site();
  if (inject.empty() && python_site.empty()) {
    throw std::runtime_error(
        "neither libloupe_inject.so nor lib/loupe/python was found next to loupe: this loupe cannot record other "
        "programs");
  }
  if (inject.empty()) {
    std::fprintf(stderr,
                 "loupe: built without the CUDA toolkit: only Python programs with the loupe package are "
                 "recorded\n");
  }
  // The program may change its folder: the trace's path is made absolute
  // (an empty one is left for the check to name).
  std::string out = args.out.empty() ? args.out : std::filesystem::absolute(args.out).string();
  prof::check_output_path(out);  // before the program starts
  std::vector<std::string> add = capture_variables(out, inject, python_site);
  if (args.duration > 0) add.push_back(fmt::format("LOUPE_CAPTURE_DURATION={}", args.duration));
  if (args.memory) add.push_back("LOUPE_PYTHON_MEMORY=1");
  std::vector<std::string> env =
      child_environment({"CUDA_INJECTION64_PATH=", "LOUPE_TRACE=", "LOUPE_CAPTURE_DURATION=", "NVTX_INJECTION64_PATH=",
                         "PYTHONPATH=", "LOUPE_PYTHON_TRACE=", "LOUPE_PYTHON_MEMORY="},
                        add);

  // The previous trace stays until the program's capture replaces it.
  std::optional<FileVersion> before = file_version(out);
  int status = run_child(args.program, env);
  int code = exit_code_of(status);
  std::optional<FileVersion> after = file_version(out);
  if (!after || after == before) {
    fmt::print(stderr,
               "loupe: '{}' never initialized CUDA nor ran Python with the loupe package: nothing was recorded (exit "
               "code {})\n",
               args.program[0], code);
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
