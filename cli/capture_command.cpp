// loupe capture [-o trace.db] [--duration S] -- PROGRAM ARGS...
// Records an unmodified CUDA program: CUDA loads libloupe_inject.so into it
// (CUDA_INJECTION64_PATH), which records CUPTI's activity and the program's
// NVTX ranges; loupe forwards the program's exit code and signals, then
// shows what was recorded.
#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "commands.h"
#include "loupe/prof/trace_query.h"

extern char** environ;

namespace loupe::cli {

namespace {

struct CaptureArgs {
  std::string out = "trace.db";
  double duration = 0;
  std::vector<std::string> program;
};

pid_t g_child = 0;

void forward_signal(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
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
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string v = *e;
    if (v.rfind("CUDA_INJECTION64_PATH=", 0) == 0 || v.rfind("LOUPE_TRACE=", 0) == 0 ||
        v.rfind("LOUPE_CAPTURE_DURATION=", 0) == 0 || v.rfind("NVTX_INJECTION64_PATH=", 0) == 0) {
      continue;
    }
    env.push_back(v);
  }
  env.push_back("CUDA_INJECTION64_PATH=" + inject);
  // NVTX ranges (PyTorch's record_function, XLA's ranges) reach CUPTI
  // when NVTX is injected with CUPTI itself.
  if (std::string cupti = find_cupti_library(); !cupti.empty()) {
    env.push_back("NVTX_INJECTION64_PATH=" + cupti);
  } else {
    std::fprintf(stderr, "loupe: CUPTI's library was not found: NVTX ranges will not be recorded\n");
  }
  env.push_back("LOUPE_TRACE=" + out);
  if (args.duration > 0) env.push_back(fmt::format("LOUPE_CAPTURE_DURATION={}", args.duration));
  std::vector<char*> envp, argv;
  for (auto& v : env) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::vector<std::string> program = args.program;
  for (auto& a : program) argv.push_back(a.data());
  argv.push_back(nullptr);

  ::unlink(out.c_str());
  struct sigaction sa{};
  sa.sa_handler = forward_signal;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);
  int rc = posix_spawnp(&g_child, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (rc != 0) throw std::runtime_error(fmt::format("cannot run '{}': {}", program[0], std::strerror(rc)));
  int status = 0;
  while (::waitpid(g_child, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  struct stat st{};
  if (::stat(out.c_str(), &st) != 0) {
    fmt::print(stderr, "loupe: '{}' never initialized CUDA: nothing was recorded (exit code {})\n", program[0], code);
  } else {
    std::fflush(stdout);
    try {
      prof::TraceSummary s = prof::summarize_trace(out);
      uint64_t total = 0;
      for (const auto& c : s.counts) total += c.rows;
      fmt::print(stderr, "loupe: recorded {} events of '{}' into {} (exit code {}); see `loupe info {}`\n", total,
                 program[0], out, code, out);
    } catch (const std::exception& e) {
      fmt::print(stderr, "loupe: {}\n", e.what());
    }
  }
  if (WIFSIGNALED(status)) {
    // Die the way the program died, so that a shell sees the same thing.
    ::signal(WTERMSIG(status), SIG_DFL);
    ::kill(::getpid(), WTERMSIG(status));
  }
  return code;
}

}  // namespace

Command add_capture_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("capture", "Record an unmodified CUDA program (PyTorch, JAX, CUDA C++) with CUPTI");
  auto args = std::make_shared<CaptureArgs>();
  cmd->add_option("-o,--out", args->out, "trace file to write (default trace.db)");
  cmd->add_option("--duration", args->duration, "stop recording after this many seconds")->check(CLI::PositiveNumber);
  cmd->add_option("PROGRAM", args->program, "the program and its arguments, after --")->required();
  return {cmd, [args] { return run_capture(*args); }};
}

}  // namespace loupe::cli
