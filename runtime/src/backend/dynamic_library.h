// A shared library opened at run time (dlopen). The CUDA device's libraries
// are needed only once it exists: cuBLAS and NVRTC take over 100 ms to
// load, which every process linking the runtime would otherwise pay at
// start-up, GPU or not. The CPU device's OpenBLAS must be told which
// kernels to use before it loads (backend/cpu/blas.h).
#pragma once

#include <dlfcn.h>

#include <string>
#include <vector>

#include "loupe/rt/errors.h"

namespace loupe::rt::backend {

class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  // Never closed: the library's code may run until the process exits.

  // Opens the first of `names` that loads; false, with the loader's
  // messages in `why`, when none does.
  bool open(const std::vector<std::string>& names, std::string* why) {
    std::string errors;
    for (const std::string& n : names) {
      handle_ = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle_ != nullptr) {
        name_ = n;
        return true;
      }
      const char* e = ::dlerror();
      errors += (errors.empty() ? "" : "; ") + std::string(e ? e : n + ": cannot be loaded");
    }
    if (why) *why = errors;
    return false;
  }

  template <typename F>
  F symbol(const char* name) const {
    void* p = ::dlsym(handle_, name);
    if (p == nullptr) throw RuntimeError(name_ + " has no symbol " + name + " (an unexpected version?)");
    return reinterpret_cast<F>(p);
  }

  const std::string& name() const { return name_; }
  // dlopen's handle, for a library that looks its own symbols up.
  void* handle() const { return handle_; }

 private:
  void* handle_ = nullptr;
  std::string name_;
};

}  // namespace loupe::rt::backend
