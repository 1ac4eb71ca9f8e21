#include "child_process.h"

#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace loupe::cli {

namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

volatile sig_atomic_t g_child = 0;

// A signal the terminal generated (Ctrl-C, a hangup) already went to the
// whole foreground process group, the program included; passing it on
// would deliver it twice, and a second Ctrl-C cuts short the clean-up the
// first one started (Python's KeyboardInterrupt, a final checkpoint).
// What another process sent to loupe alone is passed on.
void forward(int sig, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  if (g_child > 0) ::kill(pid_t(g_child), sig);
}

}  // namespace

int run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  std::vector<std::string> argv_strings = argv, env_strings = env;
  std::vector<char*> argv_ptrs, env_ptrs;
  for (std::string& s : argv_strings) argv_ptrs.push_back(s.data());
  argv_ptrs.push_back(nullptr);
  for (std::string& s : env_strings) env_ptrs.push_back(s.data());
  env_ptrs.push_back(nullptr);

  // The signals are blocked from before the handlers are set until the
  // child's pid is known, so that none is lost in between; the child
  // starts with our original mask. Signals loupe was started with ignored
  // (nohup) stay ignored, for loupe and the program alike.
  sigset_t forwarded, original;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  sigprocmask(SIG_BLOCK, &forwarded, &original);
  struct sigaction previous[std::size(kForwarded)] = {};
  for (size_t i = 0; i < std::size(kForwarded); ++i) {
    sigaction(kForwarded[i], nullptr, &previous[i]);
    if (previous[i].sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(kForwarded[i], &sa, nullptr);
  }
  // loupe ignores SIGXFSZ for itself (main.cpp); the program gets the
  // default action, as it would without loupe.
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGXFSZ);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &original);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv_ptrs[0], nullptr, &attr, argv_ptrs.data(), env_ptrs.data());
  posix_spawnattr_destroy(&attr);
  if (rc == 0) g_child = pid;
  sigprocmask(SIG_SETMASK, &original, nullptr);
  int status = 0;
  if (rc == 0) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  g_child = 0;
  for (size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &previous[i], nullptr);
  if (rc != 0) throw std::runtime_error(fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)));
  return status;
}

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

int end_like(int status, int code) {
  if (WIFSIGNALED(status)) {
    std::fflush(stdout);
    std::fflush(stderr);
    ::signal(WTERMSIG(status), SIG_DFL);
    ::kill(::getpid(), WTERMSIG(status));
  }
  return code;
}

std::vector<std::string> child_environment(const std::vector<std::string>& drop, const std::vector<std::string>& add) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view v = *e;
    bool dropped = false;
    for (const std::string& prefix : drop) dropped |= v.starts_with(prefix);
    if (!dropped) env.emplace_back(v);
  }
  env.insert(env.end(), add.begin(), add.end());
  return env;
}

std::optional<FileVersion> file_version(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileVersion{st.st_dev, st.st_ino, int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                     int64_t(st.st_size)};
}

}  // namespace loupe::cli
