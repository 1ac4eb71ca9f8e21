// Signals: `loupe record` and `loupe capture` pass SIGINT, SIGTERM and
// SIGHUP on to the program they run, wait for it, and end the way it ended.
#include <fstream>

#include "hostile_util.h"

namespace loupe::hostile {
namespace {

bool alive(pid_t pid) { return kill(pid, 0) == 0; }

// Defect 15: `loupe record` died of SIGTERM and left its program running,
// reparented, for as long as the program liked.
TEST(Signals, RecordForwardsTerminationToItsProgram) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    loupe::test::TempDir dir;
    std::string pid_file = dir.file("pid");
    // The program: a shell that says who it is, then waits a long time.
    std::string script = "echo $$ > '" + pid_file + "'; exec sleep 60";
    std::vector<std::string> args = {LOUPE_BIN, "record", "-o", dir.file("t.db"), "--", "sh", "-c", script};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t loupe_pid = fork();
    if (loupe_pid == 0) {
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      execv(argv[0], argv.data());
      _exit(127);
    }
    pid_t program = 0;
    for (int i = 0; i < 500 && program == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      std::ifstream(pid_file) >> program;
    }
    ASSERT_GT(program, 0) << "the program did not start";
    ASSERT_EQ(kill(loupe_pid, sig), 0);
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (waitpid(loupe_pid, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    bool program_alive = false;
    for (int i = 0; i < 200 && (program_alive = alive(program)); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (program_alive) kill(program, SIGKILL);
    EXPECT_FALSE(program_alive) << "signal " << sig << " was not passed on; the program ran on";
    // loupe ends as its program did: killed by the same signal.
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "signal " << sig << ", status " << status;
  }
}

}  // namespace
}  // namespace loupe::hostile
