// An NVRTC that compiles nothing, for the fake CUDA runtime (see
// fake_cudart.cpp): the "CUBIN" it returns is the source itself, which the
// fake runtime compiles for the CPU when the library is loaded.
#include <nvrtc.h>

#include <cstring>
#include <string>

namespace {
struct Program {
  std::string source;
};
}  // namespace

extern "C" {

const char* nvrtcGetErrorString(nvrtcResult r) { return r == NVRTC_SUCCESS ? "NVRTC_SUCCESS" : "fake NVRTC error"; }

nvrtcResult nvrtcVersion(int* major, int* minor) {
  *major = 13;
  *minor = 0;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetNumSupportedArchs(int* n) {
  *n = 2;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetSupportedArchs(int* archs) {
  archs[0] = 80;
  archs[1] = 90;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char*, int, const char* const*,
                               const char* const*) {
  *prog = reinterpret_cast<nvrtcProgram>(new Program{src});
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  delete reinterpret_cast<Program*>(*prog);
  *prog = nullptr;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram, int, const char* const*) { return NVRTC_SUCCESS; }

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram, size_t* size) {
  *size = 1;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram, char* log) {
  *log = 0;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* size) {
  *size = reinterpret_cast<Program*>(prog)->source.size() + 1;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* out) {
  const std::string& s = reinterpret_cast<Program*>(prog)->source;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t* size) { return nvrtcGetCUBINSize(prog, size); }
nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char* out) { return nvrtcGetCUBIN(prog, out); }

}  // extern "C"
