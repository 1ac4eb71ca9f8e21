// inject_probe LIBRARY: dlopen the injection library and call
// InitializeInjection, as cuInit does, then exit normally.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 3;
  }
  auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
  if (init == nullptr) return 4;
  return init() == 1 ? 0 : 5;
}
