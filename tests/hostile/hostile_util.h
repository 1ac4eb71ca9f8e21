// What the hostile-input tests share: running a command that may hang or
// hit a resource limit, and making damaged traces from a valid one.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "profiler/test_files.h"

namespace loupe::hostile {

struct RunOptions {
  double timeout_s = 30;      // killed (SIGKILL) after this long: a hang
  long file_size_limit = -1;  // RLIMIT_FSIZE in bytes, or -1 for none
  bool stdout_to_null = false;
};

struct RunResult {
  int exit_code = -1;  // 128 + signal if killed
  bool timed_out = false;
  std::string out, err;
  long max_rss_kb = 0;  // the largest resident set the process reached
};

// Runs `args` with stdout and stderr on pipes (which no file size limit
// touches), killing it if it outlives the timeout.
inline RunResult run(const std::vector<std::string>& args, const RunOptions& o = {}) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return {};
  // Everything the child needs is made before fork: it only calls
  // async-signal-safe functions.
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    if (o.stdout_to_null) {
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
    } else {
      dup2(out_pipe[1], 1);
    }
    dup2(err_pipe[1], 2);
    if (o.file_size_limit >= 0) {
      rlimit lim{rlim_t(o.file_size_limit), rlim_t(o.file_size_limit)};
      setrlimit(RLIMIT_FSIZE, &lim);
    }
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  RunResult r;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, int(std::min<long long>(left.count(), 100))) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[65536];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, size_t(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  // The pipes closed; the process may still be exiting, or may have
  // closed them and gone on (a hang that prints nothing more).
  rusage usage{};
  while (!r.timed_out) {
    pid_t w = wait4(pid, &status, WNOHANG, &usage);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (r.timed_out) wait4(pid, &status, 0, &usage);
  r.max_rss_kb = usage.ru_maxrss;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

inline RunResult loupe(std::vector<std::string> args, const RunOptions& o = {}) {
  args.insert(args.begin(), LOUPE_BIN);
  return run(args, o);
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

inline bool is_char_device(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

// A character device node like /dev/null (1, 3), made inside the test's own
// folder; only root can. Returns false (and the test skips) otherwise.
inline bool make_null_device(const std::string& path) {
  return geteuid() == 0 && mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;
}

// A small valid trace: what `loupe synth` writes.
inline std::string synth_trace(const loupe::test::TempDir& dir, const std::string& name = "t.db", int events = 5000) {
  std::string path = dir.file(name);
  RunResult r = loupe({"synth", "-o", path, "--events", std::to_string(events), "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

// Runs SQL on a trace file as an attacker would: read-write, with the
// schema writable and without SQLite's defensive settings.
inline void tamper(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 0, nullptr);
  char* err = nullptr;
  int rc = sqlite3_exec(db, ("PRAGMA writable_schema=ON;" + sql).c_str(), nullptr, nullptr, &err);
  std::string message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message << "\n" << sql;
}

// One integer from a query on a trace.
inline int64_t query_int(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* s = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
    v = sqlite3_column_int64(s, 0);
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

// The files in a folder, by name.
inline std::vector<std::string> files_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace loupe::hostile
