#include "import/kineto_vocabulary.h"

namespace loupe::prof::import {

KinetoCat kineto_category(std::string_view c) {
  if (c == "cpu_op" || c == "operator" || c == "Operator") return KinetoCat::cpu_op;
  if (c == "user_annotation" || c == "User annotation") return KinetoCat::user_annotation;
  if (c == "python_function" || c == "Python function") return KinetoCat::python_function;
  // cuda_runtime, cuda_driver and their cousins (xpu_runtime,
  // privateuse1_runtime, mtia_runtime); ROCm builds keep "cuda_runtime".
  if (c == "Runtime" || c == "Driver" || c.ends_with("_runtime") || c.ends_with("_driver")) return KinetoCat::runtime;
  if (c == "kernel" || c == "Kernel") return KinetoCat::kernel;
  if (c == "gpu_memcpy" || c == "Memcpy") return KinetoCat::memcpy;
  if (c == "gpu_memset" || c == "Memset") return KinetoCat::memset;
  if (c == "cuda_sync") return KinetoCat::sync;
  if (c == "gpu_user_annotation") return KinetoCat::gpu_user_annotation;
  if (c == "ac2g") return KinetoCat::ac2g;
  if (c == "overhead") return KinetoCat::overhead;
  return KinetoCat::other;
}

bool is_kineto_marker(std::string_view c) {
  return c == "cpu_op" || c == "cuda_runtime" || c == "cuda_driver" || c == "kernel" || c == "gpu_memcpy" ||
         c == "gpu_memset" || c == "user_annotation" || c == "python_function" || c == "cpu_instant_event" ||
         c == "ac2g" || c == "cuda_sync";
}

}  // namespace loupe::prof::import
