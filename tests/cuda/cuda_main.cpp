// main() of the runtime's numerical tests run on the CUDA device (label
// gpu): the CPU device's test files, with LOUPE_DEVICE=cuda so that every
// array they make lands on cuda:0. Without a GPU every test is skipped,
// with the reason.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "loupe/rt/runtime.h"

namespace {

class RequireGpu : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string why;
    if (loupe::rt::cuda_device_count(&why) == 0) GTEST_SKIP() << "no usable GPU: " << why;
  }
};

}  // namespace

int main(int argc, char** argv) {
  // Before anything asks for the default device (it is decided once).
  ::setenv("LOUPE_DEVICE", "cuda", 1);
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new RequireGpu);
  return RUN_ALL_TESTS();
}
