// Runs the CUDA device's generated kernels on the CPU, to check what they
// compute on a machine without a GPU. The sources are compiled by the host
// C++ compiler, after a header that gives CUDA's built-ins host meanings
// (threadIdx..., __shared__ as a block's static storage, __syncthreads,
// atomicAdd, the bit casts), into a shared library that is loaded here.
// A launch runs the grid one block at a time and each block's threads as
// coroutines (ucontext), switching at __syncthreads: a barrier really waits
// for every thread of the block, so shared-memory reductions and tiles
// behave as on a GPU. What it cannot show: races between threads that a
// GPU interleaves at will, memory coalescing, anything about speed.
#pragma once

#include <dlfcn.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef LOUPE_HOST_CXX
#define LOUPE_HOST_CXX "c++"
#endif

namespace loupe::test::emu {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// What the compiled library shares with the launcher.
struct Context {
  Dim3* thread_idx;
  Dim3* block_idx;
  Dim3* block_dim;
  Dim3* grid_dim;
  void (**barrier)();
};

inline const char* kHeader = R"(
#include <math.h>
#include <string.h>
struct EmuDim3 { unsigned x, y, z; };
extern "C" {
EmuDim3 threadIdx, blockIdx, blockDim, gridDim;
void (*emu_barrier)();
}
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
#define __restrict__ __restrict
inline void __syncthreads() { emu_barrier(); }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
inline double __longlong_as_double(long long u) { double f; memcpy(&f, &u, 8); return f; }
inline float atomicAdd(float* p, float v) { float o = *p; *p = o + v; return o; }
inline unsigned atomicAdd(unsigned* p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { unsigned long long o = *p; *p = o + v; return o; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
)";

// The macros the attention sources define, undone between sources.
inline const char* kUndef =
    "#undef BATCH\n#undef SQ\n#undef SK\n#undef D\n#undef DV\n#undef CAUSAL\n#undef TILE\n"
    "#undef ROWS\n#undef DK_OFF\n#undef DV_OFF\n#undef TILE_KV\n";

// Compiles `text` (after kHeader) into a shared library under `dir` and
// loads it. With `cache`, a library built from the same text before (by
// any process) is loaded instead.
inline void* compile_and_load(const std::string& text, const std::string& dir, bool cache) {
  std::string full = std::string(kHeader) + text;
  std::string base = dir + "/emu_" + std::to_string(std::hash<std::string>{}(full)) + "_" + std::to_string(full.size());
  std::string so = base + ".so";
  if (!cache || ::access(so.c_str(), R_OK) != 0) {
    // Built under a name of its own, then renamed: processes building the
    // same kernel at once each get a whole file.
    std::string tmp = base + "." + std::to_string(::getpid());
    std::ofstream(tmp + ".cpp") << full;
    std::string cmd = std::string(LOUPE_HOST_CXX) + " -std=c++17 -O1 -w -shared -fPIC -o " + tmp + ".so " + tmp +
                      ".cpp 2> " + tmp + ".log";
    if (std::system(cmd.c_str()) != 0) {
      std::ifstream log(tmp + ".log");
      std::string l((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
      throw std::runtime_error("the host compiler rejected the emulated kernels:\n" + l.substr(0, 4000));
    }
    std::rename((tmp + ".so").c_str(), so.c_str());
    std::remove((tmp + ".cpp").c_str());
    std::remove((tmp + ".log").c_str());
  }
  void* handle = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw std::runtime_error(::dlerror());
  return handle;
}

// Several sources in one library: each in a namespace of its own, its
// entries reachable as emu_entry_<source>_<entry>.
class Module {
 public:
  Module(const std::vector<std::string>& sources, const std::vector<std::vector<std::string>>& entries,
         const std::string& dir, bool cache = false) {
    std::string text;
    for (size_t i = 0; i < sources.size(); ++i) {
      std::string src = sources[i];
      for (size_t at; (at = src.find("extern \"C\" ")) != std::string::npos;) src.erase(at, 11);
      text += "namespace k" + std::to_string(i) + " {\n" + src + "\n}\n" + kUndef;
    }
    for (size_t i = 0; i < sources.size(); ++i)
      for (const std::string& e : entries[i])
        text += "extern \"C\" void* emu_entry_" + std::to_string(i) + "_" + e + " = (void*)&k" + std::to_string(i) +
                "::" + e + ";\n";
    handle_ = compile_and_load(text, dir, cache);
    ctx_.thread_idx = sym<Dim3>("threadIdx");
    ctx_.block_idx = sym<Dim3>("blockIdx");
    ctx_.block_dim = sym<Dim3>("blockDim");
    ctx_.grid_dim = sym<Dim3>("gridDim");
    ctx_.barrier = sym<void (*)()>("emu_barrier");
  }
  ~Module() {
    if (handle_) ::dlclose(handle_);
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  void* entry(size_t source, const std::string& name) const {
    return *sym<void*>(("emu_entry_" + std::to_string(source) + "_" + name).c_str());
  }
  const Context& context() const { return ctx_; }

 private:
  template <typename T>
  T* sym(const char* name) const {
    void* p = ::dlsym(handle_, name);
    if (!p) throw std::runtime_error(std::string("emulated module lacks ") + name);
    return static_cast<T*>(p);
  }
  void* handle_ = nullptr;
  Context ctx_{};
};

// ---- launching: a block's threads as coroutines -------------------------------

struct Launch {
  const Context* ctx;
  void* fn;
  std::vector<void*> args;
};

namespace detail {

struct Thread {
  ucontext_t uc;
  std::unique_ptr<char[]> stack;
  bool done = false;
  bool at_barrier = false;
  Dim3 idx;
};

inline ucontext_t g_scheduler;
inline Thread* g_current = nullptr;
inline const Launch* g_launch = nullptr;

inline void barrier() {
  g_current->at_barrier = true;
  swapcontext(&g_current->uc, &g_scheduler);
}

template <size_t... I>
void call(void* fn, const std::vector<void*>& a, std::index_sequence<I...>) {
  using F = void (*)(decltype((void)I, static_cast<void*>(nullptr))...);
  reinterpret_cast<F>(fn)(a[I]...);
}

// Calls fn with a's values when it has N + 1 of them, for one N of the pack.
template <size_t... N>
bool call_with_count(void* fn, const std::vector<void*>& a, std::index_sequence<N...>) {
  return ((a.size() == N + 1 ? (call(fn, a, std::make_index_sequence<N + 1>{}), true) : false) || ...);
}

inline void call_any(void* fn, const std::vector<void*>& a) {
  if (!call_with_count(fn, a, std::make_index_sequence<24>{}))
    throw std::runtime_error("emulator: too many kernel parameters");
}

inline void trampoline() {
  *g_launch->ctx->thread_idx = g_current->idx;
  call_any(g_launch->fn, g_launch->args);
  g_current->done = true;
  // Returning resumes uc_link: the scheduler.
}

}  // namespace detail

inline void launch(const Launch& l, Dim3 grid, Dim3 block) {
  constexpr size_t kStack = 256 << 10;
  const Context& c = *l.ctx;
  *c.grid_dim = grid;
  *c.block_dim = block;
  *c.barrier = detail::barrier;
  detail::g_launch = &l;
  const unsigned n = block.x * block.y * block.z;
  // Stacks stay allocated from launch to launch (untouched pages cost
  // nothing).
  static std::vector<detail::Thread> threads;
  if (threads.size() < n) threads.resize(n);
  for (unsigned i = 0; i < n; ++i)
    if (!threads[i].stack) threads[i].stack.reset(new char[kStack]);
  for (unsigned by = 0; by < grid.y; ++by) {
    for (unsigned bx = 0; bx < grid.x; ++bx) {
      *c.block_idx = Dim3{bx, by, 0};
      for (unsigned i = 0; i < n; ++i) {
        detail::Thread& t = threads[i];
        t.done = t.at_barrier = false;
        t.idx = Dim3{i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
        getcontext(&t.uc);
        t.uc.uc_stack.ss_sp = t.stack.get();
        t.uc.uc_stack.ss_size = kStack;
        t.uc.uc_link = &detail::g_scheduler;
        makecontext(&t.uc, detail::trampoline, 0);
      }
      // Round after round: run every thread to its next barrier (or its
      // end); a round ends when all are waiting or done.
      for (bool running = true; running;) {
        running = false;
        for (unsigned i = 0; i < n; ++i) {
          detail::Thread& t = threads[i];
          if (t.done) continue;
          t.at_barrier = false;
          detail::g_current = &t;
          *c.thread_idx = t.idx;
          swapcontext(&detail::g_scheduler, &t.uc);
          running |= !t.done;
        }
      }
    }
  }
}

}  // namespace loupe::test::emu
